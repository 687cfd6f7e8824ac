// Schedules of every collective but AllReduce, as selectAlgorithm picks them, run in memory for
// every rank: each rank's buffers must end exactly as NCCL defines the result (outputs) and
// untouched everywhere else, with ranks mixing in and out of place, and Avg; then their shapes.
// Sends complete only when their receive is ready (so no schedule relies on buffering). The
// sweeps over rank counts, counts, chunks, roots and placements of every collective, the
// defaults here included, are tests/unit/registry_test.cc's.
#include <gtest/gtest.h>

#include <sstream>

#include "algos/algorithm.h"
#include "common/collective_reference.h"
#include "common/schedule_sim.h"

namespace braid {
namespace {

using algos::Collective;
using testing::rooted;

struct Case {
  Collective coll;
  int n;
  size_t count;
  size_t chunk;
  int root = 0;
  bool inPlace = false;
  bool average = false;
  bool mixed = false;  // odd ranks in place, even ranks not: each rank decides for itself
};

// The case as rank r sees it.
Case onRank(Case c, int r) {
  if (c.mixed) c.inPlace = r % 2 == 1;
  return c;
}

std::string describe(const Case& c) {
  std::ostringstream os;
  os << algos::collectiveName(c.coll) << " n=" << c.n << " count=" << c.count
     << " chunk=" << c.chunk << " root=" << c.root
     << (c.mixed     ? " mixed"
         : c.inPlace ? " in-place"
                     : " out-of-place")
     << (c.average ? " avg" : "");
  return os.str();
}

algos::CollArgs argsFor(const Case& c, int rank) {
  algos::CollArgs a;
  a.coll = c.coll;
  a.count = c.count;
  a.average = c.average;
  a.root = c.root;
  a.inPlace = c.inPlace;
  a.rank = rank;
  a.nranks = c.n;
  a.chunkCount = c.chunk;
  a.typeSize = 8;
  return a;
}

void check(const Case& c, testing::SendMode mode = testing::SendMode::Rendezvous) {
  SCOPED_TRACE(describe(c) + (mode == testing::SendMode::Buffered ? " buffered" : " rendezvous"));
  std::vector<algos::Schedule> schedules;
  std::vector<testing::SimRank> ranks;
  std::vector<testing::Expectation> want;
  for (int r = 0; r < c.n; ++r) {
    const algos::CollArgs a = argsFor(onRank(c, r), r);
    const algos::Algorithm* algo = algos::selectAlgorithm(a, "");
    ASSERT_NE(algo, nullptr);
    schedules.push_back(algo->build(a));
    const Case mine = onRank(c, r);
    want.push_back(testing::expectation(
        {mine.coll, mine.n, mine.count, mine.root, mine.inPlace, mine.average}, r));
    ranks.push_back(want.back().before);
  }
  ASSERT_EQ(testing::simulate(schedules, ranks, mode), "");
  for (int r = 0; r < c.n; ++r) {
    ASSERT_EQ(ranks[r].recv, want[r].after.recv) << "recvbuff of rank " << r;
    ASSERT_EQ(ranks[r].send, want[r].after.send) << "sendbuff of rank " << r;
  }
}

// Whether a call is in place is each rank's own business (NCCL compares that rank's pointers):
// the messages must not change with it.
TEST(CollectiveSchedule, RanksMixInPlaceAndOutOfPlace) {
  for (Collective coll :
       {Collective::Broadcast, Collective::Reduce, Collective::AllGather, Collective::ReduceScatter,
        Collective::AlltoAll, Collective::Gather, Collective::Scatter})
    for (int n : {2, 3, 4, 7})
      for (int root = 0; root < (rooted(coll) ? n : 1); ++root)
        for (size_t chunk : {size_t{2}, size_t{1000}}) {
          Case c{coll, n, 11, chunk, root};
          c.mixed = true;
          c.average = coll == Collective::Reduce || coll == Collective::ReduceScatter;
          check(c);
        }
}

// Avg divides exactly once per element, on the rank that owns the result.
TEST(CollectiveSchedule, AverageDividesOnce) {
  for (Collective coll : {Collective::Reduce, Collective::ReduceScatter})
    for (int n : {1, 2, 3, 5, 8})
      for (size_t chunk : {size_t{1}, size_t{4}, size_t{1000}})
        for (bool inPlace : {false, true})
          for (int root : {0, n - 1}) check({coll, n, 103, chunk, root, inPlace, true});
}

// The receiver must cut the stream exactly as the sender does, or sizes disagree.
TEST(CollectiveSchedule, SendAndRecvChunkAlike) {
  for (size_t count : {size_t{0}, size_t{5}, size_t{64}, size_t{65}}) {
    Case send{Collective::Send, 2, count, 8, 1}, recv{Collective::Recv, 2, count, 8, 0};
    const algos::Schedule s = algos::selectAlgorithm(argsFor(send, 0), "")->build(argsFor(send, 0));
    const algos::Schedule r = algos::selectAlgorithm(argsFor(recv, 1), "")->build(argsFor(recv, 1));
    ASSERT_EQ(s.steps.size(), r.steps.size());
    EXPECT_EQ(s.steps.size(), (count + 7) / 8);
    for (size_t i = 0; i < s.steps.size(); ++i)
      EXPECT_EQ(s.steps[i].src.count, r.steps[i].dst.count);
  }
}

// A middle rank of the broadcast chain forwards chunk k as soon as chunk k has arrived: the
// send waits for that one receive, not for the whole buffer.
TEST(CollectiveSchedule, BroadcastForwardsChunkByChunk) {
  const Case c{Collective::Broadcast, 4, 100, 10, 1};
  const algos::CollArgs a = argsFor(c, 2);
  const algos::Schedule s = algos::selectAlgorithm(a, "")->build(a);
  EXPECT_EQ(s.peers, (std::vector<int>{1, 3}));
  size_t sends = 0;
  for (uint32_t i = 0; i < s.steps.size(); ++i) {
    const algos::Step& st = s.steps[i];
    if (st.kind != algos::StepKind::Send) continue;
    ++sends;
    ASSERT_EQ(st.depCount, 1u) << "send " << i;
    const algos::Step& dep = s.steps[s.deps[st.depBegin]];
    EXPECT_EQ(dep.kind, algos::StepKind::Recv);
    EXPECT_EQ(dep.dst.offset, st.src.offset);
  }
  EXPECT_EQ(sends, 10u);
}

// Ring collectives talk to their two neighbours only.
TEST(CollectiveSchedule, RingPeersAreNeighbours) {
  for (Collective coll : {Collective::AllGather, Collective::ReduceScatter}) {
    const algos::CollArgs a = argsFor({coll, 6, 50, 4}, 0);
    EXPECT_EQ(algos::selectAlgorithm(a, "")->build(a).peers, (std::vector<int>{1, 5}));
  }
}

// Each collective has one default builder, except AllReduce: direct for small calls, then ring.
// (The topology-aware builders registered after them are picked only by name.)
TEST(CollectiveSchedule, EveryCollectiveHasOneDefaultBuilder) {
  const std::vector<std::pair<Collective, std::string_view>> defaults = {
      {Collective::Broadcast, "chain"},   {Collective::Reduce, "chain"},
      {Collective::AllGather, "ring"},    {Collective::ReduceScatter, "ring"},
      {Collective::AlltoAll, "pairwise"}, {Collective::Gather, "direct"},
      {Collective::Scatter, "direct"},    {Collective::Send, "p2p"},
      {Collective::Recv, "p2p"}};
  for (const auto& [coll, name] : defaults) {
    const algos::CollArgs a = argsFor({coll, 4, 10, 4}, 0);
    const algos::Algorithm* chosen = algos::selectAlgorithm(a, "");
    ASSERT_NE(chosen, nullptr) << algos::collectiveName(coll);
    EXPECT_EQ(chosen->name(), name) << algos::collectiveName(coll);
    // Forcing an algorithm that does not support the call falls back to the default.
    EXPECT_EQ(algos::selectAlgorithm(a, "no-such-algorithm"), chosen);
  }
  algos::CollArgs small = argsFor({Collective::AllReduce, 4, 10, 4}, 0);
  small.directMaxBytes = 1024;
  EXPECT_EQ(algos::selectAlgorithm(small, "")->name(), "direct");
  EXPECT_EQ(algos::selectAlgorithm(small, "ring")->name(), "ring");
  algos::CollArgs large = small;
  large.count = 1000;
  EXPECT_EQ(algos::selectAlgorithm(large, "")->name(), "ring");
}

}  // namespace
}  // namespace braid
