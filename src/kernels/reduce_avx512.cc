// The reduction loops built for AVX-512 (F, BW, VL, DQ) with 512-bit vectors; the flags come
// from src/kernels/CMakeLists.txt. Half and bfloat16 run over explicit conversions (AVX-512F's
// for half, word unpacks and a pack for bfloat16).
#include <immintrin.h>

#define BRAID_ISA_NAMESPACE isa_avx512
#include "kernels/reduce_loops.h"
#include "kernels/simd_loops.h"

// GCC 12 warns that the placeholder operand inside _mm512_cvtph_ps/_mm512_cvtps_ph
// (_mm512_undefined_*) may be used uninitialized: a false positive in its own headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace braid::kernels::isa_avx512 {
namespace {

struct Lanes16 {
  using F = float __attribute__((vector_size(64)));
  using U = uint32_t __attribute__((vector_size(64)));
  using I = int32_t __attribute__((vector_size(64)));
};

struct Half16 : Lanes16 {
  using Elem = Half;
  static constexpr int kType = ncclFloat16;
  static constexpr size_t kWidth = 16;
  static BRAID_INLINE F load(const Half* p) {
    return F(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
  }
  template <typename Op>
  static BRAID_INLINE void block(Half* dst, const Half* a, const Half* b, Op op) {
    F r = op(load(a), load(b));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                        _mm512_cvtps_ph(__m512(r), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

// 32 elements as two float vectors, widened by interleaving zero words below them and narrowed
// by one pack; unpacks and pack work within 128-bit lanes, so the order comes back unchanged.
// Not vcvtneps2bf16 (AVX512_BF16): it flushes denormals, which floatToBf16 keeps.
struct Bf16x32 : Lanes16 {
  using Elem = BFloat16;
  static constexpr int kType = ncclBfloat16;
  static constexpr size_t kWidth = 32;
  template <typename Op>
  static BRAID_INLINE void block(BFloat16* dst, const BFloat16* a, const BFloat16* b, Op op) {
    const __m512i zero = _mm512_setzero_si512();
    __m512i va = _mm512_loadu_si512(a);
    __m512i vb = _mm512_loadu_si512(b);
    F lo = op(F(_mm512_unpacklo_epi16(zero, va)), F(_mm512_unpacklo_epi16(zero, vb)));
    F hi = op(F(_mm512_unpackhi_epi16(zero, va)), F(_mm512_unpackhi_epi16(zero, vb)));
    // Lanes hold values below 2^16, so the saturating pack is exact.
    __m512i packed =
        _mm512_packus_epi32(__m512i(bf16LanesOf<Lanes16>(lo)), __m512i(bf16LanesOf<Lanes16>(hi)));
    _mm512_storeu_si512(dst, packed);
  }
};

}  // namespace

const KernelTable& table() {
  static const KernelTable kTable = withSimd<Bf16x32>(withSimd<Half16>(makeTable()));
  return kTable;
}

}  // namespace braid::kernels::isa_avx512
