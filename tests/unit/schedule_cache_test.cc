// The communicator's schedule cache: hits by call shape, the other placement as a sibling,
// least-recently-used eviction by entries and by steps.
#include <gtest/gtest.h>

#include <memory>

#include "core/plan/schedule_cache.h"

namespace braid {
namespace {

algos::CollArgs args(size_t count, bool inPlace = false) {
  algos::CollArgs a;
  a.count = count;
  a.inPlace = inPlace;
  a.typeSize = 4;
  a.chunkCount = 1024;
  a.nranks = 2;
  return a;
}

ScheduleCache::Entry entry(const algos::CollArgs& a, size_t steps, double us = 1) {
  auto s = std::make_shared<algos::Schedule>();
  s->steps.resize(steps);
  return {a, nullptr, us, s};
}

TEST(ScheduleCache, HitsTheSameShapeOnly) {
  ScheduleCache cache;
  EXPECT_EQ(cache.find(args(10)), nullptr);
  cache.insert(entry(args(10), 3, 7.5));
  const ScheduleCache::Entry* hit = cache.find(args(10));
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->estimateUs, 7.5);
  EXPECT_EQ(cache.find(args(11)), nullptr);
  EXPECT_EQ(cache.find(args(10, true)), nullptr);
  algos::CollArgs other = args(10);
  other.root = 1;
  EXPECT_EQ(cache.find(other), nullptr);
  other = args(10);
  other.typeSize = 2;
  EXPECT_EQ(cache.find(other), nullptr);
  // The communicator's own fields are not part of the shape.
  other = args(10);
  other.directMaxBytes = 99;
  EXPECT_NE(cache.find(other), nullptr);
}

TEST(ScheduleCache, TheOtherPlacementIsTheSibling) {
  ScheduleCache cache;
  cache.insert(entry(args(10), 3, 2.0));
  EXPECT_EQ(cache.sibling(args(10)), nullptr);
  const ScheduleCache::Entry* s = cache.sibling(args(10, true));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->estimateUs, 2.0);
  EXPECT_EQ(cache.sibling(args(12, true)), nullptr);
}

// More shapes than a training step usually has (FSDP: a few per layer) stay cached.
TEST(ScheduleCache, KeepsAThousandShapes) {
  ScheduleCache cache;
  for (size_t c = 1; c <= 1000; ++c) cache.insert(entry(args(c), 4));
  for (size_t c = 1; c <= 1000; ++c) EXPECT_NE(cache.find(args(c)), nullptr) << c;
  EXPECT_EQ(cache.steps(), 4000u);
}

TEST(ScheduleCache, EvictsTheLeastRecentlyUsedByEntries) {
  ScheduleCache cache(3, 1000);
  for (size_t c = 1; c <= 3; ++c) cache.insert(entry(args(c), 1));
  ASSERT_NE(cache.find(args(1)), nullptr);  // now the most recent
  cache.insert(entry(args(4), 1));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.find(args(2)), nullptr);
  EXPECT_NE(cache.find(args(1)), nullptr);
  EXPECT_NE(cache.find(args(3)), nullptr);
  EXPECT_NE(cache.find(args(4)), nullptr);
}

TEST(ScheduleCache, EvictsByStepsButKeepsTheNewest) {
  ScheduleCache cache(100, 10);
  cache.insert(entry(args(1), 4));
  cache.insert(entry(args(2), 4));
  cache.insert(entry(args(3), 4));  // 12 steps: the oldest goes
  EXPECT_EQ(cache.find(args(1)), nullptr);
  EXPECT_EQ(cache.steps(), 8u);
  cache.insert(entry(args(4), 50));  // larger than the budget alone: kept, every other goes
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_NE(cache.find(args(4)), nullptr);
  EXPECT_EQ(cache.steps(), 50u);
}

}  // namespace
}  // namespace braid
