// Error feedback: over T calls the decoded messages add up to the inputs minus the last
// residual; the residual store's LRU bound, byte accounting and resets.
#include <gtest/gtest.h>

#include "compress/error_feedback.h"
#include "compress_test_util.h"

namespace braid::compress {
namespace {

using namespace testing;

// Runs T calls of one tensor through codec, with or without feedback, and returns the largest
// |sum of decoded + last residual - sum of inputs| relative to the largest |sum of inputs|.
double feedbackDrift(const Codec& codec, bool feedback, int calls, size_t n) {
  std::vector<double> sumIn(n, 0.0), sumOut(n, 0.0);
  std::vector<float> residual(n, 0.0f);
  for (int t = 0; t < calls; ++t) {
    std::vector<float> x = normal(n, 1000 + t);
    for (size_t i = 0; i < n; ++i) sumIn[i] += x[i];
    auto msg = encode(codec, x.data(), n, ncclFloat32, feedback ? residual.data() : nullptr, t);
    std::vector<float> y = decoded(codec, msg, n);
    for (size_t i = 0; i < n; ++i) sumOut[i] += y[i];
  }
  double worst = 0, scale = 0;
  for (size_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(sumOut[i] + residual[i] - sumIn[i]));
    scale = std::max(scale, std::fabs(sumIn[i]));
  }
  return worst / scale;
}

TEST(ErrorFeedback, DecodedSumEqualsInputSumUpToTheLastResidual) {
  constexpr int kCalls = 100;
  constexpr size_t kN = 2000;
  auto nearest = int8Codec(64);
  auto stochastic = int8Codec(32, Rounding::Stochastic, ScaleFormat::Bf16);
  auto topk = topkCodec(0.05);
  for (const Codec* codec :
       {static_cast<const Codec*>(nearest.get()), static_cast<const Codec*>(stochastic.get()),
        static_cast<const Codec*>(topk.get())}) {
    // Only fp32 rounding of the running residual separates the two sides.
    EXPECT_LT(feedbackDrift(*codec, true, kCalls, kN), 1e-5) << codec->name();
    // Without feedback the error is the codec's own, and it does not cancel.
    EXPECT_GT(feedbackDrift(*codec, false, kCalls, kN), 1e-3) << codec->name();
  }
}

TEST(ErrorFeedback, ResidualStaysSmallWithFeedback) {
  // The residual is bounded by what one call leaves behind; it does not grow with T.
  auto codec = int8Codec(64);
  std::vector<float> residual(1000, 0.0f);
  float worst = 0;
  for (int t = 0; t < 100; ++t) {
    std::vector<float> x = normal(1000, t);
    encode(*codec, x.data(), 1000, ncclFloat32, residual.data(), t);
    for (float r : residual) worst = std::max(worst, std::fabs(r));
  }
  EXPECT_LT(worst, 6.0f / 127);  // half a step of blocks whose max is below 6 sigma, doubled
}

ResidualKey key(uint64_t comm, uintptr_t buffer, size_t count = 100) {
  return {comm, buffer, count, ncclFloat32};
}

TEST(ResidualStore, LeastRecentlyUsedIsEvictedFirstAndBytesAreCounted) {
  ResidualStore store(1200);  // three residuals of 100 floats
  auto a = store.acquire(key(1, 0xa));
  auto b = store.acquire(key(1, 0xb));
  auto c = store.acquire(key(1, 0xc));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(store.bytesUsed(), 1200u);
  a->values[0] = 5.0f;
  EXPECT_EQ(store.acquire(key(1, 0xa)), a);  // touches a: b is now the oldest
  auto d = store.acquire(key(1, 0xd));
  ASSERT_TRUE(d);
  ResidualStats s = store.stats();
  EXPECT_EQ(s.bytes, 1200u);
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_NE(store.acquire(key(1, 0xb)), b);  // b was dropped: a fresh, zeroed one (evicts c)
  EXPECT_EQ(b->values[0], 0.0f);             // the holder's copy stayed valid
  EXPECT_EQ(store.acquire(key(1, 0xa))->values[0], 5.0f);
  EXPECT_EQ(store.stats().evictions, 2u);
  // Another shape or type of the same buffer is another tensor.
  EXPECT_NE(store.acquire(key(1, 0xa, 50)), a);
  ResidualKey half = key(1, 0xa);
  half.type = ncclFloat16;
  EXPECT_NE(store.acquire(half), a);
}

TEST(ResidualStore, BoundFromTheEnvironment) {
  unsetenv("BRAID_COMPRESS_STATE_BYTES");
  EXPECT_EQ(ResidualStore::capacityFromEnv(), size_t(1) << 30);
  setenv("BRAID_COMPRESS_STATE_BYTES", "4096", 1);
  EXPECT_EQ(ResidualStore::capacityFromEnv(), 4096u);
  unsetenv("BRAID_COMPRESS_STATE_BYTES");
}

TEST(ResidualStore, RefusesWhatCannotFitAndResets) {
  ResidualStore store(1000);
  EXPECT_EQ(store.acquire(key(1, 1, 251)), nullptr);
  EXPECT_EQ(store.stats().refused, 1u);
  EXPECT_EQ(store.bytesUsed(), 0u);
  ASSERT_TRUE(store.acquire(key(1, 1, 50)));
  ASSERT_TRUE(store.acquire(key(2, 1, 50)));
  ASSERT_TRUE(store.acquire(key(2, 2, 50)));
  EXPECT_EQ(store.bytesUsed(), 600u);
  EXPECT_TRUE(store.reset(key(1, 1, 50)));
  EXPECT_FALSE(store.reset(key(1, 1, 50)));
  EXPECT_EQ(store.bytesUsed(), 400u);
  EXPECT_EQ(store.resetComm(2), 2u);
  EXPECT_EQ(store.bytesUsed(), 0u);
  ASSERT_TRUE(store.acquire(key(3, 1, 50)));
  store.resetAll();
  EXPECT_EQ(store.stats().entries, 0u);
  EXPECT_EQ(store.bytesUsed(), 0u);
}

TEST(ResidualStore, EncodeWithFeedbackCarriesTheResidualAcrossCalls) {
  ResidualStore store(1 << 20);
  auto codec = topkCodec(0.5);
  std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f};
  std::vector<std::byte> out(codec->maxEncodedBytes(4, ncclFloat32));
  size_t written;
  ResidualKey k{7, uintptr_t(x.data()), 4, ncclFloat32};
  ASSERT_TRUE(encodeWithFeedback(*codec, store, k, x.data(), 0, out, &written).ok());
  auto r = store.acquire(k);
  EXPECT_EQ(std::vector<float>(r->values.get(), r->values.get() + 4),
            (std::vector<float>{1, 2, 0, 0}));
  ASSERT_TRUE(encodeWithFeedback(*codec, store, k, x.data(), 1, out, &written).ok());
  // Now input + residual is {2, 4, 3, 4}: the two 4s go, 2 and 3 wait.
  std::vector<float> acc = decoded(*codec, out, 4);
  EXPECT_EQ(acc, (std::vector<float>{0, 4, 0, 4}));
  EXPECT_EQ(std::vector<float>(r->values.get(), r->values.get() + 4),
            (std::vector<float>{2, 0, 3, 0}));
  EXPECT_EQ(store.stats().bytes, 16u);
}

}  // namespace
}  // namespace braid::compress
