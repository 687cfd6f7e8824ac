// INT8 block quantisation: error bounds per block size and scale format over random,
// constant, all-zero, huge and denormal inputs; NaN and Inf arriving exactly where they were;
// stochastic rounding reproducible and unbiased; the message checks of the decoder.
#include <gtest/gtest.h>

#include <cfloat>
#include <string>

#include "compress_test_util.h"

namespace braid::compress {
namespace {

using namespace testing;

constexpr uint32_t kBlocks[] = {32, 64, 100, 128, 256};
constexpr size_t kCount = 10007;  // a partial last block for every block size

enum class Input { Random, Constant, Zero, Huge, Denormal, Mixed };

std::vector<float> makeInput(Input kind, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  switch (kind) {
    case Input::Random: return normal(n, seed);
    case Input::Constant: std::fill(v.begin(), v.end(), -3.25f); return v;
    case Input::Zero: return v;
    case Input::Huge:  // up to FLT_MAX itself
      for (float& x : v)
        x = (rng() & 1 ? -1.0f : 1.0f) * fromBits(0x7f000000u + uint32_t(rng() % 0x7fffff));
      v[5] = FLT_MAX;
      v[6] = -FLT_MAX;
      return v;
    case Input::Denormal:
      for (float& x : v) x = fromBits(uint32_t(rng() % 0x800000u) | uint32_t(rng() & 1) << 31);
      v[3] = fromBits(1);
      return v;
    case Input::Mixed:  // magnitudes spread over many octaves, one outlier per block or so
      for (size_t i = 0; i < n; ++i)
        v[i] = std::ldexp(float(rng() % 2000) - 1000.0f, int(rng() % 40) - 20);
      return v;
  }
  return v;
}

const char* inputName(Input k) {
  static const char* kNames[] = {"Random", "Constant", "Zero", "Huge", "Denormal", "Mixed"};
  return kNames[int(k)];
}

// The bound of the format: half the block's step (absmax / 127, rounded up to bf16 where it is
// stored so: for a denormal step, bf16's few mantissa bits can double it), plus float rounding
// of the product and, for denormal steps, of the step itself.
double bound(float absMax, bool bf16, float x) {
  float scale = absMax / 127.0f;
  double step = bf16 ? double(fromBits((bitsOf(scale) + 0xffffu) & 0xffff0000u))
                     : double(absMax) / 127.0 * (1.0 + 0x1p-22);
  return 0.5 * step * (1.0 + 0x1p-16) + std::fabs(double(x)) * 0x1p-22 + 0x1p-142;
}

struct Case {
  uint32_t block;
  ScaleFormat scales;
  Input input;
};

class Int8RoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(Int8RoundTrip, ErrorWithinHalfAStep) {
  const Case c = GetParam();
  auto codec = int8Codec(c.block, Rounding::Nearest, c.scales);
  std::vector<float> x = makeInput(c.input, kCount, c.block);
  auto msg = encode(*codec, x.data(), kCount, ncclFloat32);
  std::vector<float> y = decoded(*codec, msg, kCount);
  const bool bf16 = c.scales == ScaleFormat::Bf16;
  for (size_t base = 0; base < kCount; base += c.block) {
    size_t n = std::min<size_t>(c.block, kCount - base);
    float m = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[base + i]));
    for (size_t i = base; i < base + n; ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << i << " " << x[i];
      ASSERT_LE(std::fabs(double(y[i]) - double(x[i])), bound(m, bf16, x[i]))
          << "element " << i << ": " << x[i] << " decoded as " << y[i] << ", block max " << m;
    }
  }
  if (c.input == Input::Zero) {
    for (float v : y) ASSERT_EQ(bitsOf(v), 0u);
  }
  // decode() into fp32 agrees with decodeAccumulate into zeros.
  std::vector<float> direct(kCount);
  ASSERT_TRUE(codec->decode(msg, kCount, ncclFloat32, direct.data()).ok());
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(direct[i] + 0.0f, y[i]) << i;
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (uint32_t b : kBlocks)
    for (ScaleFormat s : {ScaleFormat::Fp32, ScaleFormat::Bf16})
      for (Input in : {Input::Random, Input::Constant, Input::Zero, Input::Huge, Input::Denormal,
                       Input::Mixed})
        cases.push_back({b, s, in});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(, Int8RoundTrip, ::testing::ValuesIn(allCases()), [](const auto& info) {
  const Case& c = info.param;
  return std::string(inputName(c.input)) + "_block" + std::to_string(c.block) +
         (c.scales == ScaleFormat::Bf16 ? "_bf16" : "_fp32");
});

TEST(Int8Block, SizeIsAQuarterPlusScales) {
  auto codec = int8Codec(64);
  EXPECT_EQ(codec->maxEncodedBytes(size_t(1) << 20, ncclFloat32), 16u + 16384u * 4 + (1u << 20));
  auto bf16 = int8Codec(64, Rounding::Nearest, ScaleFormat::Bf16);
  EXPECT_EQ(bf16->maxEncodedBytes(100, ncclFloat16), 16u + 2u * 2 + 100);
  EXPECT_EQ(codec->maxEncodedBytes(0, ncclFloat32), 16u);
}

TEST(Int8Block, BlockSizeFromTheEnvironment) {
  setenv("BRAID_COMPRESS_BLOCK", "128", 1);
  EXPECT_EQ(Int8BlockOptions::fromEnv().blockSize, 128u);
  setenv("BRAID_COMPRESS_BLOCK", "1000", 1);
  std::unique_ptr<Int8BlockCodec> c;
  Status s = Int8BlockCodec::create(Int8BlockOptions::fromEnv(), &c);
  EXPECT_EQ(s.code(), ncclInvalidArgument);
  EXPECT_NE(s.message().find("BRAID_COMPRESS_BLOCK"), std::string::npos) << s.message();
  unsetenv("BRAID_COMPRESS_BLOCK");
  EXPECT_EQ(Int8BlockOptions::fromEnv().blockSize, 64u);
}

TEST(Int8Block, EmptyInput) {
  auto codec = int8Codec(64);
  auto msg = encode(*codec, nullptr, 0, ncclFloat32);
  EXPECT_EQ(msg.size(), 16u);
  EXPECT_TRUE(codec->decodeAccumulate(msg, 0, nullptr).ok());
  auto topk = topkCodec(0.1);
  auto sparse = encode(*topk, nullptr, 0, ncclFloat32);
  EXPECT_EQ(sparse.size(), 16u);
  EXPECT_TRUE(topk->decode(sparse, 0, ncclFloat16, nullptr).ok());
}

TEST(Int8Block, RefusesBadOptionsAndTypes) {
  std::unique_ptr<Int8BlockCodec> c;
  EXPECT_FALSE(Int8BlockCodec::create({31}, &c).ok());
  EXPECT_FALSE(Int8BlockCodec::create({257}, &c).ok());
  auto codec = int8Codec(32);
  std::vector<std::byte> out(1024);
  size_t w;
  int32_t ints[4] = {};
  Status s = codec->encode(ints, 4, ncclInt32, nullptr, 0, out, &w);
  EXPECT_EQ(s.code(), ncclInvalidArgument);
  std::vector<std::byte> small(10);
  float xs[4] = {};
  EXPECT_FALSE(codec->encode(xs, 4, ncclFloat32, nullptr, 0, small, &w).ok());
}

TEST(Int8Block, NanAndInfArriveExactlyWhereTheyWere) {
  for (ncclDataType_t type : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
    for (ScaleFormat scales : {ScaleFormat::Fp32, ScaleFormat::Bf16}) {
      SCOPED_TRACE(::testing::Message() << "type " << type << " bf16 scales " << int(scales));
      auto codec = int8Codec(64, Rounding::Nearest, scales);
      std::vector<float> x = normal(1000, 7);
      x[3] = NAN;
      x[70] = INFINITY;
      x[71] = -INFINITY;
      x[130] = -NAN;
      for (size_t i = 192; i < 256; ++i) x[i] = NAN;  // a block of nothing but NaN
      x[300] = INFINITY;
      x[301] = 1e30f;  // a huge finite value beside an Inf stays finite
      if (type != ncclFloat32) x[301] = 100.0f;
      // The input in its type, and its exact fp32 values.
      std::vector<uint16_t> narrow(x.size());
      std::vector<float> exact(x);
      for (size_t i = 0; i < x.size(); ++i) {
        if (type == ncclFloat16) {
          narrow[i] = kernels::floatToHalf(x[i]).bits;
          exact[i] = kernels::halfToFloat({narrow[i]});
        } else if (type == ncclBfloat16) {
          narrow[i] = kernels::floatToBf16(x[i]).bits;
          exact[i] = kernels::bf16ToFloat({narrow[i]});
        }
      }
      const void* in = type == ncclFloat32 ? static_cast<const void*>(x.data()) : narrow.data();
      std::vector<float> residual(x.size(), 0.0f);
      auto msg = encode(*codec, in, x.size(), type, residual.data());
      std::vector<float> y = decoded(*codec, msg, x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(exact[i])) {
          EXPECT_TRUE(std::isnan(y[i])) << i;
          EXPECT_EQ(residual[i], 0.0f) << i;
        } else if (std::isinf(exact[i])) {
          EXPECT_EQ(y[i], exact[i]) << i;
          EXPECT_EQ(residual[i], 0.0f) << i;
        } else {
          // Finite values of flagged blocks use 126 levels: a step of absmax / 126.
          ASSERT_TRUE(std::isfinite(y[i])) << i;
          ASSERT_TRUE(std::isfinite(residual[i])) << i;
          float m = 0;
          size_t b = i / 64 * 64;
          for (size_t j = b; j < std::min(b + 64, x.size()); ++j)
            if (std::isfinite(exact[j])) m = std::max(m, std::fabs(exact[j]));
          const float step = m / 126.0f * (scales == ScaleFormat::Bf16 ? 1.0079f : 1.0001f);
          EXPECT_LE(std::fabs(y[i] - exact[i]), step / 2) << i;
          EXPECT_EQ(residual[i], exact[i] - y[i]) << i;
        }
      }
      // Decoding into the input's type keeps them too.
      std::vector<uint16_t> out(x.size());
      ASSERT_TRUE(
          codec->decode(msg, x.size(), type == ncclFloat32 ? ncclFloat16 : type, out.data()).ok());
      auto back = [&](size_t i) {
        return type == ncclBfloat16 ? kernels::bf16ToFloat({out[i]})
                                    : kernels::halfToFloat({out[i]});
      };
      EXPECT_TRUE(std::isnan(back(3)));
      EXPECT_TRUE(std::isnan(back(200)));
      EXPECT_EQ(back(70), INFINITY);
      EXPECT_EQ(back(71), -INFINITY);
    }
  }
}

TEST(Int8Block, StochasticRoundingIsReproducibleAndUnbiased) {
  auto codec = int8Codec(32, Rounding::Stochastic);
  std::vector<float> x = normal(256, 3);
  x[0] = 4.0f;  // a fixed block maximum keeps the step known: 4 / 127
  auto a = encode(*codec, x.data(), x.size(), ncclFloat32, nullptr, 42);
  auto b = encode(*codec, x.data(), x.size(), ncclFloat32, nullptr, 42);
  auto c = encode(*codec, x.data(), x.size(), ncclFloat32, nullptr, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  constexpr int kDraws = 400;
  std::vector<double> mean(x.size(), 0.0);
  for (int s = 0; s < kDraws; ++s) {
    std::vector<float> y =
        decoded(*codec, encode(*codec, x.data(), x.size(), ncclFloat32, nullptr, s), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_LE(std::fabs(y[i] - x[i]), 1.0001 * 4.0 / 127 * 2)
          << i;  // below one step of any block
      mean[i] += y[i] / kDraws;
    }
  }
  // Each draw errs by under one step with mean zero; the mean of 400 by about step / 40.
  double worst = 0, step = 4.0 / 127;
  for (size_t i = 0; i < 32; ++i) worst = std::max(worst, std::fabs(mean[i] - x[i]));
  EXPECT_LT(worst, step * 0.15);
  // Round to nearest would be biased on values off the grid: check the test can tell.
  auto nearest = int8Codec(32);
  std::vector<float> yn =
      decoded(*nearest, encode(*nearest, x.data(), x.size(), ncclFloat32), x.size());
  double nearestWorst = 0;
  for (size_t i = 0; i < 32; ++i)
    nearestWorst = std::max(nearestWorst, std::fabs(double(yn[i]) - x[i]));
  EXPECT_GT(nearestWorst, step * 0.3);
}

TEST(Int8Block, HalfAndBf16InputAndOutput) {
  auto codec = int8Codec(64);
  std::vector<float> x = normal(777, 11);
  std::vector<kernels::Half> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = kernels::floatToHalf(x[i]);
  auto msg = encode(*codec, h.data(), x.size(), ncclFloat16);
  std::vector<float> y = decoded(*codec, msg, x.size());
  std::vector<kernels::BFloat16> out(x.size());
  ASSERT_TRUE(codec->decode(msg, x.size(), ncclBfloat16, out.data()).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    float hx = kernels::halfToFloat(h[i]);
    EXPECT_LE(std::fabs(y[i] - hx), 5.0f / 254) << i;  // |x| < 5 for this seed's normals
    EXPECT_EQ(out[i].bits, kernels::floatToBf16(y[i]).bits) << i;
  }
}

TEST(Int8Block, DecoderRefusesForeignOrDamagedMessages) {
  auto codec = int8Codec(64);
  std::vector<float> x = normal(100, 1), acc(100);
  auto msg = encode(*codec, x.data(), 100, ncclFloat32);
  EXPECT_FALSE(codec->decodeAccumulate(msg, 99, acc.data()).ok());
  auto cut = msg;
  cut.pop_back();
  EXPECT_FALSE(codec->decodeAccumulate(cut, 100, acc.data()).ok());
  EXPECT_FALSE(codec->decodeAccumulate(std::span(msg).first(8), 100, acc.data()).ok());
  auto topk = topkCodec(0.1);
  auto other = encode(*topk, x.data(), 100, ncclFloat32);
  Status s = codec->decodeAccumulate(other, 100, acc.data());
  EXPECT_EQ(s.code(), ncclInvalidArgument);
  EXPECT_NE(s.message().find("int8_block decode"), std::string::npos) << s.message();
  // Another block size's message is read by its own header.
  auto b32 = int8Codec(32, Rounding::Nearest, ScaleFormat::Bf16);
  auto m32 = encode(*b32, x.data(), 100, ncclFloat32);
  EXPECT_EQ(decoded(*codec, m32, 100), decoded(*b32, m32, 100));
}

}  // namespace
}  // namespace braid::compress
