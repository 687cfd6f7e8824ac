// The schedule type's own pieces: the builder's dependencies, concatSchedules and
// repeatSchedule (algos/schedule.h); and the in-memory engine every schedule test runs on
// (tests/common/schedule_sim.h): FIFO matching per pair, the two send modes, and the errors
// it reports.
#include <gtest/gtest.h>

#include "algos/schedule.h"
#include "common/schedule_sim.h"

namespace braid {
namespace {

using algos::Buffer;
using algos::Region;
using algos::Schedule;
using algos::ScheduleBuilder;
using testing::SendMode;

// The dependencies of step i, as a list.
std::vector<uint32_t> depsOf(const Schedule& s, uint32_t i) {
  return {s.deps.begin() + s.steps[i].depBegin,
          s.deps.begin() + s.steps[i].depBegin + s.steps[i].depCount};
}

std::vector<uint32_t> dependentsOf(const Schedule& s, uint32_t i) {
  return {s.dependents.begin() + s.dependentsBegin[i],
          s.dependents.begin() + s.dependentsBegin[i + 1]};
}

TEST(ConcatSchedules, PartsKeepTheirOwnDependenciesInOrder) {
  ScheduleBuilder a("p2p");
  a.copy({Buffer::Send, 0, 4}, {Buffer::Scratch, 0, 4});
  a.send(2, {Buffer::Scratch, 0, 4});  // waits for the copy
  a.needScratch(4);
  ScheduleBuilder b("p2p");
  b.recv(1, {Buffer::Recv, 0, 4});
  b.send(1, {Buffer::Recv, 0, 4});  // waits for the receive
  b.needScratch(2);
  b.needPacked(10);
  std::vector<Schedule> parts;
  parts.push_back(std::move(a).finish());
  parts.push_back(std::move(b).finish());
  const Schedule joined = algos::concatSchedules(parts);

  ASSERT_EQ(joined.steps.size(), 4u);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(joined.steps[i].kind, parts[0].steps[i].kind);
    EXPECT_EQ(joined.steps[i + 2].kind, parts[1].steps[i].kind);
  }
  EXPECT_EQ(depsOf(joined, 0), std::vector<uint32_t>{});
  EXPECT_EQ(depsOf(joined, 1), std::vector<uint32_t>{0});
  EXPECT_EQ(depsOf(joined, 2), std::vector<uint32_t>{});  // no edge across parts
  EXPECT_EQ(depsOf(joined, 3), std::vector<uint32_t>{2});
  EXPECT_EQ(dependentsOf(joined, 0), std::vector<uint32_t>{1});
  EXPECT_EQ(dependentsOf(joined, 2), std::vector<uint32_t>{3});
  EXPECT_EQ(dependentsOf(joined, 3), std::vector<uint32_t>{});
  EXPECT_EQ(joined.scratchCount, 4u);
  EXPECT_EQ(joined.packedBytes, 10u);
  EXPECT_EQ(joined.peers, (std::vector<int>{1, 2}));  // sorted, once each
  EXPECT_EQ(joined.algorithm, "p2p+p2p");

  EXPECT_TRUE(algos::concatSchedules({}).steps.empty());
  const Schedule one = algos::concatSchedules({parts[1]});
  EXPECT_EQ(one.deps, parts[1].deps);
  EXPECT_EQ(one.dependents, parts[1].dependents);
  EXPECT_EQ(one.dependentsBegin, parts[1].dependentsBegin);
}

// Two ranks, each sending `sendCount` elements of its input to the other and receiving
// `recvCount` into recvbuff; with `waitForSend` the receive overwrites what the send reads, so
// it waits for the send.
std::vector<Schedule> exchange(size_t sendCount, size_t recvCount, bool waitForSend) {
  std::vector<Schedule> out;
  for (int r = 0; r < 2; ++r) {
    ScheduleBuilder b("exchange");
    b.send(1 - r, {waitForSend ? Buffer::Recv : Buffer::Send, 0, sendCount});
    b.recv(1 - r, {Buffer::Recv, 0, recvCount});
    out.push_back(std::move(b).finish());
  }
  return out;
}

std::vector<testing::SimRank> inputs(size_t count) {
  std::vector<testing::SimRank> ranks(2);
  for (int r = 0; r < 2; ++r)
    for (size_t e = 0; e < count; ++e) {
      ranks[r].send.push_back(100 * (r + 1) + static_cast<int64_t>(e));
      ranks[r].recv.push_back(-100 * (r + 1) - static_cast<int64_t>(e));
    }
  return ranks;
}

// A loop of blocking calls: run k's first steps wait for run k-1's last ones, nothing else
// changes, and the messages of every run go to the same peers in the same order.
TEST(RepeatSchedule, EachRunStartsWhenTheLastHasEnded) {
  ScheduleBuilder b("relay");
  b.recv(0, {Buffer::Recv, 0, 4});                        // 0: waits for nothing
  b.send(2, {Buffer::Recv, 0, 4});                        // 1: waits for 0
  b.copy({Buffer::Send, 0, 4}, {Buffer::Scratch, 0, 4});  // 2: waits for nothing
  b.needScratch(4);
  const Schedule one = std::move(b).finish();
  ASSERT_EQ(depsOf(one, 1), std::vector<uint32_t>{0});
  ASSERT_TRUE(depsOf(one, 2).empty());

  const Schedule three = algos::repeatSchedule(one, 3);
  ASSERT_EQ(three.steps.size(), 9u);
  EXPECT_EQ(three.peers, one.peers);
  EXPECT_EQ(three.scratchCount, 4u);
  EXPECT_TRUE(depsOf(three, 0).empty()) << "the first run waits for nothing";
  EXPECT_TRUE(depsOf(three, 2).empty());
  for (uint32_t run = 1; run < 3; ++run) {
    const uint32_t base = 3 * run;
    // The last steps of a run: the send (1) and the copy (2), which nothing waits for.
    const std::vector<uint32_t> last = {base - 3 + 1, base - 3 + 2};
    EXPECT_EQ(depsOf(three, base), last) << "run " << run;
    EXPECT_EQ(depsOf(three, base + 1), std::vector<uint32_t>{base}) << "run " << run;
    EXPECT_EQ(depsOf(three, base + 2), last) << "run " << run;
    for (uint32_t i = 0; i < 3; ++i) {
      EXPECT_EQ(three.steps[base + i].kind, one.steps[i].kind);
      EXPECT_EQ(three.steps[base + i].peer, one.steps[i].peer);
    }
  }
  EXPECT_EQ(dependentsOf(three, 1), (std::vector<uint32_t>{3, 5}));
  EXPECT_EQ(algos::repeatSchedule(one, 1).steps.size(), 3u);
}

TEST(ScheduleSim, MovesBytesBetweenRanks) {
  for (SendMode mode : {SendMode::Buffered, SendMode::Rendezvous}) {
    auto ranks = inputs(3);
    ASSERT_EQ(testing::simulate(exchange(3, 3, false), ranks, mode), "");
    EXPECT_EQ(ranks[0].recv, (std::vector<int64_t>{200, 201, 202}));
    EXPECT_EQ(ranks[1].recv, (std::vector<int64_t>{100, 101, 102}));
  }
}

// A receive that waits for a send to the peer whose own receive waits the same way: fine where
// sends complete at once, a deadlock where a send completes only with its receive.
TEST(ScheduleSim, RendezvousExposesReceivesWaitingOnSends) {
  auto ranks = inputs(3);
  ASSERT_EQ(testing::simulate(exchange(3, 3, true), ranks, SendMode::Buffered), "");
  EXPECT_EQ(ranks[0].recv, (std::vector<int64_t>{-200, -201, -202}));
  ranks = inputs(3);
  EXPECT_EQ(testing::simulate(exchange(3, 3, true), ranks, SendMode::Rendezvous),
            "deadlock: 4 steps cannot run");
}

TEST(ScheduleSim, SizeMismatchAndBadRegions) {
  for (SendMode mode : {SendMode::Buffered, SendMode::Rendezvous}) {
    auto ranks = inputs(3);
    EXPECT_NE(testing::simulate(exchange(2, 3, false), ranks, mode)
                  .find("received 16 bytes, expected 24"),
              std::string::npos);
    ranks = inputs(3);
    EXPECT_NE(testing::simulate(exchange(4, 4, false), ranks, mode).find("out of bounds"),
              std::string::npos);
  }
  // A buffer NCCL does not give the rank is empty: touching it is out of bounds.
  ScheduleBuilder b("copy");
  b.copy({Buffer::Send, 0, 1}, {Buffer::Recv, 0, 1});
  std::vector<testing::SimRank> one(1);
  one[0].recv = {7};
  EXPECT_NE(testing::simulate({std::move(b).finish()}, one).find("region out of bounds"),
            std::string::npos);
  // A send nobody receives.
  ScheduleBuilder lonely("lonely");
  lonely.send(1, {Buffer::Send, 0, 1});
  std::vector<Schedule> unmatched = {std::move(lonely).finish(), ScheduleBuilder("idle").finish()};
  auto ranks = inputs(1);
  EXPECT_EQ(testing::simulate(unmatched, ranks, SendMode::Buffered),
            "unreceived messages from rank 0 to rank 1");
  ranks = inputs(1);
  EXPECT_EQ(testing::simulate(unmatched, ranks, SendMode::Rendezvous),
            "deadlock: 1 steps cannot run");
}

// The k-th send to a peer meets the peer's k-th receive from us, whichever is ready first: the
// first send waits for a local copy, the second could go at once but queues behind it.
TEST(ScheduleSim, MatchesSendsToReceivesInOrderPerPair) {
  for (SendMode mode : {SendMode::Buffered, SendMode::Rendezvous}) {
    ScheduleBuilder sender("s"), receiver("r");
    sender.copy({Buffer::Send, 0, 1}, {Buffer::Scratch, 0, 1});
    sender.send(1, {Buffer::Scratch, 0, 1});
    sender.send(1, {Buffer::Send, 1, 2});
    sender.needScratch(1);
    receiver.recv(0, {Buffer::Recv, 0, 1});
    receiver.recvReduce(0, {Buffer::Send, 0, 2}, {Buffer::Recv, 1, 2});
    std::vector<testing::SimRank> ranks(2);
    ranks[0].send = {5, 6, 7};
    ranks[1].send = {10, 20};
    ranks[1].recv = {0, 0, 0};
    ASSERT_EQ(
        testing::simulate({std::move(sender).finish(), std::move(receiver).finish()}, ranks, mode),
        "");
    EXPECT_EQ(ranks[1].recv, (std::vector<int64_t>{5, 16, 27}));
  }
}

}  // namespace
}  // namespace braid
