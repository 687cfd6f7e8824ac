// The stream proxy (core/device/stream_proxy.h) with host threads as streams
// (common/fake_streams.h), so everything of the device path but the CUDA calls themselves runs
// here: threads as ranks submit plans whose buffers stand for device memory; each stream is held by
// a gate until every rank's submit has returned (so the calls do not wait for their streams), then
// a "kernel" on the stream writes the inputs (so the proxy must follow stream order), and the
// outputs are checked after the stream ran. Every collective, in and out of place (staging keeps
// the buffers' aliasing), a group of send/recv, a PreMulSum scalar in "device" memory, and failures
// and aborts, which must still release the streams. Each runs on both paths: staging copied on the
// caller's stream (small batches) and by the proxy on its own stream
// (BRAID_DEVICE_STREAM_COPY_BYTES below the batch's staging).
#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
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
#include "core/device/stream_proxy.h"
#include "core/plan/plan.h"

namespace braid::testing {
namespace {

using algos::Collective;

// BRAID_DEVICE_STREAM_COPY_BYTES for the proxies made meanwhile: "0" stages every batch on the
// proxy's own stream.
struct StreamCopyBytes {
  explicit StreamCopyBytes(const char* v) {
    if (v) setenv("BRAID_DEVICE_STREAM_COPY_BYTES", v, 1);
  }
  ~StreamCopyBytes() { unsetenv("BRAID_DEVICE_STREAM_COPY_BYTES"); }
};

// One rank's side: its stream, its proxy (with fake stream operations) and its "device" buffer.
struct Rank {
  // `kernels` false: a communicator of one rank takes the staged path too (FakeStreamOps).
  explicit Rank(ncclComm* c, bool kernels = true) : comm(c) {
    auto owned = std::make_unique<FakeStreamOps>(&counters, kernels);
    ops = owned.get();
    Status st = device::Proxy::create(comm, std::move(owned), &proxy);
    if (!st.ok()) error = st.message();
  }
  ~Rank() { delete proxy; }

  ncclComm* comm;
  FakeStream stream;
  FakeStreamOps::Counters counters;
  FakeStreamOps* ops = nullptr;
  device::Proxy* proxy = nullptr;
  std::string error;
};

// Plans one call on r's stream and submits it alone: the plan's error, else the submit's.
Status submitOne(Rank& r, const Call& call, const ResolvedOp& op, const void* send, void* recv) {
  Status st;
  std::vector<Plan> plans;
  plans.push_back(devicePlan(r.comm, call, op, send, recv, r.stream.handle(), &st));
  if (!st.ok()) return st;
  return r.proxy->submit(std::move(plans));
}

// Runs one case on every rank; "" or what went wrong, per rank. `byProxy`: every staged batch
// must be copied on the proxy's own stream; else batches of at most 1 MiB of staging (the
// default) on the caller's.
std::vector<std::string> runCase(int nranks, const DeviceCase& c, size_t n, bool byProxy) {
  std::atomic<int> submitted{0};
  std::atomic<bool> go{false};
  return runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
    Rank r(comm);
    if (!r.error.empty()) return r.error;
    CaseRank buffers(c, rank, nranks, n);
    ResolvedOp op;
    // The gate, then the "kernel" that makes the input: both on the stream, before the call.
    r.stream.push([&] { return go.load(); });
    r.stream.push([&] {
      buffers.writeInput();
      return true;
    });
    Status st;
    std::vector<Plan> plans;
    for (const CaseRank::Made& m : buffers.calls()) {
      plans.push_back(devicePlan(comm, m.call, op, m.send, m.recv, r.stream.handle(), &st));
      if (!st.ok()) return "makePlan: " + st.message();
    }
    for (Plan& p : plans) {
      p.sendPinned = c.pinned & 1;
      p.recvPinned = c.pinned & 2;
    }
    st = r.proxy->submit(std::move(plans));
    if (!st.ok()) return "submit: " + st.message();
    if (go.load()) return "the gate opened before this rank's submit returned";
    if (++submitted == nranks) go.store(true);
    r.stream.sync();
    if (Status d = r.proxy->drain(); !d.ok()) return "drain: " + d.message();
    // One rank's collectives on device buffers are local steps: kernels on the stream, no
    // staging, no wait (a send to itself and pinned buffers are staged).
    const bool local = nranks == 1 && c.coll != Collective::Send && c.pinned == 0;
    if (local && (r.counters.waits.load() != 0 || r.counters.stagingAllocs.load() != 0))
      return "one rank's collective was staged instead of run as kernels on the stream";
    if (local && !c.inPlace && r.counters.deviceKernels.load() == 0)
      return "one rank's out-of-place collective ran no kernel";
    if (!local && r.counters.waits.load() != 1) return "expected one stream wait";
    if ((c.pinned & 1) && r.counters.copiesToHost.load() != 0)
      return "a pinned sendbuff was staged";
    if ((c.pinned & 2) && r.counters.copiesToDevice.load() != 0)
      return "a pinned recvbuff was copied back";
    const int copies = r.counters.copiesToHost.load() + r.counters.copiesToDevice.load();
    if (byProxy && !local && r.counters.copiesOnOwnStreams.load() != copies)
      return "a copy went on the caller's stream although the proxy stages every batch";
    if (!byProxy && n <= 1000 && r.counters.copiesOnOwnStreams.load() != 0)
      return "a small batch was staged by the proxy, not on the caller's stream";
    return buffers.check();
  });
}

// (ranks, every batch staged by the proxy)
class StreamProxy : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(StreamProxy, EveryCollectiveInAndOutOfPlace) {
  const auto [nranks, byProxy] = GetParam();
  StreamCopyBytes copyBytes(byProxy ? "0" : nullptr);
  for (const DeviceCase& c : deviceCases())
    // The largest is staged piece by piece when the proxy stages it (over 2 MiB on every rank).
    for (size_t n : {size_t(1), size_t(1000), size_t(300001), (size_t(1) << 20) + 3}) {
      SCOPED_TRACE(std::string(c.name) + ", count " + std::to_string(n));
      auto results = runCase(nranks, c, n, byProxy);
      for (int r = 0; r < nranks; ++r) EXPECT_EQ(results[r], "") << "rank " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, StreamProxy,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Bool()));

// Large calls queued back to back (the stream held until all were submitted) share one staging
// block when the proxy stages them: it holds a block only while it runs a batch. Staged on the
// caller's stream, each call in flight holds a block of its own.
TEST(StreamProxyOps, LargeCallsQueuedBackToBackShareOneStagingBlock) {
  for (const char* copyBytes : {"1048576", "268435456"}) {
    SCOPED_TRACE(std::string("BRAID_DEVICE_STREAM_COPY_BYTES=") + copyBytes);
    StreamCopyBytes env(copyBytes);
    const bool byProxy = std::string(copyBytes) == "1048576";
    constexpr int kCalls = 6;
    std::atomic<int> submitted{0};
    std::atomic<bool> go{false};
    auto results = runThreads(2, [&](int, ncclComm_t comm) -> std::string {
      Rank r(comm);
      if (!r.error.empty()) return r.error;
      const size_t n = size_t(1) << 19;  // 2 MiB of floats, in place
      std::vector<float> buf(n, 1.0f);
      Call call{Collective::AllReduce, n, ncclFloat32, ncclSum, true};
      call.inPlace = true;
      call.inputCount = n;
      r.stream.push([&] { return go.load(); });
      for (int k = 0; k < kCalls; ++k)
        if (Status s = submitOne(r, call, ResolvedOp{}, buf.data(), buf.data()); !s.ok())
          return "submit " + std::to_string(k) + ": " + s.message();
      if (++submitted == 2) go.store(true);
      r.stream.sync();
      if (Status d = r.proxy->drain(); !d.ok()) return "drain: " + d.message();
      for (size_t i = 0; i < n; ++i)
        if (buf[i] != float(1 << kCalls))
          return "element " + std::to_string(i) + " is " + std::to_string(buf[i]);
      const int allocs = r.counters.stagingAllocs.load();
      if (byProxy && allocs != 1)
        return std::to_string(allocs) + " staging blocks for calls the proxy staged, want 1";
      if (!byProxy && allocs != kCalls)
        return std::to_string(allocs) + " staging blocks for " + std::to_string(kCalls) +
               " calls in flight staged on the stream, want one each";
      return "";
    });
    for (size_t k = 0; k < results.size(); ++k) EXPECT_EQ(results[k], "") << "rank " << k;
  }
}

// A large call the proxy stages runs piece by piece: its first messages leave before the rest of
// its input has reached the host, and a piece of output goes back while later ones are still to
// come. Here the root's last piece of input is held back until the other rank has queued a piece
// of its output back to the device: staged whole, the call could not finish (the hold gives up
// after 20 s and the test fails).
TEST(StreamProxyOps, LargeCallsOverlapTheirCopiesWithTheirMessages) {
  StreamCopyBytes env("0");
  const size_t n = size_t(4) << 20;  // 16 MiB of floats
  const int pieces = 8;              // of the proxy's 2 MiB
  std::atomic<FakeStreamOps::Counters*> receiver{nullptr};
  std::atomic<bool> gaveUp{false};
  auto results = runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    Rank r(comm);
    if (!r.error.empty()) return r.error;
    std::vector<float> send(n), recv(n, -1.0f);
    for (size_t i = 0; i < n; ++i) send[i] = caseValue(0, i);
    if (rank == 1) {
      receiver.store(&r.counters);
    } else {
      const auto start = std::chrono::steady_clock::now();
      r.ops->holdCopiesToHost([&, start](int index) {
        if (index < pieces - 1) return true;
        FakeStreamOps::Counters* other = receiver.load();
        if (other && other->copiesToDevice.load() > 0) return true;
        if (std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) return false;
        gaveUp.store(true);
        return true;
      });
    }
    Call call{Collective::Broadcast, n, ncclFloat32};
    call.root = 0;
    call.inputCount = n;
    if (Status s = submitOne(r, call, ResolvedOp{}, rank == 0 ? send.data() : nullptr, recv.data());
        !s.ok())
      return "submit: " + s.message();
    r.stream.sync();
    if (Status d = r.proxy->drain(); !d.ok()) return "drain: " + d.message();
    for (size_t i = 0; i < n; ++i)
      if (recv[i] != caseValue(0, i))
        return "element " + std::to_string(i) + " is " + std::to_string(recv[i]);
    if (rank == 0 && r.counters.copiesToHost.load() != pieces)
      return std::to_string(r.counters.copiesToHost.load()) + " copies of the input, not " +
             std::to_string(pieces) + " pieces";
    return "";
  });
  EXPECT_FALSE(gaveUp.load()) << "the root's input was staged whole before anything moved";
  for (size_t k = 0; k < results.size(); ++k) EXPECT_EQ(results[k], "") << "rank " << k;
}

// BRAID_DEVICE_PIECE_BYTES=0 stages such a call whole, and a tiny piece size is held to 1024
// pieces a call.
TEST(StreamProxyOps, PieceBytesSetsThePiecesOfAStagedCall) {
  StreamCopyBytes env("0");
  const size_t n = size_t(1) << 20;  // 4 MiB of floats
  for (const auto& setting : {std::pair<const char*, int>{"0", 1}, {"1", 1024}}) {
    const char* piece = setting.first;
    const int copies = setting.second;  // (a structured binding: not capturable in clang 14)
    SCOPED_TRACE(std::string("BRAID_DEVICE_PIECE_BYTES=") + piece);
    setenv("BRAID_DEVICE_PIECE_BYTES", piece, 1);
    auto results = runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
      Rank r(comm);
      if (!r.error.empty()) return r.error;
      std::vector<float> send(n), recv(n, -1.0f);
      for (size_t i = 0; i < n; ++i) send[i] = caseValue(rank, i);
      Call call{Collective::AllReduce, n, ncclFloat32, ncclSum, true};
      call.inputCount = n;
      if (Status s = submitOne(r, call, ResolvedOp{}, send.data(), recv.data()); !s.ok())
        return "submit: " + s.message();
      r.stream.sync();
      if (Status d = r.proxy->drain(); !d.ok()) return "drain: " + d.message();
      for (size_t i = 0; i < n; ++i)
        if (recv[i] != caseValue(0, i) + caseValue(1, i))
          return "element " + std::to_string(i) + " is " + std::to_string(recv[i]);
      if (r.counters.copiesToHost.load() != copies)
        return std::to_string(r.counters.copiesToHost.load()) + " copies of the input, want " +
               std::to_string(copies);
      return "";
    });
    unsetenv("BRAID_DEVICE_PIECE_BYTES");
    for (size_t k = 0; k < results.size(); ++k) EXPECT_EQ(results[k], "") << "rank " << k;
  }
}

// ncclCommSuspend(NCCL_SUSPEND_MEM) on the device path (Proxy::release): the proxy goes once the
// work submitted before has run, and with no proxy left in the process its staging is freed; a new
// proxy serves the calls after the resume.
TEST(StreamProxyOps, ReleaseEndsTheProxyAndFreesItsStaging) {
  for (const char* copyBytes : {"0", "268435456"}) {
    SCOPED_TRACE(std::string("BRAID_DEVICE_STREAM_COPY_BYTES=") + copyBytes);
    StreamCopyBytes env(copyBytes);
    auto results = runThreads(1, [&](int, ncclComm_t comm) -> std::string {
      const size_t n = size_t(1) << 16;
      std::vector<float> send(n, -1.0f), recv(n, -1.0f);
      Call call{Collective::AllReduce, n, ncclFloat32, ncclSum, true};
      call.inputCount = n;
      FakeStream stream;
      for (int round = 0; round < 2; ++round) {
        // Without kernels a one-rank communicator takes the staged path, as with more ranks.
        FakeStreamOps::Counters counters;
        auto ops = std::make_unique<FakeStreamOps>(&counters, /*kernels=*/false);
        auto freed = std::make_shared<std::atomic<int>>(0);
        ops->onFreeStaging([freed](void*) { ++*freed; });
        if (Status s = device::Proxy::create(comm, std::move(ops), &comm->deviceProxy); !s.ok())
          return s.message();
        // A "kernel" queued before the call writes its input.
        stream.push([&send, round] {
          std::fill(send.begin(), send.end(), float(round + 2));
          return true;
        });
        Status st;
        std::vector<Plan> plans;
        plans.push_back(
            devicePlan(comm, call, ResolvedOp{}, send.data(), recv.data(), stream.handle(), &st));
        if (!st.ok()) return "plan: " + st.message();
        if (Status s = comm->deviceProxy->submit(std::move(plans)); !s.ok())
          return "submit: " + s.message();
        size_t pinned = 0;
        if (Status s = device::Proxy::release(comm, &pinned); !s.ok())
          return "release: " + s.message();
        // The release waited for the call: its result is in place, the stream done with it.
        stream.sync();
        for (size_t i = 0; i < n; ++i)
          if (recv[i] != float(round + 2))
            return "round " + std::to_string(round) + ": element " + std::to_string(i) + " is " +
                   std::to_string(recv[i]);
        if (comm->deviceProxy) return "the proxy is still there";
        if (pinned < n * sizeof(float))
          return std::to_string(pinned) + " bytes of staging reported, the call needed " +
                 std::to_string(n * sizeof(float));
        if (counters.stagingAllocs.load() != 1 || freed->load() != 1)
          return std::to_string(counters.stagingAllocs.load()) + " staging blocks allocated, " +
                 std::to_string(freed->load()) + " freed; want 1 and 1 (no proxy is left)";
      }
      return "";
    });
    EXPECT_EQ(results[0], "");
  }
}

// A PreMulSum scalar that lives in "device" memory is copied in stream order with the inputs.
TEST(StreamProxyOps, PreMulSumScalarInDeviceMemory) {
  for (const char* copyBytes : {static_cast<const char*>(nullptr), "0"}) {
    SCOPED_TRACE(copyBytes ? "staged by the proxy" : "staged on the stream");
    StreamCopyBytes env(copyBytes);
    auto results = runThreads(2, [](int rank, ncclComm_t comm) -> std::string {
      Rank r(comm);
      if (!r.error.empty()) return r.error;
      const size_t n = 4096;
      std::vector<float> buf(n, -1.0f);
      float scalar = -1.0f;  // the stream sets it before the call runs
      r.ops->markDevice(&scalar, sizeof scalar);
      ncclRedOp_t handle;
      if (ncclRedOpCreatePreMulSum(&handle, &scalar, ncclFloat32, ncclScalarDevice, comm) !=
          ncclSuccess)
        return "ncclRedOpCreatePreMulSum failed";
      ResolvedOp op;
      if (Status st = comm->redOps.resolve(handle, ncclFloat32, &op); !st.ok()) return st.message();
      r.stream.push([&] {
        scalar = 0.5f;
        for (size_t i = 0; i < n; ++i) buf[i] = float(2 * (rank + 1));
        return true;
      });
      Call call{Collective::AllReduce, n, ncclFloat32, handle, true};
      call.inPlace = true;
      call.inputCount = n;
      if (Status s = submitOne(r, call, op, buf.data(), buf.data()); !s.ok()) return s.message();
      r.stream.sync();
      ncclRedOpDestroy(handle, comm);
      for (float v : buf)
        if (v != 3.0f) return "got " + std::to_string(v) + ", want 0.5 * (2 + 4) = 3";
      return r.counters.copiesToHost.load() == 2 ? "" : "expected the input and the scalar copied";
    });
    for (size_t k = 0; k < results.size(); ++k) EXPECT_EQ(results[k], "") << "rank " << k;
  }
}

// A batch that fails (here: ranks calling different counts) marks the communicator failed and
// still releases the stream, which must never wait forever.
TEST(StreamProxyOps, AFailedBatchStillReleasesItsStream) {
  auto results = runThreads(2, [](int rank, ncclComm_t comm) -> std::string {
    Rank r(comm);
    if (!r.error.empty()) return r.error;
    std::vector<float> buf(64, 1.0f);
    Call call{Collective::AllReduce, size_t(rank == 0 ? 16 : 12), ncclFloat32, ncclSum, true};
    call.inPlace = true;
    if (Status s = submitOne(r, call, ResolvedOp{}, buf.data(), buf.data()); !s.ok())
      return "submit: " + s.message();
    r.stream.sync();  // returns: the flag was written although the batch failed
    if (comm->asyncError.load() != ncclInvalidUsage)
      return "asyncError is " + std::to_string(int(comm->asyncError.load())) +
             ", want ncclInvalidUsage";
    return "";
  });
  for (size_t k = 0; k < results.size(); ++k) EXPECT_EQ(results[k], "") << "rank " << k;
}

// The same for a call the proxy stages piece by piece: its pieces land before the gate and its
// events go, and the stream goes on. Each rank's last input piece is held until its run failed,
// so it is still queued when the failure is known.
TEST(StreamProxyOps, AFailedPiecewiseBatchStillReleasesItsStream) {
  StreamCopyBytes env("0");
  auto results = runThreads(2, [](int rank, ncclComm_t comm) -> std::string {
    Rank r(comm);
    if (!r.error.empty()) return r.error;
    const size_t n = size_t(1) << 21;                     // 8 MiB of floats: 4 pieces
    const auto start = std::chrono::steady_clock::now();  // (a hold that never ends: 10 s)
    r.ops->holdCopiesToHost([comm, start](int index) {
      return index < 3 || comm->asyncError.load() != ncclSuccess ||
             std::chrono::steady_clock::now() - start > std::chrono::seconds(10);
    });
    std::vector<float> buf(n, 1.0f);
    Call call{Collective::AllReduce, rank == 0 ? n : n - 4, ncclFloat32, ncclSum, true};
    call.inPlace = true;
    if (Status s = submitOne(r, call, ResolvedOp{}, buf.data(), buf.data()); !s.ok())
      return "submit: " + s.message();
    r.stream.sync();
    if (comm->asyncError.load() != ncclInvalidUsage)
      return "asyncError is " + std::to_string(int(comm->asyncError.load())) +
             ", want ncclInvalidUsage";
    return "";
  });
  for (size_t k = 0; k < results.size(); ++k) EXPECT_EQ(results[k], "") << "rank " << k;
}

// A runtime error after the stream was told to wait: the call reports it, the stream still goes
// on (the proxy writes the flag for the batch it will not run).
TEST(StreamProxyOps, AnErrorAfterTheWaitIsReportedAndTheStreamGoesOn) {
  auto results = runThreads(1, [](int, ncclComm_t comm) -> std::string {
    Rank r(comm, false);  // one rank, staged
    if (!r.error.empty()) return r.error;
    r.ops->failCopiesToDevice();
    std::vector<float> a(8, 1.0f), b(8, 0.0f);
    Call call{Collective::AllReduce, 8, ncclFloat32, ncclSum, true};
    ResolvedOp op;
    Status st;
    std::vector<Plan> plans;
    plans.push_back(devicePlan(comm, call, op, a.data(), b.data(), r.stream.handle(), &st));
    if (!st.ok()) return st.message();
    Status s = r.proxy->submit(std::move(plans));
    if (s.code() != ncclUnhandledCudaError) return "submit did not report the failed copy";
    r.stream.sync();
    return r.proxy->drain().ok() ? "" : "drain failed";
  });
  EXPECT_EQ(results[0], "");
}

// Abort while a batch waits for a peer that never calls: destroying the proxy ends the wait and
// releases the stream.
TEST(StreamProxyOps, AbortReleasesAWaitingStream) {
  for (const char* copyBytes : {static_cast<const char*>(nullptr), "0"}) {
    SCOPED_TRACE(copyBytes ? "staged by the proxy" : "staged on the stream");
    StreamCopyBytes env(copyBytes);
    auto results = runThreads(2, [](int rank, ncclComm_t comm) -> std::string {
      if (rank == 1) return "";  // never calls
      Rank r(comm);
      if (!r.error.empty()) return r.error;
      std::vector<float> buf(1024, 1.0f);
      Call call{Collective::AllReduce, 1024, ncclFloat32, ncclSum, true};
      call.inPlace = true;
      if (Status s = submitOne(r, call, ResolvedOp{}, buf.data(), buf.data()); !s.ok())
        return s.message();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (r.stream.idle()) return "the stream went on before the collective could finish";
      comm->abortFlag.store(true);
      delete r.proxy;  // joins the proxy thread after it wrote the flag
      r.proxy = nullptr;
      r.stream.sync();
      return "";
    });
    for (size_t k = 0; k < results.size(); ++k) EXPECT_EQ(results[k], "") << "rank " << k;
  }
}

// The event that says the copies back are done could not be recorded: the call says so, the
// stream goes on, and the batch's staging is not reused (nothing tells when the copy back has read
// it), so the next call of the same size stages elsewhere.
TEST(StreamProxyOps, AFailedRecordKeepsTheStagingOutOfReuse) {
  auto results = runThreads(1, [](int, ncclComm_t comm) -> std::string {
    Rank r(comm, false);  // one rank, staged
    if (!r.error.empty()) return r.error;
    std::vector<float> buf(4096, 1.0f);
    Call call{Collective::AllReduce, buf.size(), ncclFloat32, ncclSum, true};
    call.inPlace = true;
    call.inputCount = buf.size();
    r.ops->failRecord(2);  // inputs ready, then outputs done
    Status s = submitOne(r, call, ResolvedOp{}, buf.data(), buf.data());
    if (s.code() != ncclUnhandledCudaError || s.message().find("copies back") == std::string::npos)
      return "submit: want the failed record reported, got: " + s.message();
    r.stream.sync();
    if (Status d = r.proxy->drain(); !d.ok()) return "drain: " + d.message();
    void* first = r.counters.lastStaging.load();
    if (Status t = submitOne(r, call, ResolvedOp{}, buf.data(), buf.data()); !t.ok())
      return "second submit: " + t.message();
    r.stream.sync();
    if (r.counters.lastStaging.load() == first) return "the second call reused the kept staging";
    // Without the failure, the same call reuses its block.
    void* second = r.counters.lastStaging.load();
    if (Status t = submitOne(r, call, ResolvedOp{}, buf.data(), buf.data()); !t.ok())
      return "third submit: " + t.message();
    r.stream.sync();
    if (r.counters.lastStaging.load() != second) return "a block was not reused after a success";
    return "";
  });
  EXPECT_EQ(results[0], "");
}

// Until `done` or `seconds` passed; whether it came.
bool waitFor(const std::function<bool()>& done, int seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A proxy of its own (fake stream operations) for a communicator a test drives itself.
struct OwnProxy {
  explicit OwnProxy(ncclComm* c, bool kernels = true) : comm(c) {
    Status st =
        device::Proxy::create(comm, std::make_unique<FakeStreamOps>(nullptr, kernels), &proxy);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  ~OwnProxy() { release(); }
  // Aborts the communicator and destroys the proxy (which releases its streams).
  void release() {
    if (!proxy) return;
    comm->abortFlag.store(true);
    delete proxy;
    proxy = nullptr;
  }
  ncclComm* comm;
  device::Proxy* proxy = nullptr;
};

std::vector<Plan> allReducePlan(ncclComm* comm, float* buf, size_t n, cudaStream_t stream) {
  Call call{Collective::AllReduce, n, ncclFloat32, ncclSum, true};
  call.inPlace = true;
  call.inputCount = n;
  Status st;
  std::vector<Plan> plans;
  plans.push_back(devicePlan(comm, call, ResolvedOp{}, buf, buf, stream, &st));
  EXPECT_TRUE(st.ok()) << st.message();
  return plans;
}

// NCCL's single-thread pattern: one thread drives both ranks of a communicator in one group, on
// one stream. Every rank's input copy must be queued before the first wait, or rank 0's wait
// would hold rank 1's input (and so rank 0's collective) forever.
TEST(StreamProxyOps, RanksOfOneThreadShareAStreamInAGroup) {
  ncclComm_t comms[2] = {};
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  {
    const size_t n = 4096;
    std::vector<float> a(n, 1.0f), b(n, 2.0f);
    FakeStream stream;
    OwnProxy p0(comms[0]), p1(comms[1]);
    std::vector<std::pair<device::Proxy*, std::vector<Plan>>> parts;
    parts.emplace_back(p0.proxy, allReducePlan(comms[0], a.data(), n, stream.handle()));
    parts.emplace_back(p1.proxy, allReducePlan(comms[1], b.data(), n, stream.handle()));
    Status st = device::Proxy::submitAll(std::move(parts));
    ASSERT_TRUE(st.ok()) << st.message();
    const bool ran = waitFor([&] { return stream.idle(); }, 30);
    EXPECT_TRUE(ran) << "the shared stream never finished: a wait held the other rank's input";
    p0.release();  // after a hang: aborts release the stream
    p1.release();
    stream.sync();
    if (ran) {
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(a[i] == 3.0f && b[i] == 3.0f)
            << "element " << i << ": " << a[i] << ", " << b[i];
    }
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
}

// Aborting a communicator does not wait for its copies back: here they are queued behind another
// communicator's wait on a shared stream, whose collective cannot finish (its peer never calls)
// until that one is aborted too, the order a watchdog aborting one communicator after another
// takes. The staging waits with the reclaimer until the copies ran.
TEST(StreamProxyOps, AbortDoesNotWaitForCopiesBehindAnotherCommunicator) {
  ncclComm_t pair[2] = {}, single = nullptr;
  ASSERT_EQ(ncclCommInitAll(pair, 2, nullptr), ncclSuccess);
  ASSERT_EQ(ncclCommInitAll(&single, 1, nullptr), ncclSuccess);
  {
    const size_t n = 1024;
    std::vector<float> x(n, 1.0f), y(n, 1.0f);
    FakeStream stream;
    OwnProxy stuck(pair[0]), alone(single, false);  // `single` staged, not on the stream
    std::vector<std::pair<device::Proxy*, std::vector<Plan>>> parts;
    parts.emplace_back(stuck.proxy, allReducePlan(pair[0], x.data(), n, stream.handle()));
    parts.emplace_back(alone.proxy, allReducePlan(single, y.data(), n, stream.handle()));
    Status st = device::Proxy::submitAll(std::move(parts));
    ASSERT_TRUE(st.ok()) << st.message();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_FALSE(stream.idle()) << "the stream went on although rank 1 of the pair never called";
    std::atomic<bool> aborted{false};
    std::thread watchdog([&] {
      alone.release();
      aborted = true;
    });
    const bool prompt = waitFor([&] { return aborted.load(); }, 20);
    EXPECT_TRUE(prompt) << "aborting waited for copies that another communicator's wait holds";
    stuck.release();  // releases the stream, and with it the first abort if it waited
    watchdog.join();
    stream.sync();
  }
  ncclCommDestroy(pair[0]);
  ncclCommDestroy(pair[1]);
  ncclCommDestroy(single);
}

}  // namespace
}  // namespace braid::testing
