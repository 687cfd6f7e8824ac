// Shared helpers of the compression tests: codecs built or failed loudly, encode/decode
// round trips into vectors, and input generators.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "compress/codec.h"
#include "compress/int8_block.h"
#include "compress/topk.h"
#include "kernels/types.h"

namespace braid::compress::testing {

inline std::unique_ptr<Int8BlockCodec> int8Codec(uint32_t block,
                                                 Rounding rounding = Rounding::Nearest,
                                                 ScaleFormat scales = ScaleFormat::Fp32) {
  std::unique_ptr<Int8BlockCodec> c;
  Status s = Int8BlockCodec::create({block, rounding, scales}, &c);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

inline std::unique_ptr<TopKCodec> topkCodec(double ratio) {
  std::unique_ptr<TopKCodec> c;
  Status s = TopKCodec::create({ratio}, &c);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

inline std::vector<std::byte> encode(const Codec& codec, const void* input, size_t count,
                                     ncclDataType_t type, float* residual = nullptr,
                                     uint64_t seed = 1) {
  std::vector<std::byte> out(codec.maxEncodedBytes(count, type));
  size_t written = 0;
  Status s = codec.encode(input, count, type, residual, seed, out, &written);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(written, out.size());
  out.resize(written);
  return out;
}

// decodeAccumulate into zeros: the decoded values in fp32.
inline std::vector<float> decoded(const Codec& codec, const std::vector<std::byte>& msg,
                                  size_t count) {
  std::vector<float> acc(count, 0.0f);
  Status s = codec.decodeAccumulate(msg, count, acc.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return acc;
}

inline uint32_t bitsOf(float f) { return kernels::floatBits(f); }
inline float fromBits(uint32_t b) { return kernels::bitsFloat(b); }

inline std::vector<float> normal(size_t n, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace braid::compress::testing
