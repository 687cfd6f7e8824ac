// Storage types for the 16- and 8-bit floating formats NCCL reduces, and their exact conversions
// to and from float. Every function is branch-free integer and float arithmetic so that the host
// loops auto-vectorise, and is BRAID_HOST_DEVICE so CUDA kernels reuse the same definitions.
//
// Conversions from float round to nearest, ties to even, keep denormals, and keep NaN a NaN
// (sign and the top payload bits kept, quiet bit set: what F16C's vcvtps2ph produces, so the
// scalar and the hardware paths agree bit for bit). Overflow: half and bfloat16 go to Inf; the
// fp8 formats saturate to their largest finite value, Inf included, as CUDA's __nv_fp8
// constructors do (__NV_SATFINITE).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define BRAID_HOST_DEVICE __host__ __device__
#define BRAID_INLINE __forceinline__
#else
#define BRAID_HOST_DEVICE
// Forced inlining matters for dispatch: the same inline functions are compiled into the
// generic, AVX2 and AVX-512 translation units, and an out-of-line copy picked by the linker
// from the AVX-512 one would run AVX-512 code on a machine without it.
#define BRAID_INLINE inline __attribute__((always_inline))
#endif

namespace braid::kernels {

BRAID_HOST_DEVICE BRAID_INLINE uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

BRAID_HOST_DEVICE BRAID_INLINE float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
struct Fp8E4M3 {
  uint8_t bits;
};
struct Fp8E5M2 {
  uint8_t bits;
};
static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2 && sizeof(Fp8E4M3) == 1 &&
              sizeof(Fp8E5M2) == 1);

namespace detail {

// c ? x : y as masks. Where an operand comes from float arithmetic, GCC (under the default
// -ftrapping-math) will not compute it unconditionally for a ?:, emits a branch instead, and
// the loop no longer vectorises; with masks both sides are plain values.
BRAID_HOST_DEVICE BRAID_INLINE uint32_t pick(bool c, uint32_t x, uint32_t y) {
  uint32_t m = 0u - uint32_t(c);
  return (x & m) | (y & ~m);
}

// Rounds |x| (float bits without sign) to a format of fewer bits, ignoring NaN (the caller
// handles it). Normal results: re-bias the exponent, add the round-to-even increment, shift;
// a carry out of the mantissa bumps the exponent, which is the right encoding. Denormal
// results: adding a power of two whose ulp equals the format's denormal ulp makes the FPU
// round at exactly that place; the bits above it are then the denormal mantissa (or
// the smallest normal when it rounds up, again the right encoding). That sum is a normal
// float, so FTZ/DAZ set by an application cannot change it; the rounding mode must be the
// default, to nearest.
template <int kManBits, int kBias>
BRAID_HOST_DEVICE BRAID_INLINE uint32_t roundFromFloat(uint32_t absBits) {
  constexpr int kShift = 23 - kManBits;
  constexpr uint32_t kMinNormal = uint32_t(127 - kBias + 1) << 23;
  constexpr uint32_t kRebias = uint32_t(127 - kBias) << 23;
  // 2^(minimum exponent - kManBits) is the denormal ulp; a float of exponent e has ulp 2^(e-23).
  constexpr uint32_t kDenormMagic = uint32_t(127 + (1 - kBias - kManBits) + 23) << 23;

  uint32_t normal = absBits - kRebias;
  normal = (normal + ((1u << (kShift - 1)) - 1) + ((normal >> kShift) & 1)) >> kShift;
  uint32_t denorm = floatBits(bitsFloat(absBits) + bitsFloat(kDenormMagic)) - kDenormMagic;
  return pick(absBits >= kMinNormal, normal, denorm);
}

}  // namespace detail

// ---- half (IEEE binary16) ----

BRAID_HOST_DEVICE BRAID_INLINE float halfToFloat(Half h) {
  uint32_t sign = uint32_t(h.bits & 0x8000) << 16;
  uint32_t em = h.bits & 0x7fff;
  uint32_t normal = (em << 13) + (uint32_t(127 - 15) << 23);
  // Denormals: the integer mantissa times 2^-24 is exact in float.
  uint32_t denorm = floatBits(float(int32_t(em)) * 0x1p-24f);
  uint32_t special = 0x7f800000u | (em & 0x3ff) << 13 | (em > 0x7c00 ? 0x400000u : 0u);
  uint32_t mag = detail::pick(em >= 0x7c00, special, detail::pick(em >= 0x400, normal, denorm));
  return bitsFloat(sign | mag);
}

BRAID_HOST_DEVICE BRAID_INLINE Half floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t a = x & 0x7fffffff;
  uint32_t nan = 0x7e00 | ((a >> 13) & 0x3ff);
  // 65520 = 0x477ff000 is halfway between 65504 (odd mantissa) and 2^16: it and all above round
  // to Inf. Clamping the operand keeps the rounding arithmetic from overflowing.
  uint32_t rounded = detail::roundFromFloat<10, 15>(a < 0x477ff000 ? a : 0x477ff000);
  uint32_t mag = detail::pick(a > 0x7f800000, nan, detail::pick(a >= 0x477ff000, 0x7c00u, rounded));
  return Half{uint16_t(sign | mag)};
}

// ---- bfloat16 (the top half of a float) ----

BRAID_HOST_DEVICE BRAID_INLINE float bf16ToFloat(BFloat16 h) {
  return bitsFloat(uint32_t(h.bits) << 16);
}

BRAID_HOST_DEVICE BRAID_INLINE BFloat16 floatToBf16(float f) {
  uint32_t x = floatBits(f);
  // Rounding carries into the exponent, and from the largest finite value into Inf, correctly.
  uint32_t rounded = (x + 0x7fff + ((x >> 16) & 1)) >> 16;
  uint32_t nan = (x >> 16) | 0x40;
  return BFloat16{uint16_t((x & 0x7fffffff) > 0x7f800000 ? nan : rounded)};
}

// ---- fp8 e4m3 (OCP "FN": no Inf, S.1111.111 is NaN, largest finite 448) ----

BRAID_HOST_DEVICE BRAID_INLINE float e4m3ToFloat(Fp8E4M3 v) {
  uint32_t sign = uint32_t(v.bits & 0x80) << 24;
  uint32_t em = v.bits & 0x7f;
  uint32_t normal = (em << 20) + (uint32_t(127 - 7) << 23);
  uint32_t denorm = floatBits(float(int32_t(em)) * 0x1p-9f);
  uint32_t mag = detail::pick(em == 0x7f, 0x7fc00000u, detail::pick(em >= 0x08, normal, denorm));
  return bitsFloat(sign | mag);
}

BRAID_HOST_DEVICE BRAID_INLINE Fp8E4M3 floatToE4M3(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 24) & 0x80;
  uint32_t a = x & 0x7fffffff;
  // Anything at or above 464 (halfway from 448 to 512) saturates; clamp first so the rounding
  // arithmetic stays in range.
  constexpr uint32_t kSaturate = 0x43e80000;  // 464.0f
  uint32_t rounded = detail::roundFromFloat<3, 7>(a < kSaturate ? a : kSaturate);
  uint32_t mag = detail::pick(a > 0x7f800000, 0x7fu, detail::pick(a >= kSaturate, 0x7eu, rounded));
  return Fp8E4M3{uint8_t(sign | mag)};
}

// ---- fp8 e5m2 (IEEE-like: the top byte of a half; has Inf and NaN) ----

BRAID_HOST_DEVICE BRAID_INLINE float e5m2ToFloat(Fp8E5M2 v) {
  return halfToFloat(Half{uint16_t(v.bits << 8)});
}

BRAID_HOST_DEVICE BRAID_INLINE Fp8E5M2 floatToE5M2(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 24) & 0x80;
  uint32_t a = x & 0x7fffffff;
  // 61440 = 57344 + 4096, halfway past the largest finite value, and everything above saturates.
  constexpr uint32_t kSaturate = 0x47700000;
  uint32_t rounded = detail::roundFromFloat<2, 15>(a < kSaturate ? a : kSaturate);
  uint32_t nan = 0x7e | ((a >> 21) & 1);
  uint32_t mag = detail::pick(a > 0x7f800000, nan, detail::pick(a >= kSaturate, 0x7bu, rounded));
  return Fp8E5M2{uint8_t(sign | mag)};
}

}  // namespace braid::kernels
