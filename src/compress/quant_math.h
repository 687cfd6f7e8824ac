// The arithmetic of INT8 block quantisation that every ISA's loop, the scalar paths and the CUDA
// codecs share: the per-block scale, the rounding of one element, the codes of blocks holding
// NaN or Inf, the counter-based random stream of stochastic rounding, and top-k's ranking.
// Always inlined (see kernels/types.h for why that matters to dispatch), and BRAID_HOST_DEVICE
// so the device computes with these very definitions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "compress/codec_kernels.h"
#include "kernels/types.h"

namespace braid::compress::quant {

using kernels::bitsFloat;
using kernels::floatBits;

// Finite codes use [-127, 127] so that the scale is symmetric. A block holding NaN or Inf
// (a "special" block) quantises its finite values to [-126, 126] and keeps three codes:
constexpr int8_t kCodePosInf = 127;
constexpr int8_t kCodeNegInf = -127;
constexpr int8_t kCodeNaN = -128;
constexpr float kLevels = 127.0f;
constexpr float kSpecialLevels = 126.0f;

// Adding and subtracting 1.5 * 2^23 rounds a float below 2^22 in magnitude to an integer,
// to nearest even, in the default rounding mode: one add and one subtract that vectorise on
// every ISA (the baseline has no round instruction).
constexpr float kRoundMagic = 0x1.8p23f;

constexpr uint32_t kAbsMask = 0x7fffffffu;
constexpr uint32_t kInfBits = 0x7f800000u;

// How a block quantises: q = round(v * pre * inv), decoded as q * scale.
//   scale: absmax / levels, never 0 for a block that is not all zeros (a scale that underflows
//     becomes the smallest denormal), rounded up when stored as bfloat16 so |v| / scale stays
//     within the levels.
//   pre, inv: 1 / scale overflows when scale is denormal, so such blocks are first multiplied
//     by 2^64 (exact: the values are then normal) and inv = 1 / (scale * 2^64).
// Codes are computed against the scale as stored, so the decoder's q * scale is the nearest
// multiple of what it reads.
struct BlockScale {
  float scale;
  float pre;
  float inv;
};

BRAID_HOST_DEVICE BRAID_INLINE uint32_t roundUpToBf16Bits(uint32_t bits) {
  return (bits + 0xffffu) & 0xffff0000u;
}

BRAID_HOST_DEVICE BRAID_INLINE BlockScale blockScale(float absMax, float levels, bool bf16) {
  float s = absMax / levels;
  if (absMax > 0.0f && s == 0.0f) s = bitsFloat(1);
  if (bf16) s = bitsFloat(roundUpToBf16Bits(floatBits(s)));
  // The largest code must decode to a finite value; near FLT_MAX a scale rounded up would not.
  // One step down makes the largest values clamp to the top code, an error below one step.
  while (!(s * levels <= 0x1.fffffep127f)) s = bitsFloat(floatBits(s) - (bf16 ? 0x10000u : 1u));
  float pre = s < 0x1p-126f ? 0x1p64f : 1.0f;
  float inv = absMax > 0.0f ? 1.0f / (s * pre) : 0.0f;
  return {s, pre, inv};
}

// Scales are stored as fp32 or as the top half of one (bfloat16), little-endian and unaligned.
// The sign bit marks a special block; a real scale is never negative.
BRAID_HOST_DEVICE BRAID_INLINE void storeScale(unsigned char* scales, size_t block, float s,
                                               bool special, bool bf16) {
  const uint32_t bits = floatBits(s) | (special ? 0x80000000u : 0u);
#if defined(__CUDA_ARCH__)
  if (bf16) {
    scales[2 * block] = uint8_t(bits >> 16);
    scales[2 * block + 1] = uint8_t(bits >> 24);
  } else {
    for (int j = 0; j < 4; ++j) scales[4 * block + j] = uint8_t(bits >> (8 * j));
  }
#else
  if (bf16) {
    uint16_t half = uint16_t(bits >> 16);
    std::memcpy(scales + 2 * block, &half, 2);
  } else {
    std::memcpy(scales + 4 * block, &bits, 4);
  }
#endif
}

BRAID_HOST_DEVICE BRAID_INLINE uint32_t loadScaleBits(const unsigned char* scales, size_t block,
                                                      bool bf16) {
#if defined(__CUDA_ARCH__)
  if (bf16) return uint32_t(scales[2 * block]) << 16 | uint32_t(scales[2 * block + 1]) << 24;
  uint32_t bits = 0;
  for (int j = 0; j < 4; ++j) bits |= uint32_t(scales[4 * block + j]) << (8 * j);
  return bits;
#else
  if (bf16) {
    uint16_t half;
    std::memcpy(&half, scales + 2 * block, 2);
    return uint32_t(half) << 16;
  }
  uint32_t bits;
  std::memcpy(&bits, scales + 4 * block, 4);
  return bits;
#endif
}

// A 32-bit integer hash with good avalanche (two multiply-xorshift rounds); vectorises as
// 32-bit lane multiplies.
BRAID_HOST_DEVICE BRAID_INLINE uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// The key of one call's random stream, from its 64-bit seed.
struct RandomKey {
  uint32_t k0, k1;
};
BRAID_HOST_DEVICE BRAID_INLINE RandomKey randomKey(uint64_t seed) {
  return {mix32(uint32_t(seed) ^ 0x9e3779b9u), mix32(uint32_t(seed >> 32) + 0x632be5abu)};
}

// Uniform in [0, 1) for element `index`: a counter-based stream, so any element's number is
// known without generating the ones before it, and every ISA draws the same.
BRAID_HOST_DEVICE BRAID_INLINE float uniform(RandomKey key, uint32_t index) {
  uint32_t h = mix32(mix32(index ^ key.k0) + key.k1);
  return float(int32_t(h >> 8)) * 0x1p-24f;
}

// The code of one finite element as a float holding an integer in [-levels, levels].
// Round to nearest: ties to even. Stochastic: floor(y + u), so E[q] = y.
template <bool kStochastic>
BRAID_HOST_DEVICE BRAID_INLINE float quantize(float v, const BlockScale& sc, float levels,
                                              float u) {
  float y = (v * sc.pre) * sc.inv;
  y = y < -levels ? -levels : y;
  y = y > levels ? levels : y;
  if constexpr (kStochastic) {
    float t = y + u;
    float r = (t + kRoundMagic) - kRoundMagic;
    float q = r - (r > t ? 1.0f : 0.0f);
    // y + u can round up to levels + 1 when y == levels.
    return q > levels ? levels : q;
  } else {
    return (y + kRoundMagic) - kRoundMagic;
  }
}

// The code of one element of a special block (NaN or Inf present): finite values against the
// block's finite maximum over kSpecialLevels, and the three codes that name +Inf, -Inf and NaN.
// *left: what the message does not carry (0 for a non-finite value, which is sent exactly: a
// residual that held it would poison every later call). index: the element's place in the call,
// for the random stream.
template <bool kStochastic>
BRAID_HOST_DEVICE BRAID_INLINE int8_t specialCode(float v, const BlockScale& sc, RandomKey key,
                                                  uint32_t index, float* left) {
  const uint32_t bits = floatBits(v);
  const uint32_t a = bits & kAbsMask;
  if (a >= kInfBits) {
    *left = 0.0f;
    return a > kInfBits ? kCodeNaN : (bits >> 31) ? kCodeNegInf : kCodePosInf;
  }
  const float u = kStochastic ? uniform(key, index) : 0.0f;
  const float q = quantize<kStochastic>(v, sc, kSpecialLevels, u);
  *left = v - q * sc.scale;
  return int8_t(int32_t(q));
}

// The value a special block's code decodes to (NaN as the canonical quiet NaN).
BRAID_HOST_DEVICE BRAID_INLINE float decodeSpecialCode(int8_t code, float scale) {
  return code == kCodeNaN      ? bitsFloat(0x7fc00000u)
         : code == kCodePosInf ? bitsFloat(kInfBits)
         : code == kCodeNegInf ? bitsFloat(kInfBits | 0x80000000u)
                               : float(code) * scale;
}

// Special blocks take a scalar path shared by every host ISA; they are rare, and the rules are
// easier to read in one place. Defined in codec_kernels.cc.
// v: the block's values (input + residual); residual: the block's residual or null.
void encodeSpecialBlock(const float* v, size_t n, size_t firstIndex, float* residual,
                        const QuantParams& params, bool stochastic, unsigned char* scales,
                        size_t block, int8_t* codes);
// The block's decoded values into out[0, n).
void decodeSpecialBlock(const int8_t* codes, size_t n, float scale, float* out);

// Top-k's order: larger magnitude first (NaN and Inf above every finite value, as their bits
// are), then lower index. The key is unique per element, so "the k largest keys" is exactly one
// set.
BRAID_HOST_DEVICE BRAID_INLINE uint32_t magnitudeKey(float v) { return floatBits(v) & kAbsMask; }
BRAID_HOST_DEVICE BRAID_INLINE uint64_t rankKey(float v, uint32_t index) {
  return uint64_t(magnitudeKey(v)) << 32 | uint32_t(~index);
}

}  // namespace braid::compress::quant
