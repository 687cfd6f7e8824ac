// Exhaustive checks of the small-format conversions in kernels/types.h against the independent
// frexp/ldexp oracle in kernels_reference.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/types.h"
#include "kernels_reference.h"

namespace braid::kernels {
namespace {

using testref::FormatSpec;

// The conversions of one format as plain functions on bit patterns.
struct Codec {
  const FormatSpec& spec;
  float (*toFloat)(uint32_t bits);
  uint32_t (*fromFloat)(float value);
  uint32_t quietBit;  // set by fromFloat on a NaN
};

const Codec kHalfCodec{testref::kHalf, [](uint32_t b) { return halfToFloat(Half{uint16_t(b)}); },
                       [](float v) -> uint32_t { return floatToHalf(v).bits; }, 0x200};
const Codec kBf16Codec{testref::kBf16,
                       [](uint32_t b) { return bf16ToFloat(BFloat16{uint16_t(b)}); },
                       [](float v) -> uint32_t { return floatToBf16(v).bits; }, 0x40};
const Codec kE4M3Codec{testref::kE4M3, [](uint32_t b) { return e4m3ToFloat(Fp8E4M3{uint8_t(b)}); },
                       [](float v) -> uint32_t { return floatToE4M3(v).bits; }, 0};
const Codec kE5M2Codec{testref::kE5M2, [](uint32_t b) { return e5m2ToFloat(Fp8E5M2{uint8_t(b)}); },
                       [](float v) -> uint32_t { return floatToE5M2(v).bits; }, 0x2};

class ConvertTest : public ::testing::TestWithParam<const Codec*> {};

uint32_t patternCount(const FormatSpec& f) { return 1u << (1 + f.expBits + f.manBits); }

// Every bit pattern decodes to the oracle's value and encodes back to itself; NaN stays NaN
// with its sign (quieted), and a saturating format turns Inf into its largest finite value.
TEST_P(ConvertTest, EveryPatternRoundTrips) {
  const Codec& c = *GetParam();
  int failures = 0;
  for (uint32_t bits = 0; bits < patternCount(c.spec) && failures < 10; ++bits) {
    float value = c.toFloat(bits);
    double expected = testref::decode(c.spec, bits);
    uint32_t back = c.fromFloat(value);
    bool negative = bits & testref::signBit(c.spec);
    if (std::isnan(expected)) {
      failures += !std::isnan(value) || std::signbit(value) != negative;
      failures += !testref::isNan(c.spec, back) || (back & c.quietBit) != c.quietBit ||
                  bool(back & testref::signBit(c.spec)) != negative;
      EXPECT_TRUE(std::isnan(value) && testref::isNan(c.spec, back)) << std::hex << bits;
      continue;
    }
    EXPECT_EQ(testref::bitsOf(value), testref::bitsOf(float(expected))) << std::hex << bits;
    failures += testref::bitsOf(value) != testref::bitsOf(float(expected));
    uint32_t expectBack = bits;
    if (std::isinf(expected) && c.spec.saturate)
      expectBack = (bits & testref::signBit(c.spec)) | testref::maxFinite(c.spec);
    EXPECT_EQ(back, expectBack) << std::hex << bits;
    failures += back != expectBack;
  }
  EXPECT_EQ(failures, 0);
}

// Between two neighbours, the midpoint goes to the even one and anything off it to the
// nearer one. Covers every finite positive and negative pattern, denormals included.
TEST_P(ConvertTest, TiesRoundToEven) {
  const Codec& c = *GetParam();
  uint32_t sign = testref::signBit(c.spec);
  int failures = 0;
  for (uint32_t mag = 0; mag < testref::maxFinite(c.spec) && failures < 10; ++mag) {
    for (uint32_t s : {0u, sign}) {
      uint32_t lo = s | mag, hi = s | (mag + 1);
      double mid = (testref::decode(c.spec, lo) + testref::decode(c.spec, hi)) / 2;
      float midF = float(mid);
      ASSERT_EQ(double(midF), mid);  // halfway points are exact in float for these formats
      uint32_t even = (lo & 1) ? hi : lo;
      uint32_t got = c.fromFloat(midF);
      float towardLo = std::nextafter(midF, float(testref::decode(c.spec, lo)));
      float towardHi = std::nextafter(midF, float(testref::decode(c.spec, hi)));
      EXPECT_EQ(got, even) << std::hex << "between " << lo << " and " << hi;
      EXPECT_EQ(c.fromFloat(towardLo), lo) << std::hex << lo;
      EXPECT_EQ(c.fromFloat(towardHi), hi) << std::hex << hi;
      failures += got != even || c.fromFloat(towardLo) != lo || c.fromFloat(towardHi) != hi;
    }
  }
}

// A sample of all float patterns (every 251st, and every pattern near the format's ends)
// against the oracle's rounding of the same value.
TEST_P(ConvertTest, FloatSampleMatchesOracle) {
  const Codec& c = *GetParam();
  int failures = 0;
  auto check = [&](uint32_t fbits) {
    float v = testref::floatOf(fbits);
    uint32_t got = c.fromFloat(v);
    uint32_t want = testref::encode(c.spec, v);
    bool ok = std::isnan(v) ? testref::isNan(c.spec, got) : got == want;
    if (!ok && failures++ < 10)
      ADD_FAILURE() << std::hex << "float 0x" << fbits << " gave 0x" << got << ", expected 0x"
                    << want;
  };
  for (uint64_t f = 0; f < (uint64_t(1) << 32); f += 251) check(uint32_t(f));
  float maxValue = float(testref::decode(c.spec, testref::maxFinite(c.spec)));
  float minDenorm = float(testref::decode(c.spec, 1));
  for (float edge : {maxValue, minDenorm, 2 * maxValue, minDenorm / 2})
    for (int32_t d = -4096; d <= 4096; ++d) {
      check(uint32_t(int32_t(testref::bitsOf(edge)) + d));
      check(uint32_t(int32_t(testref::bitsOf(-edge)) + d));
    }
  EXPECT_EQ(failures, 0);
}

std::string formatName(const ::testing::TestParamInfo<const Codec*>& info) {
  const char* names[] = {"half", "bfloat16", "e4m3", "e5m2"};
  return names[info.index];
}

INSTANTIATE_TEST_SUITE_P(Formats, ConvertTest,
                         ::testing::Values(&kHalfCodec, &kBf16Codec, &kE4M3Codec, &kE5M2Codec),
                         formatName);

TEST(Convert, HalfOverflowAndSpecials) {
  EXPECT_EQ(floatToHalf(65504.0f).bits, 0x7bff);
  EXPECT_EQ(floatToHalf(65519.996f).bits, 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f).bits, 0x7c00);  // the tie goes up, to Inf
  EXPECT_EQ(floatToHalf(-1e10f).bits, 0xfc00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::max()).bits, 0x7c00);
  EXPECT_EQ(floatToHalf(INFINITY).bits, 0x7c00);
  EXPECT_EQ(floatToHalf(-INFINITY).bits, 0xfc00);
  EXPECT_EQ(floatToHalf(testref::floatOf(0x7fc00000)).bits, 0x7e00);
  EXPECT_EQ(floatToHalf(testref::floatOf(0xff800001)).bits, 0xfe00);  // signalling -> quiet
  EXPECT_EQ(floatToHalf(0x1p-25f).bits, 0x0000);                      // tie to even zero
  EXPECT_EQ(floatToHalf(0x1.8p-25f).bits, 0x0001);
  EXPECT_EQ(floatToHalf(-0.0f).bits, 0x8000);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()).bits, 0x0000);
  EXPECT_EQ(testref::bitsOf(halfToFloat(Half{0x0001})), testref::bitsOf(0x1p-24f));
  EXPECT_EQ(testref::bitsOf(halfToFloat(Half{0x7d00})), 0x7fe00000u);  // signalling -> quiet
}

TEST(Convert, Bf16OverflowAndSpecials) {
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()).bits, 0x7f80);  // rounds up to Inf
  EXPECT_EQ(floatToBf16(testref::floatOf(0x7f7f7fff)).bits, 0x7f7f);
  EXPECT_EQ(floatToBf16(testref::floatOf(0x7f7f8000)).bits, 0x7f80);  // tie, odd: up to Inf
  EXPECT_EQ(floatToBf16(-INFINITY).bits, 0xff80);
  EXPECT_EQ(floatToBf16(testref::floatOf(0x7f800001)).bits, 0x7fc0);
  EXPECT_EQ(floatToBf16(testref::floatOf(0xffc12345)).bits, 0xffc1);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::denorm_min()).bits, 0x0000);
  EXPECT_EQ(floatToBf16(testref::floatOf(0x00018000)).bits, 0x0002);  // denormal tie, odd: up
}

TEST(Convert, Fp8SaturatesAndKeepsNan) {
  EXPECT_EQ(floatToE4M3(448.0f).bits, 0x7e);
  EXPECT_EQ(floatToE4M3(463.99f).bits, 0x7e);
  EXPECT_EQ(floatToE4M3(464.0f).bits, 0x7e);
  EXPECT_EQ(floatToE4M3(1e6f).bits, 0x7e);
  EXPECT_EQ(floatToE4M3(INFINITY).bits, 0x7e);
  EXPECT_EQ(floatToE4M3(-INFINITY).bits, 0xfe);
  EXPECT_EQ(floatToE4M3(NAN).bits, 0x7f);
  EXPECT_EQ(floatToE4M3(-NAN).bits, 0xff);
  EXPECT_EQ(floatToE4M3(0x1p-9f).bits, 0x01);   // smallest denormal
  EXPECT_EQ(floatToE4M3(0x1p-10f).bits, 0x00);  // tie to even zero
  EXPECT_TRUE(std::isnan(e4m3ToFloat(Fp8E4M3{0x7f})));
  EXPECT_EQ(e4m3ToFloat(Fp8E4M3{0x78}), 256.0f);  // exponent 15 is a normal number

  EXPECT_EQ(floatToE5M2(57344.0f).bits, 0x7b);
  EXPECT_EQ(floatToE5M2(61439.0f).bits, 0x7b);
  EXPECT_EQ(floatToE5M2(61440.0f).bits, 0x7b);
  EXPECT_EQ(floatToE5M2(1e30f).bits, 0x7b);
  EXPECT_EQ(floatToE5M2(INFINITY).bits, 0x7b);
  EXPECT_EQ(floatToE5M2(-INFINITY).bits, 0xfb);
  EXPECT_EQ(floatToE5M2(NAN).bits, 0x7e);
  EXPECT_EQ(floatToE5M2(-NAN).bits, 0xfe);
  EXPECT_EQ(e5m2ToFloat(Fp8E5M2{0x7c}), INFINITY);  // decodes Inf, though it never encodes one
  EXPECT_EQ(floatToE5M2(0x1p-16f).bits, 0x01);
}

}  // namespace
}  // namespace braid::kernels
