// Repeated calls: a communicator keeps the plan of its last call made outside a group, and the
// executor what it set up for it, so that an identical next call skips both (core/plan/plan.h).
// These tests make sure a repeat computes what a first call would: on fresh data, after the kept
// plan was replaced by a call that shares its schedule, between calls in groups, and that a repeat
// still carries its signature (a mismatch after many identical calls is caught).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/coll_sweep.h"
#include "common/ranks.h"
#include "common/repeat_calls.h"

namespace braid {
namespace {

using testing::CaseRun;
using testing::SweepCase;

// A rank left waiting by a failure its peers did not report must fail the test, not hang it.
const bool kTimeoutSet = setenv("BRAID_TIMEOUT_MS", "20000", 1) == 0;

std::string last(ncclComm_t comm) { return ncclGetLastError(comm); }

void expectAllEmpty(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// Every collective in both placements, called four times on the same buffers (reset between
// calls): the first plans, the others repeat.
TEST(RepeatCall, EveryCollectiveRepeatedOnTheSameBuffers) {
  constexpr int kRanks = 3;
  std::vector<SweepCase> cases;
  for (const auto& spec : testing::kCollectives) {
    const int root = spec.rooted ? 1 : -1;
    if (spec.outOfPlace) cases.push_back({&spec, ncclInt32, ncclSum, root, 37, false});
    cases.push_back({&spec, ncclFloat32, ncclMax, root, 37, true});
  }
  expectAllEmpty(testing::runThreads(kRanks, [&](int rank, ncclComm_t comm) -> std::string {
    for (const SweepCase& c : cases) {
      CaseRun run(c, rank, kRanks);
      for (int i = 0; i < 4; ++i) {
        if (i > 0) run.reset();
        if (run.call(comm) != ncclSuccess) return testing::describe(c) + ": " + last(comm);
        if (std::string e = run.check(); !e.empty())
          return testing::describe(c) + " call " + std::to_string(i) + ": " + e;
      }
    }
    return "";
  }));
}

TEST(RepeatCall, FreshDataAndAlternatingOpsOnThreads) {
  expectAllEmpty(testing::runThreads(
      4, [](int rank, ncclComm_t comm) { return testing::alternateOps(rank, 4, comm, 40); }));
}

// A call made inside a group is planned there, and the kept plan still serves the calls
// around it.
TEST(RepeatCall, GroupedCallBetweenRepeats) {
  constexpr int kRanks = 3;
  expectAllEmpty(testing::runThreads(kRanks, [](int rank, ncclComm_t comm) -> std::string {
    std::vector<int> buf(64);
    for (int i = 0; i < 6; ++i) {
      for (int& v : buf) v = rank + i;
      const bool grouped = i == 3;
      if (grouped && ncclGroupStart() != ncclSuccess) return "ncclGroupStart: " + last(comm);
      if (ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclInt32, ncclSum, comm, nullptr) !=
          ncclSuccess)
        return "call " + std::to_string(i) + ": " + last(comm);
      if (grouped && ncclGroupEnd() != ncclSuccess) return "ncclGroupEnd: " + last(comm);
      const int want = kRanks * (kRanks - 1) / 2 + kRanks * i;
      for (int v : buf)
        if (v != want)
          return "call " + std::to_string(i) + ": " + std::to_string(v) + ", want " +
                 std::to_string(want);
    }
    return "";
  }));
}

// A signature waits for its plan's first data message to the same peer so that small data can
// ride inside it, but not for ever: after a few milliseconds it goes alone, and the receiver then
// takes the data as a message of its own. A chain broadcast whose root arrives late makes every
// forwarding rank's signature go before its data.
TEST(RepeatCall, SignatureThatWentWithoutItsData) {
  setenv("BRAID_ALGO", "chain", 1);
  constexpr int kRanks = 4;
  std::atomic<ncclComm_t> comms[kRanks] = {};
  std::atomic<int> calling[kRanks] = {};  // the call a rank is about to make (1-based)
  auto errors = testing::runThreads(kRanks, [&](int rank, ncclComm_t comm) -> std::string {
    comms[rank] = comm;
    std::vector<int> buf(4);
    for (int i = 0; i < 3; ++i) {
      for (int& v : buf) v = rank == 0 ? 100 + i : -1;
      // The root calls once every other rank is inside its call, and then only after their
      // signatures' wait for data (kFlushSignaturesAfter, 5 ms) ran out several times over.
      if (rank == 0) {
        for (int r = 1; r < kRanks; ++r) {
          while (calling[r].load() <= i) std::this_thread::yield();
          if (!testing::waitUntilInCall(comms[r].load()))
            return "rank " + std::to_string(r) + " never entered call " + std::to_string(i);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
      } else {
        calling[rank] = i + 1;  // its previous call has returned: in flight now means this one
      }
      if (ncclBroadcast(buf.data(), buf.data(), buf.size(), ncclInt32, 0, comm, nullptr) !=
          ncclSuccess)
        return "call " + std::to_string(i) + ": " + last(comm);
      for (int v : buf)
        if (v != 100 + i) return "call " + std::to_string(i) + ": " + std::to_string(v);
    }
    return "";
  });
  unsetenv("BRAID_ALGO");
  expectAllEmpty(errors);
}

// Ten identical calls, then one rank changes its count: every rank fails naming both calls.
TEST(RepeatCall, MismatchAfterRepeatsIsCaught) {
  constexpr int kRanks = 4;
  expectAllEmpty(testing::runThreads(kRanks, [](int rank, ncclComm_t comm) -> std::string {
    std::vector<float> buf(16, 1.0f);
    for (int i = 0; i < 10; ++i)
      if (ncclAllReduce(buf.data(), buf.data(), 16, ncclFloat, ncclSum, comm, nullptr) !=
          ncclSuccess)
        return "call " + std::to_string(i) + ": " + last(comm);
    const ncclResult_t res = ncclAllReduce(buf.data(), buf.data(), rank == 2 ? 12 : 16, ncclFloat,
                                           ncclSum, comm, nullptr);
    const std::string msg = last(comm);
    if (res != ncclInvalidUsage) return "returned " + std::to_string(res) + ": " + msg;
    if (msg.find("ncclAllReduce(count=12, float, sum)") == std::string::npos ||
        msg.find("ncclAllReduce(count=16, float, sum)") == std::string::npos)
      return "message does not name both calls: " + msg;
    return "";
  }));
}

}  // namespace
}  // namespace braid
