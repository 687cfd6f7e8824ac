// Top-k sparsification: exactly the k largest magnitudes, ties broken by the lower index,
// NaN and Inf first, residuals, decode, and the sparse-or-dense estimate.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "compress_test_util.h"

namespace braid::compress {
namespace {

using namespace testing;

// The rule, stated the slow way: sort by (|v| desc, index asc), NaN above Inf above finite.
std::vector<uint32_t> reference(const std::vector<float>& v, size_t k) {
  std::vector<uint32_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0u);
  auto mag = [&](uint32_t i) { return bitsOf(v[i]) & 0x7fffffffu; };
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return mag(a) > mag(b); });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

// Values from a small set, so that many magnitudes tie (including +x and -x).
std::vector<float> tied(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = float(int(rng() % 9) - 4) * 0.5f;
  return v;
}

struct Message {
  std::vector<uint32_t> indices;
  std::vector<float> values;
};

Message parse(const std::vector<std::byte>& msg, size_t k) {
  Message m{std::vector<uint32_t>(k), std::vector<float>(k)};
  EXPECT_EQ(msg.size(), 16 + 8 * k);
  std::memcpy(m.indices.data(), msg.data() + 16, 4 * k);
  std::memcpy(m.values.data(), msg.data() + 16 + 4 * k, 4 * k);
  return m;
}

TEST(TopK, KeepsExactlyTheKLargestWithTiesByIndex) {
  for (size_t n : {size_t(1), size_t(7), size_t(100), size_t(10007), size_t(200003)}) {
    for (double ratio : {0.001, 0.01, 0.1, 0.5, 1.0}) {
      for (int dist = 0; dist < 2; ++dist) {
        std::vector<float> v = dist ? tied(n, n) : normal(n, n);
        auto codec = topkCodec(ratio);
        size_t k = codec->keptCount(n);
        ASSERT_EQ(k, std::clamp<size_t>(size_t(std::llround(ratio * n)), 1, n));
        auto msg = encode(*codec, v.data(), n, ncclFloat32);
        Message m = parse(msg, k);
        ASSERT_EQ(m.indices, reference(v, k))
            << "n " << n << " ratio " << ratio << " dist " << dist;
        for (size_t j = 0; j < k; ++j) ASSERT_EQ(bitsOf(m.values[j]), bitsOf(v[m.indices[j]]));
      }
    }
  }
}

// Mostly zeros (a sparse sum fed back in place): fewer, exactly, or a few more nonzero values
// than k; zeros fill up from the lowest index when needed.
TEST(TopK, MostlyZeroInputs) {
  for (size_t n : {size_t(5000), size_t(300007)}) {
    auto codec = topkCodec(0.01);
    const size_t k = codec->keptCount(n);
    for (size_t nonzero : {size_t(0), size_t(1), k / 2, k - 1, k, k + 1, 3 * k}) {
      std::vector<float> v(n, 0.0f);
      std::mt19937_64 rng(nonzero);
      for (size_t j = 0; j < nonzero; ++j)
        v[rng() % n] = float(int(rng() % 7) - 3 == 0 ? 1 : int(rng() % 7) - 3);
      for (size_t j = 0; j < n; j += 97) v[j] = -0.0f;  // negative zeros tie with zeros
      auto msg = encode(*codec, v.data(), n, ncclFloat32);
      Message m = parse(msg, k);
      ASSERT_EQ(m.indices, reference(v, k)) << "n " << n << " nonzero " << nonzero;
    }
  }
}

TEST(TopK, NanAndInfRankFirstAndArriveExactly) {
  std::vector<float> v = normal(1000, 5);
  v[10] = NAN;
  v[500] = -INFINITY;
  v[999] = INFINITY;
  v[20] = 1e30f;
  auto codec = topkCodec(0.004);  // k = 4
  std::vector<float> y = decoded(*codec, encode(*codec, v.data(), v.size(), ncclFloat32), v.size());
  EXPECT_TRUE(std::isnan(y[10]));
  EXPECT_EQ(y[500], -INFINITY);
  EXPECT_EQ(y[999], INFINITY);
  EXPECT_EQ(y[20], 1e30f);
  // More non-finite values than k: the k sent are non-finite, the rest wait in the residual.
  std::vector<float> many(100, 1.0f), residual(100, 0.0f);
  for (size_t i = 0; i < 10; ++i) many[i * 7] = NAN;
  auto small = topkCodec(0.05);  // k = 5
  std::vector<float> z =
      decoded(*small, encode(*small, many.data(), 100, ncclFloat32, residual.data()), 100);
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(std::isnan(z[i * 7])) << i;
  for (size_t i = 5; i < 10; ++i) EXPECT_TRUE(std::isnan(residual[i * 7])) << i;
}

TEST(TopK, ResidualKeepsWhatWasNotSent) {
  std::vector<float> v = normal(5000, 9), residual = normal(5000, 10, 0.1f);
  std::vector<float> before = residual;
  auto codec = topkCodec(0.02);
  auto msg = encode(*codec, v.data(), v.size(), ncclFloat32, residual.data());
  std::vector<float> y = decoded(*codec, msg, v.size());
  size_t sent = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    float total = v[i] + before[i];
    if (y[i] != 0.0f) {
      ++sent;
      EXPECT_EQ(y[i], total) << i;
      EXPECT_EQ(residual[i], 0.0f) << i;
    } else {
      EXPECT_EQ(residual[i], total) << i;
    }
  }
  EXPECT_EQ(sent, 100u);
}

TEST(TopK, HalfInputAndDecodeIntoTypes) {
  std::vector<float> v = normal(300, 2);
  std::vector<kernels::BFloat16> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = kernels::floatToBf16(v[i]);
  auto codec = topkCodec(0.1);
  auto msg = encode(*codec, b.data(), v.size(), ncclBfloat16);
  std::vector<float> widened(v.size());
  for (size_t i = 0; i < v.size(); ++i) widened[i] = kernels::bf16ToFloat(b[i]);
  Message m = parse(msg, 30);
  EXPECT_EQ(m.indices, reference(widened, 30));
  std::vector<kernels::Half> h(v.size(), kernels::Half{0x1234});
  ASSERT_TRUE(codec->decode(msg, v.size(), ncclFloat16, h.data()).ok());
  std::vector<float> acc(v.size(), 1.0f);
  ASSERT_TRUE(codec->decodeAccumulate(msg, v.size(), acc.data()).ok());
  size_t j = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    bool kept = j < m.indices.size() && m.indices[j] == i;
    EXPECT_EQ(h[i].bits, kept ? kernels::floatToHalf(widened[i]).bits : 0) << i;
    EXPECT_EQ(acc[i], kept ? 1.0f + widened[i] : 1.0f) << i;
    j += kept;
  }
}

TEST(TopK, DecoderRefusesDamagedIndices) {
  std::vector<float> v = normal(100, 4), acc(100);
  auto codec = topkCodec(0.1);
  auto msg = encode(*codec, v.data(), 100, ncclFloat32);
  auto bad = msg;
  uint32_t big = 100;
  std::memcpy(bad.data() + 16, &big, 4);
  EXPECT_FALSE(codec->decodeAccumulate(bad, 100, acc.data()).ok());
  auto unsorted = msg;
  std::memcpy(unsorted.data() + 16, msg.data() + 20, 4);
  std::memcpy(unsorted.data() + 20, msg.data() + 16, 4);
  EXPECT_FALSE(codec->decodeAccumulate(unsorted, 100, acc.data()).ok());
  EXPECT_FALSE(codec->decodeAccumulate(msg, 101, acc.data()).ok());
  std::unique_ptr<TopKCodec> c;
  EXPECT_FALSE(TopKCodec::create({0.0}, &c).ok());
  EXPECT_FALSE(TopKCodec::create({1.5}, &c).ok());
}

TEST(TopK, SparseBeatsDenseOnlyWhileRanksTimesDensityIsBelowOne) {
  // d = 1%: union of 64 ranks' indices is 47% of the buffer (prior-art figure).
  ExchangeEstimate e64 = estimateExchange(10000, 1000000, 64);
  EXPECT_NEAR(e64.unionDensity, 0.474, 0.001);
  EXPECT_FALSE(e64.denseCheaper);
  EXPECT_TRUE(estimateExchange(10000, 1000000, 128).denseCheaper);
  EXPECT_NEAR(estimateExchange(50000, 1000000, 64).unionDensity, 0.962, 0.001);
  EXPECT_TRUE(estimateExchange(50000, 1000000, 64).denseCheaper);
  ExchangeEstimate one = estimateExchange(10, 1000, 1);
  EXPECT_EQ(one.sparseBytes, 0.0);
  EXPECT_EQ(one.denseBytes, 0.0);
  EXPECT_FALSE(one.denseCheaper);
}

}  // namespace
}  // namespace braid::compress
