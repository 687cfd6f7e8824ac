// Groups: many different operations issued together, point-to-point rings posted in an order
// that would deadlock without a group, one thread driving every rank of a clique, nesting, and
// an argument error inside a group failing its ncclGroupEnd. Results are checked with the
// collective sweep's checker (tests/common/coll_sweep.h).
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "common/coll_sweep.h"
#include "common/ranks.h"

namespace braid {
namespace {

using testing::CaseRun;
using testing::SweepCase;

std::string last() { return ncclGetLastError(nullptr); }

// A rank left waiting by a failure its peers did not report must fail the test, not hang it.
const bool kTimeoutSet = setenv("BRAID_TIMEOUT_MS", "20000", 1) == 0;

// Issues every case inside one group, then checks them all; "" on success.
std::string runGrouped(ncclComm_t comm, int rank, int nranks, const std::vector<SweepCase>& cases) {
  std::deque<CaseRun> runs;  // a deque: buffers must not move while the group is open
  for (const SweepCase& c : cases) runs.emplace_back(c, rank, nranks);
  if (ncclGroupStart() != ncclSuccess) return "ncclGroupStart: " + last();
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i].call(comm) != ncclSuccess) return testing::describe(cases[i]) + ": " + last();
  if (ncclGroupEnd() != ncclSuccess) return "ncclGroupEnd: " + std::string(ncclGetLastError(comm));
  for (size_t i = 0; i < runs.size(); ++i)
    if (std::string e = runs[i].check(); !e.empty())
      return "operation " + std::to_string(i) + " " + testing::describe(cases[i]) + ": rank " +
             std::to_string(rank) + ": " + e;
  return "";
}

// 64 operations drawn deterministically (every rank draws the same ones): every collective,
// including the Send/Recv ring's own (nested) group, with varied types, ops, roots, counts and
// in-place forms.
std::vector<SweepCase> mixedCases(int nranks) {
  const size_t counts[] = {0, 1, 7, 3, 1000, 5003, 65537};
  std::vector<SweepCase> cases;
  for (uint64_t i = 0; cases.size() < 64; ++i) {
    const uint64_t h = testing::mix(i + 1);
    const testing::CollSpec& spec = testing::kCollectives[i % testing::kCollectives.size()];
    SweepCase c{&spec,
                static_cast<ncclDataType_t>(h % ncclNumTypes),
                spec.reduces ? static_cast<ncclRedOp_t>((h >> 8) % ncclNumOps) : ncclSum,
                spec.rooted ? static_cast<int>((h >> 16) % nranks) : -1,
                counts[(h >> 24) % std::size(counts)],
                ((h >> 32) & 1) != 0 || !spec.outOfPlace};
    cases.push_back(c);
  }
  return cases;
}

TEST(Groups, SixtyFourMixedOperationsInOneGroup) {
  constexpr int kRanks = 4;
  const auto cases = mixedCases(kRanks);
  auto errors = testing::runThreads(
      kRanks, [&](int rank, ncclComm_t comm) { return runGrouped(comm, rank, kRanks, cases); });
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// Every rank posts its Recv before its Send: outside a group each would wait for ever on a
// peer that is itself waiting. Large counts make sure no send completes before its receive.
TEST(Groups, ReceiveBeforeSendRingOnEightRanks) {
  constexpr int kRanks = 8;
  auto errors = testing::runThreads(kRanks, [&](int rank, ncclComm_t comm) -> std::string {
    const int next = (rank + 1) % kRanks, prev = (rank + kRanks - 1) % kRanks;
    for (size_t count : {size_t{1}, size_t{4099}, size_t{1} << 20}) {
      std::vector<int64_t> send(count), recv(count, -1);
      for (size_t i = 0; i < count; ++i) send[i] = rank * 1000003ll + static_cast<int64_t>(i);
      if (ncclGroupStart() != ncclSuccess) return "ncclGroupStart: " + last();
      if (ncclRecv(recv.data(), count, ncclInt64, prev, comm, nullptr) != ncclSuccess)
        return "ncclRecv: " + last();
      if (ncclSend(send.data(), count, ncclInt64, next, comm, nullptr) != ncclSuccess)
        return "ncclSend: " + last();
      if (ncclGroupEnd() != ncclSuccess)
        return "ncclGroupEnd: " + std::string(ncclGetLastError(comm));
      for (size_t i = 0; i < count; ++i)
        if (recv[i] != prev * 1000003ll + static_cast<int64_t>(i))
          return "count " + std::to_string(count) + ": element " + std::to_string(i) + " is " +
                 std::to_string(recv[i]);
    }
    return "";
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// One thread, four communicators of one ncclCommInitAll clique, one group.
TEST(Groups, OneThreadDrivesAFourRankCliqueInAGroup) {
  constexpr int kRanks = 4;
  ncclComm_t comms[kRanks];
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess) << last();
  const std::vector<SweepCase> cases = {
      {&testing::collective("AllReduce"), ncclFloat32, ncclSum, -1, 10007, false},
      {&testing::collective("AllGather"), ncclBfloat16, ncclSum, -1, 513, true},
      {&testing::collective("Broadcast"), ncclInt64, ncclSum, 2, 3001, false},
      {&testing::collective("AllReduce"), ncclInt8, ncclMax, -1, 77, true},
  };
  std::deque<CaseRun> runs;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (const SweepCase& c : cases)
    for (int r = 0; r < kRanks; ++r) {
      runs.emplace_back(c, r, kRanks);
      ASSERT_EQ(runs.back().call(comms[r]), ncclSuccess) << testing::describe(c) << ": " << last();
    }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  for (size_t i = 0; i < runs.size(); ++i)
    EXPECT_EQ(runs[i].check(), "")
        << testing::describe(cases[i / kRanks]) << ", rank " << i % kRanks;
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// Nothing runs before the outermost ncclGroupEnd: with one thread driving every rank, an inner
// ncclGroupEnd that ran its operations would wait for ever on the ranks not yet called.
TEST(Groups, NestedGroupsRunAtTheOutermostEnd) {
  constexpr int kRanks = 3;
  ncclComm_t comms[kRanks];
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess) << last();
  const SweepCase reduce{&testing::collective("AllReduce"), ncclInt32, ncclSum, -1, 1000, false};
  const SweepCase bcast{&testing::collective("Bcast"), ncclFloat16, ncclSum, 1, 257, true};
  std::deque<CaseRun> runs;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    runs.emplace_back(reduce, r, kRanks);
    ASSERT_EQ(runs.back().call(comms[r]), ncclSuccess) << last();
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    runs.emplace_back(bcast, r, kRanks);
    ASSERT_EQ(runs.back().call(comms[r]), ncclSuccess) << last();
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << last();
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  }
  // Still inside the outer group: every AllReduce's recvbuff still holds the untouched pattern.
  // (The Bcast root's buffer holds its result from the start.)
  for (size_t i = 0; i < runs.size(); i += 2)
    EXPECT_NE(runs[i].check(), "") << "operation " << i << " ran early";
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].check(), "") << "operation " << i;
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// A bad argument inside a group: the call itself fails, ncclGroupEnd fails too and its error
// names the failing call, nothing of the group runs, and the communicators stay usable.
TEST(Groups, AnArgumentErrorFailsTheGroupEnd) {
  constexpr int kRanks = 2;
  ncclComm_t comms[kRanks];
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess) << last();
  std::vector<float> bufs[kRanks];
  for (int r = 0; r < kRanks; ++r) bufs[r].assign(16, static_cast<float>(r + 1));

  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(
        ncclAllReduce(bufs[r].data(), bufs[r].data(), 16, ncclFloat32, ncclSum, comms[r], nullptr),
        ncclSuccess);
  EXPECT_EQ(ncclBroadcast(bufs[0].data(), bufs[0].data(), 16, ncclFloat32, 5, comms[0], nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  const std::string msg = last();
  EXPECT_NE(msg.find("ncclGroupEnd"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ncclBroadcast"), std::string::npos) << msg;
  EXPECT_NE(msg.find("root 5"), std::string::npos) << msg;
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(bufs[r][0], r + 1) << "the group ran although it failed";

  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(
        ncclAllReduce(bufs[r].data(), bufs[r].data(), 16, ncclFloat32, ncclSum, comms[r], nullptr),
        ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(bufs[r][15], 3.0f);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// The same inside a nested group, with the error in the inner one and the type wrong.
TEST(Groups, AnArgumentErrorInANestedGroupFailsTheOutermostEnd) {
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess) << last();
  int x[4] = {1, 2, 3, 4};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllGather(x, x, 1, static_cast<ncclDataType_t>(42), comm, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << "an inner end only closes its level";
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  EXPECT_NE(last().find("ncclAllGather"), std::string::npos) << last();
  EXPECT_NE(last().find("datatype 42"), std::string::npos) << last();
  EXPECT_EQ(ncclAllReduce(x, x, 4, ncclInt32, ncclSum, comm, nullptr), ncclSuccess) << last();
  EXPECT_EQ(x[3], 4);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Point-to-point mismatch: the receiver checks the sender's signature, and the sender, which
// receives nothing from its peer, hears of the failure through the communicator.
TEST(Groups, APointToPointCountMismatchFailsBothRanks) {
  auto errors = testing::runThreads(2, [](int rank, ncclComm_t comm) -> std::string {
    std::vector<float> buf(8, 1.0f);
    ncclResult_t res = rank == 0 ? ncclSend(buf.data(), 4, ncclFloat32, 1, comm, nullptr)
                                 : ncclRecv(buf.data(), 8, ncclFloat32, 0, comm, nullptr);
    const std::string msg = ncclGetLastError(comm);
    if (res != ncclInvalidUsage) return "returned " + std::to_string(res) + ": " + msg;
    if (msg.find("ncclSend(count=4, float, peer=1)") == std::string::npos) return "message: " + msg;
    return "";
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// Two ranks that only send to each other (no receive anywhere) would wait for ever in NCCL.
TEST(Groups, TwoSendsToEachOtherAreAMismatch) {
  auto errors = testing::runThreads(2, [](int rank, ncclComm_t comm) -> std::string {
    std::vector<float> buf(1 << 16, 1.0f);
    ncclResult_t res = ncclSend(buf.data(), buf.size(), ncclFloat32, 1 - rank, comm, nullptr);
    const std::string msg = ncclGetLastError(comm);
    if (res != ncclInvalidUsage) return "returned " + std::to_string(res) + ": " + msg;
    if (msg.find("ncclSend(count=65536, float, peer=" + std::to_string(rank) + ")") ==
        std::string::npos)
      return "message: " + msg;
    return "";
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// All-to-all as PyTorch issues it, grouped Send/Recv with every rank (itself included), two
// messages of different sizes per pair, each rank posting its calls in its own shuffled order:
// the k-th Send to a peer must meet that peer's k-th Recv from this rank, whatever the order.
TEST(Groups, PointToPointCallOrderMayDifferBetweenRanks) {
  constexpr int kRanks = 4;
  auto errors = testing::runThreads(kRanks, [](int rank, ncclComm_t comm) -> std::string {
    auto count = [](int from, int to, int k) { return size_t{1} + from * 7 + to * 3 + k * 5000; };
    auto value = [](int from, int to, int k, size_t i) {
      return static_cast<int32_t>(testing::mix((from * 16 + to) * 4 + k) + i);
    };
    struct Op {
      bool send;
      int peer, k;
    };
    std::vector<Op> ops;
    for (int peer = 0; peer < kRanks; ++peer)
      for (int k = 0; k < 2; ++k) ops.push_back({true, peer, k}), ops.push_back({false, peer, k});
    // Shuffle, then number the messages to (or from) each peer in their new order.
    for (size_t i = ops.size() - 1; i > 0; --i)
      std::swap(ops[i], ops[testing::mix(rank * 1000 + i) % (i + 1)]);
    int next[2][kRanks] = {};
    for (Op& op : ops) op.k = next[op.send][op.peer]++;
    std::vector<std::vector<int32_t>> bufs(ops.size());
    if (ncclGroupStart() != ncclSuccess) return "ncclGroupStart: " + last();
    for (size_t o = 0; o < ops.size(); ++o) {
      const Op& op = ops[o];
      const int from = op.send ? rank : op.peer, to = op.send ? op.peer : rank;
      bufs[o].assign(count(from, to, op.k), -1);
      if (op.send) {
        for (size_t i = 0; i < bufs[o].size(); ++i) bufs[o][i] = value(from, to, op.k, i);
        if (ncclSend(bufs[o].data(), bufs[o].size(), ncclInt32, op.peer, comm, nullptr) !=
            ncclSuccess)
          return "ncclSend: " + last();
      } else if (ncclRecv(bufs[o].data(), bufs[o].size(), ncclInt32, op.peer, comm, nullptr) !=
                 ncclSuccess) {
        return "ncclRecv: " + last();
      }
    }
    if (ncclGroupEnd() != ncclSuccess)
      return "ncclGroupEnd: " + std::string(ncclGetLastError(comm));
    for (size_t o = 0; o < ops.size(); ++o) {
      if (ops[o].send) continue;
      for (size_t i = 0; i < bufs[o].size(); ++i)
        if (bufs[o][i] != value(ops[o].peer, rank, ops[o].k, i))
          return "message " + std::to_string(ops[o].k) + " from rank " +
                 std::to_string(ops[o].peer) + ": element " + std::to_string(i) + " is wrong";
    }
    return "";
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// Messages to one peer match in call order: two sizes swapped on one side are a mismatch that
// both ranks report, also when a rank's mismatched pair is with itself.
TEST(Groups, SwappedMessagesAreAMismatch) {
  for (int selfToo : {0, 1}) {
    auto errors = testing::runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
      std::vector<float> a(10), b(20), c(10), d(20);
      const int peer = selfToo && rank == 0 ? 0 : 1 - rank;
      ncclGroupStart();
      if (rank == 0 || selfToo) {
        ncclSend(a.data(), a.size(), ncclFloat32, peer, comm, nullptr);
        ncclSend(b.data(), b.size(), ncclFloat32, peer, comm, nullptr);
      }
      if (rank == 1 || selfToo) {
        ncclRecv(d.data(), d.size(), ncclFloat32, peer, comm, nullptr);
        ncclRecv(c.data(), c.size(), ncclFloat32, peer, comm, nullptr);
      }
      // Rank 1 also waits on rank 0 through a collective of the same group.
      ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr);
      ncclResult_t res = ncclGroupEnd();
      if (res != ncclInvalidUsage)
        return "returned " + std::to_string(res) + ": " + ncclGetLastError(comm);
      return "";
    });
    for (int r = 0; r < 2; ++r)
      EXPECT_EQ(errors[r], "") << "rank " << r << (selfToo ? " (self)" : "");
  }
}

}  // namespace
}  // namespace braid
