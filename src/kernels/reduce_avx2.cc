// The reduction loops built for AVX2 + FMA + F16C; the flags come from
// src/kernels/CMakeLists.txt. Half uses F16C's conversions, 8 lanes at a time.
#include <immintrin.h>

#define BRAID_ISA_NAMESPACE isa_avx2
#include "kernels/reduce_loops.h"
#include "kernels/half_simd.h"

namespace braid::kernels::isa_avx2 {
namespace {

struct F16c8 {
  using F = float __attribute__((vector_size(32)));
  static constexpr size_t kWidth = 8;
  static BRAID_INLINE F load(const Half* p) {
    return F(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static BRAID_INLINE void store(Half* p, F v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph(__m256(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

}  // namespace

const KernelTable& table() {
  static const KernelTable kTable = withHalfSimd<F16c8>(makeTable());
  return kTable;
}

}  // namespace braid::kernels::isa_avx2
