// AllReduce schedules of every algorithm, run in memory for every rank: every element ends as
// the exact sum (or average) of all ranks' inputs, in place and out of place, for awkward counts
// and chunk sizes.
#include <gtest/gtest.h>

#include "algos/direct_allreduce.h"
#include "algos/ring_allreduce.h"
#include "common/schedule_sim.h"

namespace braid {
namespace {

void check(const algos::Algorithm& algo, int n, size_t count, size_t chunk, bool inPlace,
           bool average) {
  std::vector<algos::Schedule> schedules;
  std::vector<testing::SimRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    algos::CollArgs a;
    a.count = count;
    a.rank = r;
    a.nranks = n;
    a.inPlace = inPlace;
    a.average = average;
    a.chunkCount = chunk;
    a.typeSize = 8;
    a.directMaxBytes = ~size_t{0};
    schedules.push_back(algo.build(a));
    ranks[r].send.resize(count);
    for (size_t e = 0; e < count; ++e)
      ranks[r].send[e] = static_cast<int64_t>((r + 1) * 1000003 + e * 7);
    ranks[r].recv = inPlace ? ranks[r].send : std::vector<int64_t>(count, -1);
  }
  if (inPlace)
    for (auto& rk : ranks) rk.send.clear();
  std::vector<testing::SimRank> inputs = ranks;
  std::string err = testing::simulate(schedules, ranks);
  ASSERT_EQ(err, "") << algo.name() << " n=" << n << " count=" << count << " chunk=" << chunk;
  for (size_t e = 0; e < count; ++e) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += (inPlace ? inputs[r].recv[e] : inputs[r].send[e]);
    int64_t want = average ? sum / n : sum;
    for (int r = 0; r < n; ++r)
      ASSERT_EQ(ranks[r].recv[e], want)
          << "n=" << n << " count=" << count << " rank " << r << " elem " << e;
  }
}

TEST(AllReduceSchedule, RingEveryRankCountAndChunk) {
  algos::RingAllReduce ring;
  for (int n = 1; n <= 17; ++n)
    for (size_t count :
         {0ul, 1ul, 7ul, static_cast<size_t>(n - 1), static_cast<size_t>(n), 1000ul, 1003ul})
      for (size_t chunk : {1ul, 3ul, 64ul, 100000ul})
        for (bool inPlace : {false, true}) check(ring, n, count, chunk, inPlace, false);
}

TEST(AllReduceSchedule, DirectEveryRankAndCount) {
  algos::DirectAllReduce direct;
  for (int n = 1; n <= 17; ++n)
    for (size_t count : {0ul, 1ul, 7ul, static_cast<size_t>(n), 333ul})
      for (bool inPlace : {false, true}) check(direct, n, count, 1, inPlace, false);
}

TEST(AllReduceSchedule, AverageDividesOnce) {
  algos::RingAllReduce ring;
  algos::DirectAllReduce direct;
  for (int n : {2, 3, 5, 8}) {
    check(ring, n, 103, 4, false, true);
    check(direct, n, 103, 4, true, true);
  }
}

TEST(AllReduceSchedule, RingPeersAreNeighbours) {
  algos::RingAllReduce ring;
  algos::CollArgs a;
  a.count = 100;
  a.rank = 2;
  a.nranks = 5;
  a.chunkCount = 10;
  algos::Schedule s = ring.build(a);
  EXPECT_EQ(s.peers, (std::vector<int>{1, 3}));
}

}  // namespace
}  // namespace braid
