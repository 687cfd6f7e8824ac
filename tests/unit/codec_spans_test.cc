// The CUDA codecs' bodies (compress/codec_spans.h) run on the CPU the way their kernels run them:
// INT8 blocks by groups of lanes (a warp: the lanes' maxima combined, then each lane codes its
// elements), decoding by grid-stride workers, top-k by radix passes over counts and a stable
// compaction. Their messages, residuals and decoded values must be the host codecs' bytes
// exactly, for every input type, option and kind of block (NaN, Inf, denormal, near FLT_MAX,
// zeros, ties). So the arithmetic the device runs is tested here, on any machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "compress/codec_spans.h"
#include "compress_test_util.h"
#include "kernels/reduce.h"

namespace braid::compress {
namespace {

using kernels::BFloat16;
using kernels::ElemTraits;
using kernels::Half;
using testing::bitsOf;
using testing::fromBits;

// Values whose blocks cover every path: ordinary blocks of several magnitudes, blocks with NaN,
// +Inf or -Inf, denormals, values near FLT_MAX, all zeros, signed zeros.
std::vector<float> awkward(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t region = (i / 97) % 9;
    float x = normal(rng);
    switch (region) {
      case 0: x *= 1e-3f; break;
      case 1: x *= 1e4f; break;
      case 2: x = fromBits(uint32_t(rng()) & 0x807fffffu); break;  // denormal
      case 3: x = (rng() & 1 ? 1.0f : -1.0f) * FLT_MAX * (0.5f + 0.5f * float(rng() % 2)); break;
      case 4: x = (i % 5 == 0) ? 0.0f : (i % 5 == 1 ? -0.0f : x); break;
      default: break;
    }
    v[i] = x;
  }
  // A few non-finite values, in ordinary regions too.
  for (size_t i = 13; i < n; i += 211) v[i] = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 57; i < n; i += 389) v[i] = std::numeric_limits<float>::infinity();
  for (size_t i = 101; i < n; i += 463) v[i] = -std::numeric_limits<float>::infinity();
  return v;
}

template <typename T>
std::vector<T> asType(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = ElemTraits<T>::store(v[i]);
  return out;
}

constexpr ncclDataType_t typeOf(float) { return ncclFloat32; }
constexpr ncclDataType_t typeOf(Half) { return ncclFloat16; }
constexpr ncclDataType_t typeOf(BFloat16) { return ncclBfloat16; }

// ---- INT8 block ----

// The message int8EncodeKernel writes, computed as its warps do with `lanes` lanes.
template <typename T, bool kResidual, bool kStochastic>
void int8EncodeAsDevice(const T* x, float* r, size_t count, const QuantParams& p,
                        unsigned char* payload, unsigned lanes) {
  unsigned char* scales = payload;
  int8_t* codes = reinterpret_cast<int8_t*>(scales + int8BlockCount(count, p.blockSize) *
                                                         (p.bf16Scales ? 2 : 4));
  const quant::RandomKey key = quant::randomKey(p.seed);
  for (size_t b = 0, base = 0; base < count; ++b, base += p.blockSize) {
    const size_t n = std::min<size_t>(p.blockSize, count - base);
    float* rb = kResidual ? r + base : nullptr;
    spans::BlockMax m;
    for (unsigned lane = 0; lane < lanes; ++lane)
      m = spans::combineMax(m, spans::laneMax<T, kResidual>(x + base, rb, n, lane, lanes));
    const spans::BlockCoding c = spans::blockCoding(m, p.bf16Scales);
    quant::storeScale(scales, b, c.scale.scale, c.special, p.bf16Scales);
    for (unsigned lane = 0; lane < lanes; ++lane)
      spans::codeLane<T, kResidual, kStochastic>(x + base, rb, n, c, key, uint32_t(base),
                                                 codes + base, lane, lanes);
  }
}

struct Int8Case {
  uint32_t block;
  Rounding rounding;
  ScaleFormat scales;
};

std::string describe(const Int8Case& c, const char* type, size_t count, bool residual,
                     unsigned lanes) {
  return std::string(type) + " block " + std::to_string(c.block) +
         (c.rounding == Rounding::Stochastic ? " stochastic" : " nearest") +
         (c.scales == ScaleFormat::Bf16 ? " bf16 scales" : " fp32 scales") + " count " +
         std::to_string(count) + (residual ? " with residual" : "") + ", " + std::to_string(lanes) +
         " lanes";
}

template <typename T>
void checkInt8Encode(const Int8Case& c, size_t count, bool residual, unsigned lanes,
                     uint64_t seed) {
  SCOPED_TRACE(describe(c, kernels::typeName(typeOf(T{})), count, residual, lanes));
  auto codec = testing::int8Codec(c.block, c.rounding, c.scales);
  const std::vector<T> x = asType<T>(awkward(count, seed));
  std::vector<float> hostResidual = testing::normal(count, seed + 1, 0.01f);
  std::vector<float> deviceResidual = hostResidual;
  const auto msg = testing::encode(*codec, x.data(), count, typeOf(T{}),
                                   residual ? hostResidual.data() : nullptr, seed);

  std::vector<unsigned char> payload(msg.size() - sizeof(Header), 0xee);
  const bool stochastic = c.rounding == Rounding::Stochastic;
  const QuantParams p{c.block, c.scales == ScaleFormat::Bf16, seed};
  auto run = [&](auto kRes, auto kSto) {
    int8EncodeAsDevice<T, decltype(kRes)::value, decltype(kSto)::value>(
        x.data(), residual ? deviceResidual.data() : nullptr, count, p, payload.data(), lanes);
  };
  using F = std::false_type;
  using Tr = std::true_type;
  if (residual)
    stochastic ? run(Tr{}, Tr{}) : run(Tr{}, F{});
  else
    stochastic ? run(F{}, Tr{}) : run(F{}, F{});

  ASSERT_EQ(0, std::memcmp(payload.data(), msg.data() + sizeof(Header), payload.size()))
      << "the device's scales and codes differ from the host codec's";
  if (residual) {
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(bitsOf(deviceResidual[i]), bitsOf(hostResidual[i])) << "residual " << i;
  }
}

const Int8Case kInt8Cases[] = {
    {64, Rounding::Nearest, ScaleFormat::Fp32},  {64, Rounding::Stochastic, ScaleFormat::Fp32},
    {32, Rounding::Nearest, ScaleFormat::Bf16},  {48, Rounding::Stochastic, ScaleFormat::Bf16},
    {100, Rounding::Nearest, ScaleFormat::Fp32}, {128, Rounding::Stochastic, ScaleFormat::Fp32},
    {256, Rounding::Nearest, ScaleFormat::Bf16}, {256, Rounding::Stochastic, ScaleFormat::Fp32},
};

TEST(CodecSpans, Int8EncodeIsTheHostCodecsBytes) {
  uint64_t seed = 1;
  for (const Int8Case& c : kInt8Cases)
    for (size_t count : {size_t(1), size_t(33), size_t(4096), size_t(9001)})
      for (bool residual : {false, true})
        for (unsigned lanes : {1u, 32u}) {
          checkInt8Encode<float>(c, count, residual, lanes, ++seed);
          checkInt8Encode<Half>(c, count, residual, lanes, ++seed);
          checkInt8Encode<BFloat16>(c, count, residual, lanes, ++seed);
        }
}

// A lane count that does not divide the block still covers every element once.
TEST(CodecSpans, Int8EncodeWithAnyLaneCount) {
  for (unsigned lanes : {3u, 7u, 31u, 33u, 300u})
    checkInt8Encode<float>({64, Rounding::Stochastic, ScaleFormat::Bf16}, 5000, true, lanes, lanes);
}

template <typename T>
void checkInt8Decode(const Int8Case& c, size_t count, size_t workers, uint64_t seed) {
  SCOPED_TRACE(describe(c, kernels::typeName(typeOf(T{})), count, false, 1) + ", " +
               std::to_string(workers) + " workers");
  auto codec = testing::int8Codec(c.block, c.rounding, c.scales);
  const std::vector<float> x = awkward(count, seed);
  const auto msg = testing::encode(*codec, x.data(), count, ncclFloat32, nullptr, seed);
  const auto* scales = reinterpret_cast<const unsigned char*>(msg.data()) + sizeof(Header);
  const ConstQuantBuffers in{scales, reinterpret_cast<const int8_t*>(
                                         scales + int8BlockCount(count, c.block) *
                                                      (c.scales == ScaleFormat::Bf16 ? 2 : 4))};
  const bool bf16 = c.scales == ScaleFormat::Bf16;

  std::vector<float> hostAcc = testing::normal(count, seed + 2), deviceAcc = hostAcc;
  ASSERT_TRUE(codec->decodeAccumulate(msg, count, hostAcc.data()).ok());
  for (size_t w = 0; w < workers; ++w)
    spans::decodeAccumulateSpan(in, count, c.block, bf16, deviceAcc.data(), w, workers);
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(bitsOf(deviceAcc[i]), bitsOf(hostAcc[i])) << "accumulated element " << i;

  std::vector<T> hostOut(count), deviceOut(count);
  ASSERT_TRUE(codec->decode(msg, count, typeOf(T{}), hostOut.data()).ok());
  for (size_t w = 0; w < workers; ++w)
    spans::decodeSpan(in, count, c.block, bf16, deviceOut.data(), w, workers);
  ASSERT_EQ(0, std::memcmp(hostOut.data(), deviceOut.data(), count * sizeof(T)))
      << "decoded values differ";
}

TEST(CodecSpans, Int8DecodeIsTheHostCodecsValues) {
  uint64_t seed = 100;
  for (const Int8Case& c : kInt8Cases)
    for (size_t count : {size_t(1), size_t(777), size_t(9001)})
      for (size_t workers : {size_t(1), size_t(5)}) {
        checkInt8Decode<float>(c, count, workers, ++seed);
        checkInt8Decode<Half>(c, count, workers, ++seed);
        checkInt8Decode<BFloat16>(c, count, workers, ++seed);
      }
}

// ---- Top-k ----

// The selection topkSelect makes: radix passes over the counts of the next digit, then every
// key at or above the cut in index order (what CUB's stable select writes). *passes: how many
// counting passes ran.
template <typename T>
std::vector<uint32_t> selectAsDevice(const T* v, size_t count, size_t k, int* passes) {
  spans::RadixState s = spans::radixStart(k);
  *passes = 0;
  while (!s.done) {
    uint32_t counts[spans::kRadixBins] = {};
    for (size_t i = 0; i < count; ++i) {
      const int d = spans::topkDigit(v, i, s);
      if (d >= 0) ++counts[d];
    }
    spans::chooseDigit(counts, &s);
    ++*passes;
  }
  std::vector<uint32_t> kept;
  for (size_t i = 0; i < count; ++i)
    if (spans::topkKept(v, i, s.prefix)) kept.push_back(uint32_t(i));
  return kept;
}

// The message topkEncode writes (header aside) and its residual, computed as the kernels do.
template <typename T>
std::vector<unsigned char> topkEncodeAsDevice(const T* x, float* residual, size_t count, size_t k,
                                              int* passes) {
  std::vector<uint32_t> kept;
  if (residual) {
    spans::addInputSpan(residual, x, count, 0, 1);
    kept = selectAsDevice(residual, count, k, passes);
  } else {
    kept = selectAsDevice(x, count, k, passes);
  }
  std::vector<unsigned char> payload(8 * kept.size());
  for (size_t j = 0; j < kept.size(); ++j) {
    const float value =
        residual ? spans::topkValue(residual, kept[j]) : spans::topkValue(x, kept[j]);
    std::memcpy(payload.data() + 4 * j, &kept[j], 4);
    std::memcpy(payload.data() + 4 * kept.size() + 4 * j, &value, 4);
  }
  if (residual)
    for (uint32_t i : kept) residual[i] = 0.0f;
  return payload;
}

template <typename T>
void checkTopkEncode(const std::vector<float>& values, double ratio, bool residual,
                     const std::string& what) {
  const size_t count = values.size();
  SCOPED_TRACE(what + " " + kernels::typeName(typeOf(T{})) + " ratio " + std::to_string(ratio) +
               " count " + std::to_string(count) + (residual ? " with residual" : ""));
  auto codec = testing::topkCodec(ratio);
  const std::vector<T> x = asType<T>(values);
  std::vector<float> hostResidual = testing::normal(count, count, 0.5f);
  std::vector<float> deviceResidual = hostResidual;
  const auto msg = testing::encode(*codec, x.data(), count, typeOf(T{}),
                                   residual ? hostResidual.data() : nullptr);
  int passes = 0;
  const auto payload = topkEncodeAsDevice(x.data(), residual ? deviceResidual.data() : nullptr,
                                          count, codec->keptCount(count), &passes);
  EXPECT_LE(passes, spans::kRadixPasses);
  ASSERT_EQ(payload.size(), msg.size() - sizeof(Header)) << "kept a different number";
  ASSERT_EQ(0, std::memcmp(payload.data(), msg.data() + sizeof(Header), payload.size()))
      << "the device's pairs differ from the host codec's";
  if (residual) {
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(bitsOf(deviceResidual[i]), bitsOf(hostResidual[i])) << "residual " << i;
  }
}

template <typename T>
void checkTopkAllWays(const std::vector<float>& values, const std::string& what) {
  for (double ratio : {0.001, 0.01, 0.3, 1.0})
    for (bool residual : {false, true}) checkTopkEncode<T>(values, ratio, residual, what);
}

TEST(CodecSpans, TopkEncodeIsTheHostCodecsBytes) {
  for (size_t count : {size_t(1), size_t(10), size_t(5000), size_t(70001)}) {
    const auto values = awkward(count, count);
    checkTopkAllWays<float>(values, "awkward");
    checkTopkAllWays<Half>(values, "awkward");
    checkTopkAllWays<BFloat16>(values, "awkward");
  }
}

// Equal magnitudes (x and -x, and many zeros) are ranked by index: the lower first.
TEST(CodecSpans, TopkTiesAndZerosGoByIndex) {
  std::mt19937_64 rng(7);
  std::vector<float> ties(20000), sparse(20000, 0.0f), flat(3000, -2.5f);
  for (float& x : ties) x = float(int(rng() % 7) - 3) * 0.25f;
  for (size_t i = 0; i < sparse.size(); i += 97) sparse[i] = float(i % 13) - 6.0f;
  for (size_t i = 1; i < flat.size(); i += 2) flat[i] = 2.5f;
  for (const auto* v : {&ties, &sparse, &flat}) {
    checkTopkAllWays<float>(*v, "ties");
    checkTopkAllWays<BFloat16>(*v, "ties");
  }
}

// The radix selection alone against the host's, for every k of a small buffer of ties and
// non-finite values: the selection is the same set, in the same order.
TEST(CodecSpans, RadixSelectionIsSelectTopKForEveryK) {
  std::vector<float> v = {3.0f,
                          -3.0f,
                          0.0f,
                          -0.0f,
                          std::numeric_limits<float>::infinity(),
                          1.0f,
                          std::numeric_limits<float>::quiet_NaN(),
                          -1.0f,
                          3.0f,
                          0.5f,
                          -std::numeric_limits<float>::infinity(),
                          FLT_MIN,
                          fromBits(1),
                          2.0f};
  for (size_t k = 1; k <= v.size(); ++k) {
    std::vector<uint32_t> host;
    selectTopK(v.data(), v.size(), k, &host);
    int passes = 0;
    EXPECT_EQ(selectAsDevice(v.data(), v.size(), k, &passes), host) << "k " << k;
  }
}

// Distinct magnitudes decide in the magnitude's four digits; only ties need the index's.
TEST(CodecSpans, RadixSelectionStopsOnceTheCutIsKnown) {
  std::vector<float> v(4096);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i + 1) * (i % 2 ? 1.0f : -1.0f);
  int passes = 0;
  auto kept = selectAsDevice(v.data(), v.size(), 100, &passes);
  EXPECT_LE(passes, 4);
  ASSERT_EQ(kept.size(), 100u);
  EXPECT_EQ(kept.front(), 3996u);
  std::vector<float> same(4096, 1.0f);
  kept = selectAsDevice(same.data(), same.size(), 100, &passes);
  EXPECT_GT(passes, 4);
  ASSERT_EQ(kept.size(), 100u);
  EXPECT_EQ(kept.back(), 99u);
}

}  // namespace
}  // namespace braid::compress
