// Every ISA's codec loops against the generic build, bit for bit: codes, scales and residuals
// of both roundings and both scale formats, over every input type, inputs with NaN, Inf,
// denormals and huge values, block sizes that leave partial blocks and vector tails.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "compress/codec_kernels.h"
#include "compress/quant_math.h"
#include "kernels/isa.h"
#include "kernels/types.h"

namespace braid::compress {
namespace {

using kernels::Isa;

constexpr size_t kCounts[] = {1, 31, 1000, 4099};
constexpr uint32_t kBlocks[] = {32, 48, 64, 100, 256};

// fp32 values of every class: ordinary, huge, denormal, zeros, and a few NaN and Inf.
std::vector<float> wildFloats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) {
    uint64_t r = rng() % 100;
    if (r < 80)
      x = d(rng);
    else if (r < 88)
      x = d(rng) * 1e37f;
    else if (r < 96)
      x = kernels::bitsFloat(uint32_t(rng() % 0x800000u));
    else if (r < 97)
      x = -0.0f;
    else if (r < 98)
      x = NAN;
    else if (r < 99)
      x = (rng() & 1) ? INFINITY : -INFINITY;
    else
      x = kernels::bitsFloat(0x7f800001u + uint32_t(rng() % 0x3fffff));  // signalling NaN
  }
  return v;
}

// The same values in the layout of one kind: fp32 as is, fp16 and bf16 rounded.
std::vector<unsigned char> asKind(const std::vector<float>& v, FloatKind kind) {
  size_t size = kind == FloatKind::Fp32 ? 4 : 2;
  std::vector<unsigned char> out(v.size() * size);
  for (size_t i = 0; i < v.size(); ++i) {
    if (kind == FloatKind::Fp32) {
      std::memcpy(&out[4 * i], &v[i], 4);
    } else {
      uint16_t b = kind == FloatKind::Fp16 ? kernels::floatToHalf(v[i]).bits
                                           : kernels::floatToBf16(v[i]).bits;
      std::memcpy(&out[2 * i], &b, 2);
    }
  }
  return out;
}

struct Encoded {
  std::vector<unsigned char> scales;
  std::vector<int8_t> codes;
  std::vector<float> residual;
};

Encoded quantize(const CodecKernelTable& t, FloatKind kind, const std::vector<unsigned char>& in,
                 size_t count, bool residual, bool stochastic, const QuantParams& p) {
  size_t blocks = (count + p.blockSize - 1) / p.blockSize;
  Encoded e{std::vector<unsigned char>(blocks * 4), std::vector<int8_t>(count), {}};
  if (residual) e.residual = wildFloats(count, 77);
  for (float& r : e.residual)
    if (!std::isfinite(r)) r = 0.5f;  // residuals are finite: encode never leaves NaN or Inf there
  t.quantize[int(kind)][residual][stochastic](in.data(), residual ? e.residual.data() : nullptr,
                                              count, p, {e.scales.data(), e.codes.data()});
  return e;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || !std::memcmp(a.data(), b.data(), a.size() * 4));
}

class CodecIsa : public ::testing::TestWithParam<Isa> {};

TEST_P(CodecIsa, QuantiseIsBitIdenticalToGeneric) {
  if (!kernels::isaAvailable(GetParam())) GTEST_SKIP() << "not available on this machine";
  const CodecKernelTable& ref = codecKernels(Isa::Generic);
  const CodecKernelTable& t = codecKernels(GetParam());
  for (size_t count : kCounts)
    for (uint32_t block : kBlocks)
      for (int k = 0; k < kNumFloatKinds; ++k) {
        const FloatKind kind = FloatKind(k);
        auto input = asKind(wildFloats(count, count * 31 + block), kind);
        for (bool bf16 : {false, true})
          for (bool residual : {false, true})
            for (bool stochastic : {false, true}) {
              QuantParams p{block, bf16, 0x1234567890abcdefull + count};
              Encoded a = quantize(ref, kind, input, count, residual, stochastic, p);
              Encoded b = quantize(t, kind, input, count, residual, stochastic, p);
              SCOPED_TRACE(testing::Message()
                           << "count " << count << " block " << block << " kind " << k << " bf16 "
                           << bf16 << " residual " << residual << " stochastic " << stochastic);
              ASSERT_EQ(a.codes, b.codes);
              ASSERT_EQ(a.scales, b.scales);
              ASSERT_TRUE(sameBits(a.residual, b.residual));

              // Decoding the generic message: accumulate into fp32, and into each kind.
              ConstQuantBuffers msg{a.scales.data(), a.codes.data()};
              std::vector<float> accA = wildFloats(count, 5), accB = accA;
              ref.dequantizeAccumulate(msg, count, p, accA.data());
              t.dequantizeAccumulate(msg, count, p, accB.data());
              ASSERT_TRUE(sameBits(accA, accB));
              for (int o = 0; o < kNumFloatKinds; ++o) {
                std::vector<unsigned char> outA(count * 4), outB(count * 4);
                ref.dequantize[o](msg, count, p, outA.data());
                t.dequantize[o](msg, count, p, outB.data());
                ASSERT_EQ(outA, outB) << "output kind " << o;
              }
            }
      }
}

TEST_P(CodecIsa, WidenAndCountAreBitIdenticalToGeneric) {
  if (!kernels::isaAvailable(GetParam())) GTEST_SKIP() << "not available on this machine";
  const CodecKernelTable& ref = codecKernels(Isa::Generic);
  const CodecKernelTable& t = codecKernels(GetParam());
  for (size_t count : kCounts) {
    std::vector<float> v = wildFloats(count, count);
    for (int k = 0; k < kNumFloatKinds; ++k) {
      auto input = asKind(v, FloatKind(k));
      std::vector<float> a(count), b(count);
      ref.widen[k](a.data(), input.data(), count);
      t.widen[k](b.data(), input.data(), count);
      ASSERT_TRUE(sameBits(a, b));
      ref.widenAccumulate[k](a.data(), input.data(), count);
      t.widenAccumulate[k](b.data(), input.data(), count);
      ASSERT_TRUE(sameBits(a, b));
    }
    for (uint32_t key : {0u, 1u, 0x3f800000u, 0x7f800000u, 0x7fc00000u, 0x80000000u}) {
      const size_t n = ref.countAtLeast(v.data(), count, key);
      ASSERT_EQ(n, t.countAtLeast(v.data(), count, key)) << key;
      std::vector<uint32_t> a(n + 16), b(n + 16);
      ASSERT_EQ(ref.collectAtLeast(v.data(), count, key, a.data()), n) << key;
      ASSERT_EQ(t.collectAtLeast(v.data(), count, key, b.data()), n) << key;
      a.resize(n);
      b.resize(n);
      ASSERT_EQ(a, b) << key;
      for (size_t j = 1; j < n; ++j) ASSERT_LT(a[j - 1], a[j]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(, CodecIsa, ::testing::Values(Isa::Avx2, Isa::Avx512),
                         [](const auto& info) {
                           return std::string(kernels::isaName(info.param));
                         });

TEST(CodecKernels, CountAtLeastCountsNanAndInfAsLargest) {
  std::vector<float> v = {1.0f, -2.0f, NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 3.0f};
  const CodecKernelTable& t = codecKernels(Isa::Generic);
  EXPECT_EQ(t.countAtLeast(v.data(), v.size(), 0), 8u);
  EXPECT_EQ(t.countAtLeast(v.data(), v.size(), kernels::floatBits(2.0f)), 5u);
  EXPECT_EQ(t.countAtLeast(v.data(), v.size(), quant::kInfBits), 3u);
  EXPECT_EQ(t.countAtLeast(v.data(), v.size(), quant::kInfBits + 1), 1u);
}

}  // namespace
}  // namespace braid::compress
