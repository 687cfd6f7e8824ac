// Schedules of every collective but AllReduce, as selectAlgorithm picks them, run in memory for
// every rank: each rank's buffers must end exactly as NCCL defines the result (outputs) and
// untouched everywhere else, for awkward counts, chunk sizes, every root, in and out of place,
// with sends that complete only when their receive is ready (so no schedule relies on buffering).
// A buffer NCCL does not give a rank (recvbuff off the root of a Reduce, ...) is empty here, so
// a schedule that touches it fails with "out of bounds".
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "algos/algorithm.h"
#include "algos/pattern.h"
#include "common/schedule_sim.h"

namespace braid {
namespace {

using algos::Collective;
using Values = std::vector<int64_t>;

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
  os << algos::collectiveName(c.coll) << " n=" << c.n << " count=" << c.count << " chunk=" << c.chunk
     << " root=" << c.root << (c.mixed ? " mixed" : c.inPlace ? " in-place" : " out-of-place")
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

constexpr int64_t kUnset = -1;

// Distinct for every rank and element, so a misplaced block cannot go unnoticed.
int64_t value(int rank, size_t e) { return (rank + 1) * 1000003 + static_cast<int64_t>(e) * 7; }

Values inputOf(int rank, size_t len) {
  Values v(len);
  for (size_t e = 0; e < len; ++e) v[e] = value(rank, e);
  return v;
}

int64_t reduced(const Case& c, size_t e) {
  int64_t sum = 0;
  for (int r = 0; r < c.n; ++r) sum += value(r, e);
  return c.average ? sum / c.n : sum;
}

// Overwrites `count` elements of `v` at block `index` with f(e).
template <typename F>
void setBlock(Values& v, size_t index, size_t count, F f) {
  for (size_t e = 0; e < count; ++e) v[index * count + e] = f(e);
}

// One rank's buffers before the call, and what they must hold after it.
struct Expectation {
  testing::SimRank before, after;
};

Expectation expectation(const Case& c, int r) {
  const size_t count = c.count, n = static_cast<size_t>(c.n), rank = static_cast<size_t>(r);
  const bool root = r == c.root;
  const Values unset(count, kUnset), unsetAll(n * count, kUnset);
  testing::SimRank before, after;
  // Whole-buffer in-place calls hold their input in recvbuff (see algos::inputBuffer).
  auto input = [&](Values v) { (c.inPlace ? before.recv : before.send) = std::move(v); };
  switch (c.coll) {
    case Collective::Broadcast: {
      const Values data = inputOf(c.root, count);
      if (root) input(data);
      if (!root || !c.inPlace) before.recv = unset;
      after = before;
      after.recv = data;
      break;
    }
    case Collective::Reduce: {
      input(inputOf(r, count));
      if (root && !c.inPlace) before.recv = unset;
      after = before;
      if (root)
        for (size_t e = 0; e < count; ++e) after.recv[e] = reduced(c, e);
      break;
    }
    case Collective::AllGather: {
      if (c.inPlace) {
        before.recv = unsetAll;
        setBlock(before.recv, rank, count, [&](size_t e) { return value(r, e); });
      } else {
        before.send = inputOf(r, count);
        before.recv = unsetAll;
      }
      after = before;
      for (int p = 0; p < c.n; ++p) setBlock(after.recv, p, count, [&](size_t e) { return value(p, e); });
      break;
    }
    case Collective::ReduceScatter: {
      before.send = inputOf(r, n * count);
      if (!c.inPlace) before.recv = unset;
      after = before;
      if (c.inPlace)
        setBlock(after.send, rank, count, [&](size_t e) { return reduced(c, rank * count + e); });
      else
        setBlock(after.recv, 0, count, [&](size_t e) { return reduced(c, rank * count + e); });
      break;
    }
    case Collective::AlltoAll: {
      input(inputOf(r, n * count));
      if (!c.inPlace) before.recv = unsetAll;
      after = before;
      for (int p = 0; p < c.n; ++p)
        setBlock(after.recv, p, count, [&](size_t e) { return value(p, rank * count + e); });
      break;
    }
    case Collective::Gather: {
      if (root && c.inPlace) {  // sendbuff == recvbuff + root * count
        before.recv = unsetAll;
        setBlock(before.recv, rank, count, [&](size_t e) { return value(r, e); });
      } else {
        before.send = inputOf(r, count);  // off the root, only sendbuff is used
        if (root) before.recv = unsetAll;
      }
      after = before;
      if (root)
        for (int p = 0; p < c.n; ++p) setBlock(after.recv, p, count, [&](size_t e) { return value(p, e); });
      break;
    }
    case Collective::Scatter: {
      if (root) before.send = inputOf(r, n * count);
      // In place the root's recvbuff is sendbuff's block root, which already holds its result.
      if (!root || !c.inPlace) before.recv = unset;
      after = before;
      if (!root || !c.inPlace)
        setBlock(after.recv, 0, count, [&](size_t e) { return value(c.root, rank * count + e); });
      break;
    }
    default: ADD_FAILURE() << "no expectation for " << describe(c);
  }
  return {before, after};
}

void check(const Case& c, testing::SendMode mode = testing::SendMode::Rendezvous) {
  SCOPED_TRACE(describe(c) + (mode == testing::SendMode::Buffered ? " buffered" : " rendezvous"));
  std::vector<algos::Schedule> schedules;
  std::vector<testing::SimRank> ranks;
  std::vector<Expectation> want;
  for (int r = 0; r < c.n; ++r) {
    const algos::CollArgs a = argsFor(onRank(c, r), r);
    const algos::Algorithm* algo = algos::selectAlgorithm(a, "");
    ASSERT_NE(algo, nullptr);
    schedules.push_back(algo->build(a));
    want.push_back(expectation(onRank(c, r), r));
    ranks.push_back(want.back().before);
  }
  ASSERT_EQ(testing::simulate(schedules, ranks, mode), "");
  for (int r = 0; r < c.n; ++r) {
    ASSERT_EQ(ranks[r].recv, want[r].after.recv) << "recvbuff of rank " << r;
    ASSERT_EQ(ranks[r].send, want[r].after.send) << "sendbuff of rank " << r;
  }
}

bool rooted(Collective coll) {
  return coll == Collective::Broadcast || coll == Collective::Reduce || coll == Collective::Gather ||
         coll == Collective::Scatter;
}

// Every rank count to 17, counts that leave ranks or chunks empty or ragged, chunks of one
// element to larger than the buffer, every root, in and out of place.
void sweep(Collective coll) {
  for (int n = 1; n <= 17; ++n) {
    const size_t ns = static_cast<size_t>(n);
    for (size_t count : {size_t{0}, size_t{1}, ns - 1, size_t{7}, 5 * ns + 3, size_t{203}})
      for (size_t chunk : {size_t{1}, size_t{3}, size_t{64}, size_t{1} << 20})
        for (int root = 0; root < (rooted(coll) ? n : 1); ++root) {
          if (chunk == 1 && count > 5 * ns + 3) continue;  // many chunks already; keeps it fast

          for (bool inPlace : {false, true}) {
            check({coll, n, count, chunk, root, inPlace});
            // Sends that complete early must not change the result either.
            if (n <= 8) check({coll, n, count, chunk, root, inPlace}, testing::SendMode::Buffered);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
  }
  for (int n : {32, 64})
    for (size_t count : {size_t{1}, static_cast<size_t>(n) + 3, size_t{130}})
      for (int root : {0, n / 2, n - 1})
        for (bool inPlace : {false, true}) {
          if (!rooted(coll) && root != 0) continue;
          check({coll, n, count, 16, root, inPlace});
          if (::testing::Test::HasFatalFailure()) return;
        }
}

TEST(CollectiveSchedule, Broadcast) { sweep(Collective::Broadcast); }
TEST(CollectiveSchedule, Reduce) { sweep(Collective::Reduce); }
TEST(CollectiveSchedule, AllGather) { sweep(Collective::AllGather); }
TEST(CollectiveSchedule, ReduceScatter) { sweep(Collective::ReduceScatter); }
TEST(CollectiveSchedule, AlltoAll) { sweep(Collective::AlltoAll); }
TEST(CollectiveSchedule, Gather) { sweep(Collective::Gather); }
TEST(CollectiveSchedule, Scatter) { sweep(Collective::Scatter); }

// Whether a call is in place is each rank's own business (NCCL compares that rank's pointers):
// the messages must not change with it.
TEST(CollectiveSchedule, RanksMixInPlaceAndOutOfPlace) {
  for (Collective coll : {Collective::Broadcast, Collective::Reduce, Collective::AllGather,
                          Collective::ReduceScatter, Collective::AlltoAll, Collective::Gather,
                          Collective::Scatter})
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

// ncclSend/ncclRecv in one group on every rank: rank r sends to r + shift and receives from
// r - shift, with the send and receive of one rank joined as the executor joins a group.
void checkPointToPoint(int n, int shift, size_t count, size_t chunk, bool recvFirst) {
  SCOPED_TRACE(::testing::Message() << "n=" << n << " shift=" << shift << " count=" << count
                                    << " chunk=" << chunk << (recvFirst ? " recv first" : ""));
  std::vector<algos::Schedule> schedules;
  std::vector<testing::SimRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    Case send{Collective::Send, n, count, chunk, algos::mod(r + shift, n)};
    Case recv{Collective::Recv, n, count, chunk, algos::mod(r - shift, n)};
    std::vector<algos::Schedule> parts;
    for (const Case& c : {send, recv}) {
      const algos::CollArgs a = argsFor(c, r);
      const algos::Algorithm* algo = algos::selectAlgorithm(a, "");
      ASSERT_NE(algo, nullptr);
      parts.push_back(algo->build(a));
    }
    if (recvFirst) std::swap(parts[0], parts[1]);
    schedules.push_back(algos::concatSchedules(parts));
    ranks[r].send = inputOf(r, count);
    ranks[r].recv.assign(count, kUnset);
  }
  ASSERT_EQ(testing::simulate(schedules, ranks, testing::SendMode::Rendezvous), "");
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(ranks[r].recv, inputOf(algos::mod(r - shift, n), count)) << "rank " << r;
    ASSERT_EQ(ranks[r].send, inputOf(r, count)) << "rank " << r;
  }
}

TEST(CollectiveSchedule, SendRecvRings) {
  for (int n = 1; n <= 17; ++n)
    for (int shift : {0, 1, n / 2, n - 1})  // shift 0: every rank sends to itself
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{203}})
        for (size_t chunk : {size_t{1}, size_t{3}, size_t{1} << 20})
          for (bool recvFirst : {false, true}) {
            checkPointToPoint(n, shift, count, chunk, recvFirst);
            if (HasFatalFailure()) return;
          }
}

// The receiver must cut the stream exactly as the sender does, or sizes disagree.
TEST(CollectiveSchedule, SendAndRecvChunkAlike) {
  for (size_t count : {size_t{0}, size_t{5}, size_t{64}, size_t{65}}) {
    Case send{Collective::Send, 2, count, 8, 1}, recv{Collective::Recv, 2, count, 8, 0};
    const algos::Schedule s = algos::selectAlgorithm(argsFor(send, 0), "")->build(argsFor(send, 0));
    const algos::Schedule r = algos::selectAlgorithm(argsFor(recv, 1), "")->build(argsFor(recv, 1));
    ASSERT_EQ(s.steps.size(), r.steps.size());
    EXPECT_EQ(s.steps.size(), (count + 7) / 8);
    for (size_t i = 0; i < s.steps.size(); ++i) EXPECT_EQ(s.steps[i].src.count, r.steps[i].dst.count);
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
      {Collective::Broadcast, "chain"}, {Collective::Reduce, "chain"},
      {Collective::AllGather, "ring"},  {Collective::ReduceScatter, "ring"},
      {Collective::AlltoAll, "pairwise"}, {Collective::Gather, "direct"},
      {Collective::Scatter, "direct"}, {Collective::Send, "p2p"}, {Collective::Recv, "p2p"}};
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
