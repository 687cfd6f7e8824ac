// The reduction loops built for AVX2 + FMA + F16C; the flags come from
// src/kernels/CMakeLists.txt. Half and bfloat16 run over explicit conversions (F16C for half,
// word unpacks and a pack for bfloat16).
#include <immintrin.h>

#define BRAID_ISA_NAMESPACE isa_avx2
#include "kernels/reduce_loops.h"
#include "kernels/simd_loops.h"

namespace braid::kernels::isa_avx2 {
namespace {

struct Lanes8 {
  using F = float __attribute__((vector_size(32)));
  using U = uint32_t __attribute__((vector_size(32)));
  using I = int32_t __attribute__((vector_size(32)));
};

struct Half8 : Lanes8 {
  using Elem = Half;
  static constexpr int kType = ncclFloat16;
  static constexpr size_t kWidth = 8;
  static BRAID_INLINE F load(const Half* p) {
    return F(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  template <typename Op>
  static BRAID_INLINE void block(Half* dst, const Half* a, const Half* b, Op op) {
    F r = op(load(a), load(b));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                     _mm256_cvtps_ph(__m256(r), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

// 16 elements as two float vectors. Interleaving zero words below each element widens it to
// its float (bf16 is the top half) with no shift; the unpacks and the pack all work within
// 128-bit halves, so packing the low and high results restores the original order.
struct Bf16x16 : Lanes8 {
  using Elem = BFloat16;
  static constexpr int kType = ncclBfloat16;
  static constexpr size_t kWidth = 16;
  template <typename Op>
  static BRAID_INLINE void block(BFloat16* dst, const BFloat16* a, const BFloat16* b, Op op) {
    const __m256i zero = _mm256_setzero_si256();
    __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    F lo = op(F(_mm256_unpacklo_epi16(zero, va)), F(_mm256_unpacklo_epi16(zero, vb)));
    F hi = op(F(_mm256_unpackhi_epi16(zero, va)), F(_mm256_unpackhi_epi16(zero, vb)));
    // Lanes hold values below 2^16, so the saturating pack is exact.
    __m256i packed =
        _mm256_packus_epi32(__m256i(bf16LanesOf<Lanes8>(lo)), __m256i(bf16LanesOf<Lanes8>(hi)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), packed);
  }
};

}  // namespace

const KernelTable& table() {
  static const KernelTable kTable = withSimd<Bf16x16>(withSimd<Half8>(makeTable()));
  return kTable;
}

}  // namespace braid::kernels::isa_avx2
