// The reduction loops built for AVX-512 (F, BW, VL, DQ) with 512-bit vectors; the flags come
// from src/kernels/CMakeLists.txt. Half uses AVX-512F's conversions, 16 lanes at a time.
#include <immintrin.h>

#define BRAID_ISA_NAMESPACE isa_avx512
#include "kernels/reduce_loops.h"
#include "kernels/half_simd.h"

// GCC 12 warns that the placeholder operand inside _mm512_cvtph_ps/_mm512_cvtps_ph
// (_mm512_undefined_*) may be used uninitialized: a false positive in its own headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace braid::kernels::isa_avx512 {
namespace {

struct F16c16 {
  using F = float __attribute__((vector_size(64)));
  static constexpr size_t kWidth = 16;
  static BRAID_INLINE F load(const Half* p) {
    return F(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
  }
  static BRAID_INLINE void store(Half* p, F v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(__m512(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

}  // namespace

const KernelTable& table() {
  static const KernelTable kTable = withHalfSimd<F16c16>(makeTable());
  return kTable;
}

}  // namespace braid::kernels::isa_avx512
