// No count makes a schedule unbounded: with the pipeline chunk the planner chooses
// (algos::pipelineChunk), every registered exact algorithm builds, for calls far larger than any
// host holds, a schedule whose steps are bounded by the chunk limit and the rank count. (The
// planner refuses the counts whose bytes overflow before it gets here: inproc bounds_test.)
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "algos/algorithm.h"

namespace braid::algos {
namespace {

// 8 ranks per host, 2 hosts per rack: every level of the topology-aware builders exists.
const Topology& racks(int n) {
  static std::vector<std::unique_ptr<Topology>> cache(128);
  std::unique_ptr<Topology>& slot = cache[static_cast<size_t>(n)];
  if (!slot) {
    std::vector<int> hostOf, rackOf;
    for (int r = 0; r < n; ++r) hostOf.push_back(r / 8);
    for (int h = 0; h <= (n - 1) / 8; ++h) rackOf.push_back(h / 2);
    slot = std::make_unique<Topology>(
        Topology::hostsAndRacks(hostOf, rackOf, {0.5, 1e-4}, {2, 4e-4}, {5, 4e-3}));
  }
  return *slot;
}

constexpr Collective kCollectives[] = {
    Collective::AllReduce,     Collective::Broadcast, Collective::Reduce, Collective::AllGather,
    Collective::ReduceScatter, Collective::AlltoAll,  Collective::Gather, Collective::Scatter,
    Collective::Send,          Collective::Recv};

TEST(ScheduleBounds, ChunksGrowOnlyPastTheLimit) {
  EXPECT_EQ(pipelineChunk(Collective::AllReduce, 1000, 8, 4, 512 << 10), size_t{128} << 10);
  EXPECT_EQ(pipelineChunk(Collective::AllReduce, 1000, 8, 4, 1), 1u);
  const size_t atLimit = kMaxChunksPerCall * (size_t{128} << 10);  // 2 GiB of floats
  EXPECT_EQ(pipelineChunk(Collective::AllReduce, atLimit, 8, 4, 512 << 10), size_t{128} << 10);
  EXPECT_EQ(pipelineChunk(Collective::AllReduce, atLimit + 1, 8, 4, 512 << 10),
            (size_t{128} << 10) + 1);
  // A block collective counts all nranks blocks.
  EXPECT_EQ(pipelineChunk(Collective::AllGather, atLimit, 8, 4, 512 << 10), size_t{1} << 20);
}

TEST(ScheduleBounds, HugeCountsBuildBoundedSchedules) {
  int built = 0;
  for (int n : {1, 2, 5, 64}) {
    for (Collective coll : kCollectives) {
      // 2^42 elements, or 2^42 in all for a block collective: terabytes, far past any host.
      const bool blocks = coll == Collective::AllGather || coll == Collective::ReduceScatter ||
                          coll == Collective::AlltoAll || coll == Collective::Gather ||
                          coll == Collective::Scatter;
      const size_t count = (size_t{1} << 42) / (blocks ? static_cast<size_t>(n) : 1);
      for (const Algorithm* algo : algorithms()) {
        if (algo->compressed()) continue;
        for (int rank : {0, n - 1}) {
          CollArgs a;
          a.coll = coll;
          a.count = count;
          a.rank = rank;
          a.nranks = n;
          a.root = n > 1 ? 1 : 0;
          a.typeSize = 4;
          a.chunkCount = pipelineChunk(coll, count, n, 4, 512 << 10);
          a.directMaxBytes = SIZE_MAX;
          a.topology = &racks(n);
          if (!algo->supports(a)) continue;
          const Schedule s = algo->build(a);
          ++built;
          EXPECT_LE(s.steps.size(), 8 * (kMaxChunksPerCall + static_cast<size_t>(n)))
              << algo->name() << " " << collectiveName(coll) << " n=" << n << " rank=" << rank;
        }
      }
    }
  }
  EXPECT_GT(built, 40) << "the sweep builds schedules of most algorithms";
}

}  // namespace
}  // namespace braid::algos
