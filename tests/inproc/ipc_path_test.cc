// Device collectives run by the devices among one host's ranks (core/device/ipc_path.h), with
// host threads as ranks and as streams (common/fake_streams.h): the mailboxes made and mapped
// through the communicator's bootstrap, every collective and algorithm queued as stream work at
// submit (each rank's stream is held until every rank's submit returned, so no call may wait for
// another rank), messages in pieces of a few slots so senders wait for their receivers' credits,
// calls back to back on one communicator so the piece counters carry over, and the outputs checked.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/device_cases.h"
#include "common/fake_streams.h"
#include "common/ranks.h"
#include "core/comm/comm.h"
#include "core/device/ipc_path.h"

namespace braid::testing {
namespace {

using algos::Collective;

// One rank's side: its stream, its fake runtime and its IpcPath (comm->deviceIpc while alive).
struct IpcRank {
  IpcRank(ncclComm* c, size_t slotBytes) : comm(c) {
    ops = std::make_shared<FakeStreamOps>(&counters);
    std::unique_ptr<device::IpcPath> path;
    Status st = device::IpcPath::join(comm, ops, slotBytes, &path);
    if (!st.ok())
      error = "join: " + st.message();
    else if (!path)
      error = "join made no path";
    comm->deviceIpc = path.release();
  }
  ~IpcRank() {
    if (comm->deviceIpc) comm->deviceIpc->close(false);
    delete comm->deviceIpc;
    comm->deviceIpc = nullptr;
  }

  ncclComm* comm;
  FakeStream stream;
  FakeStreamOps::Counters counters;
  std::shared_ptr<FakeStreamOps> ops;
  std::string error;
};

// Submits `plans` as device::submit does for plans the IpcPath runs.
Status submit(std::vector<Plan>& plans) {
  std::vector<device::IpcPath::Queued> queued;
  Status st = device::IpcPath::start(plans, &queued);
  Status ends = device::IpcPath::finish(queued);
  return st.ok() ? ends : st;
}

// Every case at each count in `counts`, one after another on one communicator per rank, with
// `algorithm` forced where it implements the collective; "" or what went wrong, per rank.
std::vector<std::string> runCases(int nranks, const std::string& algorithm, size_t slotBytes,
                                  const std::vector<size_t>& counts) {
  std::atomic<int> submitted{0};  // submits returned, over every rank and call
  return runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
    IpcRank r(comm, slotBytes);
    if (!r.error.empty()) return r.error;
    comm->forcedAlgorithm = algorithm;
    int calls = 0;
    for (const DeviceCase& c : deviceCases()) {
      for (size_t n : counts) {
        const std::string where = std::string(c.name) + ", count " + std::to_string(n) + ": ";
        CaseRank buffers(c, rank, nranks, n);
        // The stream holds until every rank's submit of this call has returned.
        const int all = nranks * ++calls;
        r.stream.push([&submitted, all] { return submitted.load() >= all; });
        r.stream.push([&] {
          buffers.writeInput();
          return true;
        });
        ResolvedOp op;
        Status st;
        std::vector<Plan> plans;
        for (const CaseRank::Made& m : buffers.calls()) {
          plans.push_back(devicePlan(comm, m.call, op, m.send, m.recv, r.stream.handle(), &st));
          if (!st.ok()) return where + "makePlan: " + st.message();
          plans.back().sendPinned = c.pinned & 1;
          plans.back().recvPinned = c.pinned & 2;
          if (!comm->deviceIpc->runs(plans.back()))
            return where + "the IpcPath does not run " + plans.back().schedule->algorithm;
        }
        st = submit(plans);
        if (!st.ok()) return where + "submit: " + st.message();
        // Every rank's submit returns before the streams run; they then run the call among
        // themselves (a submit that waited for another rank would never return).
        ++submitted;
        r.stream.sync();
        if (std::string e = buffers.check(); !e.empty()) return where + e;
      }
    }
    if (r.counters.stagingAllocs.load() != 0 || r.counters.waits.load() != 0)
      return "a call was staged through host memory";
    // Messages of many pieces: senders waited for credits.
    if (comm->deviceIpc->creditWaits() == 0) return "no sender ever waited for a slot";
    return "";
  });
}

// (ranks, algorithm forced; "" lets the cost model choose)
class IpcPathCollectives : public ::testing::TestWithParam<std::tuple<int, const char*>> {};

TEST_P(IpcPathCollectives, EveryCollectiveInAndOutOfPlace) {
  const auto [nranks, algorithm] = GetParam();
  // Slots of 256 bytes (64 floats): the larger counts cross in many pieces, so a sender runs
  // ahead of its receiver by the 4 slots and then waits for its credits.
  auto results = runCases(nranks, algorithm, 256, {1, 63, 1000, 5003});
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(results[size_t(r)], "") << "rank " << r;
}

std::string caseName(const ::testing::TestParamInfo<std::tuple<int, const char*>>& info) {
  const std::string algo = std::get<1>(info.param);
  return std::to_string(std::get<0>(info.param)) + "ranks_" + (algo.empty() ? "auto" : algo);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, IpcPathCollectives,
                         ::testing::Combine(::testing::Values(2, 3, 4, 5),
                                            ::testing::Values("", "ring", "rhd", "tree", "direct",
                                                              "hierdirect", "hier", "hierpipe",
                                                              "rackring", "chain", "pairwise")),
                         caseName);
// Eight ranks, as on an 8-GPU machine.
INSTANTIATE_TEST_SUITE_P(EightRanks, IpcPathCollectives,
                         ::testing::Combine(::testing::Values(8), ::testing::Values("", "ring")),
                         caseName);

// Large messages at the default slot size: one piece per MiB.
TEST(IpcPath, LargeMessagesAtTheDefaultSlots) {
  auto results = runCases(2, "ring", size_t(1) << 20, {(size_t(1) << 20) + 5});
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[size_t(r)], "") << "rank " << r;
}

// Ranks join all or none: one rank with another slot size keeps every rank on the staged path.
TEST(IpcPath, RanksThatDisagreeAllStayOff) {
  auto results = runThreads(3, [](int rank, ncclComm_t comm) -> std::string {
    auto ops = std::make_shared<FakeStreamOps>();
    std::unique_ptr<device::IpcPath> path;
    Status st = device::IpcPath::join(comm, ops, rank == 2 ? 512 : 256, &path);
    if (!st.ok()) return "join: " + st.message();
    return path ? "made a path although rank 2 has another slot size" : "";
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[size_t(r)], "") << "rank " << r;
}

// What runs here: stream-ordered plans only, no PreMulSum.
TEST(IpcPath, RunsStreamOrderedPlansOnly) {
  auto results = runThreads(2, [](int, ncclComm_t comm) -> std::string {
    IpcRank r(comm, 256);
    if (!r.error.empty()) return r.error;
    std::vector<float> buf(16);
    Status st;
    Call call{Collective::AllReduce, buf.size(), ncclFloat32, ncclSum, true};
    Plan plan = devicePlan(comm, call, ResolvedOp{}, buf.data(), buf.data(), nullptr, &st);
    if (!st.ok()) return st.message();
    if (!comm->deviceIpc->runs(plan)) return "a device AllReduce does not run on the IpcPath";
    plan.onDevice = false;
    if (comm->deviceIpc->runs(plan)) return "a host-memory plan runs on the IpcPath";
    plan.onDevice = true;
    plan.preMul = true;
    if (comm->deviceIpc->runs(plan)) return "a PreMulSum plan runs on the IpcPath";
    return "";
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[size_t(r)], "") << "rank " << r;
}

const DeviceCase kAllReduce{"AllReduce", Collective::AllReduce, false};

// The AllReduce of `buffers` (its input written) as the one plan of a submit, on `stream`.
std::vector<Plan> allReducePlan(ncclComm_t comm, CaseRank& buffers, cudaStream_t stream,
                                Status* st) {
  buffers.writeInput();
  const CaseRank::Made m = buffers.calls()[0];
  std::vector<Plan> plans;
  plans.push_back(devicePlan(comm, m.call, ResolvedOp{}, m.send, m.recv, stream, st));
  return plans;
}

// After an abort: "" once the rank's stream has run to its end. A rank whose stream still waits
// is left running (its streams could never be joined), so that the test fails rather than hangs.
std::string idleAfterAbort(std::unique_ptr<IpcRank>& held) {
  for (int i = 0; i < 2000 && !held->stream.idle(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (held->stream.idle()) return "";
  held.release();
  return "the stream still waits 10 s after the abort";
}

// Two ranks of which only rank 0 calls: it submits an AllReduce of 79 pieces of 256 bytes (the
// sender runs out of slots), then `after` ends the call its peer never joined. Rank 1 keeps its
// mailbox, into which rank 0's released sends copy, until rank 0 is through. "" or what went
// wrong, per rank.
std::vector<std::string> callWithoutPeer(
    const std::function<std::string(ncclComm_t, std::unique_ptr<IpcRank>&)>& after) {
  std::atomic<bool> through{false};
  return runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    auto held = std::make_unique<IpcRank>(comm, 256);
    if (!held->error.empty()) return held->error;
    if (rank == 1) {
      while (!through.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return "";
    }
    struct Through {
      std::atomic<bool>& flag;
      ~Through() { flag = true; }
    } done{through};
    CaseRank buffers(kAllReduce, rank, 2, 5003);
    Status st;
    std::vector<Plan> plans = allReducePlan(comm, buffers, held->stream.handle(), &st);
    if (!st.ok()) return "makePlan: " + st.message();
    if (st = submit(plans); !st.ok()) return "submit: " + st.message();
    return after(comm, held);
  });
}

// An abort lets go of a call that a peer never joined: every wait its streams hold passes, so the
// caller's stream runs on (the data of a call cut short is undefined, as after NCCL's abort).
// Left waiting for the peer, the stream, and any framework stream behind it, never ran again.
TEST(IpcPath, AnAbortReleasesACallItsPeerNeverJoined) {
  auto results = callWithoutPeer([](ncclComm_t comm, std::unique_ptr<IpcRank>& held) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (held->stream.idle()) return std::string("the call ended although its peer never joined");
    comm->deviceIpc->close(true);
    return idleAfterAbort(held);
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[size_t(r)], "") << "rank " << r;
}

// With BRAID_TIMEOUT_MS a destroy waits that long for its streams at most: a call whose peer
// never joined then goes as after an abort (a warning), rather than holding the destroy forever.
TEST(IpcPath, ADestroyWaitsNoLongerThanTheTimeout) {
  auto results = callWithoutPeer([](ncclComm_t comm, std::unique_ptr<IpcRank>& held) {
    const auto start = std::chrono::steady_clock::now();
    comm->deviceIpc->close(false, 200);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    if (ms < 200) return "the destroy returned after " + std::to_string(ms) + " ms, not 200";
    if (ms > 5000) return "the destroy took " + std::to_string(ms) + " ms with a 200 ms timeout";
    return idleAfterAbort(held);
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[size_t(r)], "") << "rank " << r;
}

// A call that could not be queued whole (here: its start's event record failed) leaves the rank
// out of step with its peers, which queued theirs, so the communicator fails: its later calls
// are refused with the error rather than pairing the wrong pieces, and an abort on each rank
// then releases both ranks' streams.
TEST(IpcPath, ACallNotQueuedWholeFailsTheCommunicator) {
  std::atomic<int> submitted{0}, aborted{0}, finished{0};
  auto results = runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    auto held = std::make_unique<IpcRank>(comm, 256);
    IpcRank& r = *held;
    if (!r.error.empty()) return r.error;
    auto barrier = [](std::atomic<int>& count) {
      ++count;
      while (count.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    };
    std::string out;
    std::vector<std::unique_ptr<CaseRank>> calls;  // kept while the streams may use them
    for (int call = 0; call < 2 && out.empty(); ++call) {
      CaseRank& buffers =
          *calls.emplace_back(std::make_unique<CaseRank>(kAllReduce, rank, 2, 5003));
      Status st;
      std::vector<Plan> plans = allReducePlan(comm, buffers, r.stream.handle(), &st);
      if (!st.ok()) return "makePlan: " + st.message();
      const bool failing = call == 1 && rank == 0;
      if (failing) r.ops->failRecord(1);  // the call's start: none of its steps is queued
      st = submit(plans);
      if (call == 0) {
        if (!st.ok()) return "first call: " + st.message();
        r.stream.sync();
        out = buffers.check();
      } else if (failing && st.ok()) {
        out = "the call whose record failed was queued";
      } else if (!failing && !st.ok()) {
        out = "submit: " + st.message();
      }
    }
    if (out.empty() && rank == 0) {
      if (comm->asyncError.load() == ncclSuccess) out = "the communicator did not fail";
      float x = 1;
      if (out.empty() && ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr) == ncclSuccess)
        out = "a later call on the failed communicator ran";
    }
    barrier(submitted);
    // Rank 0 aborts first: once its streams have run, nothing writes rank 1's words back below
    // what rank 1's release sets (a limit of the release: docs/architecture.md).
    if (rank == 1)
      while (aborted.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    comm->deviceIpc->close(true);
    if (std::string e = idleAfterAbort(held); out.empty()) out = e;
    ++aborted;
    barrier(finished);  // neither mailbox goes while the other rank's streams may write into it
    return out;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[size_t(r)], "") << "rank " << r;
}

// NCCL's single-thread pattern: one thread, one stream, a group over both ranks. Every plan's
// start is on the stream before any wait for an end, or the stream would wait for rank 0's end
// before rank 1's call could start.
TEST(IpcPath, RanksOfOneThreadShareAStreamInAGroup) {
  constexpr int kRanks = 2;
  std::vector<ncclComm_t> comms(kRanks);
  ASSERT_EQ(ncclCommInitAll(comms.data(), kRanks, nullptr), ncclSuccess);
  {
    std::vector<std::unique_ptr<IpcRank>> ranks(kRanks);
    std::vector<std::thread> joins;
    for (int r = 0; r < kRanks; ++r)
      joins.emplace_back([&, r] { ranks[size_t(r)] = std::make_unique<IpcRank>(comms[r], 256); });
    for (auto& t : joins) t.join();
    for (auto& r : ranks) ASSERT_EQ(r->error, "");

    FakeStream stream;
    std::vector<std::unique_ptr<CaseRank>> buffers;
    std::vector<Plan> plans;
    for (int r = 0; r < kRanks; ++r) {
      buffers.push_back(std::make_unique<CaseRank>(kAllReduce, r, kRanks, 3000));
      Status st;
      plans.push_back(std::move(allReducePlan(comms[r], *buffers.back(), stream.handle(), &st)[0]));
      ASSERT_TRUE(st.ok()) << st.message();
    }
    ASSERT_TRUE(submit(plans).ok());
    for (int i = 0; i < 2000 && !stream.idle(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(stream.idle()) << "the shared stream still waits after 10 s";
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(buffers[size_t(r)]->check(), "") << "rank " << r;
  }
  for (ncclComm_t comm : comms) ncclCommDestroy(comm);
}

}  // namespace
}  // namespace braid::testing
