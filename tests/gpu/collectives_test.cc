// Collectives on device buffers with threads as ranks on the one GPU (Braid allows several ranks
// per device): results, stream order (inputs written and results read by async copies on the same
// stream around the call), the call not waiting for its stream, every collective (through pinned
// staging and over CUDA IPC, BRAID_DEVICE_IPC=1), groups over two streams, memory-kind errors,
// graph capture, ncclCommCuDevice and ncclMemAlloc. Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "common/ranks.h"
#include "gpu_test_util.h"
#include "nccl.h"

namespace braid::testing {
namespace {

std::string cudaText(cudaError_t e) { return cudaGetErrorString(e); }

#define RANK_CUDA(expr)                                                     \
  do {                                                                      \
    cudaError_t e_ = (expr);                                                \
    if (e_ != cudaSuccess) return std::string(#expr) + ": " + cudaText(e_); \
  } while (0)
#define RANK_NCCL(expr, comm)                                                                    \
  do {                                                                                           \
    ncclResult_t r_ = (expr);                                                                    \
    if (r_ != ncclSuccess)                                                                       \
      return std::string(#expr) + ": " + ncclGetErrorString(r_) + ": " + ncclGetLastError(comm); \
  } while (0)

// Each rank thread works on its communicator's device with a stream of its own. Buffers are
// allocated before the first collective and freed after the last: cudaFree waits for the whole
// device, where another rank's stream may be waiting for this rank's next call. Copies go on the
// rank's (non-blocking) stream: a plain cudaMemcpy runs on the legacy stream, which such a stream
// does not wait for. The host side of those copies is pinned (host()): a copy to pageable memory
// holds its thread until the stream reaches it, and the driver may stage such copies of all the
// process's threads through shared buffers, so one rank's copy back could hold another rank's
// copy in, on which the first rank's collective waits.
struct RankDevice {
  cudaStream_t stream = nullptr;
  std::vector<void*> buffers, pinned;
  ~RankDevice() {
    for (void* p : buffers) cudaFree(p);
    for (void* p : pinned) cudaFreeHost(p);
    if (stream) cudaStreamDestroy(stream);
  }
  std::string init(ncclComm_t comm) {
    int dev = -1;
    RANK_NCCL(ncclCommCuDevice(comm, &dev), comm);
    if (dev < 0) return "ncclCommCuDevice gave " + std::to_string(dev) + " with a device present";
    RANK_CUDA(cudaSetDevice(dev));
    RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return "";
  }
  std::string alloc(size_t bytes, float** out) {
    void* p = nullptr;
    RANK_CUDA(cudaMalloc(&p, bytes));
    buffers.push_back(p);
    *out = static_cast<float*>(p);
    return "";
  }
  std::string host(size_t count, float** out) {
    void* p = nullptr;
    RANK_CUDA(cudaMallocHost(&p, count * sizeof(float)));
    pinned.push_back(p);
    *out = static_cast<float*>(p);
    return "";
  }
};

void expectAllOk(const std::vector<std::string>& results) {
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r], "") << "rank " << r;
}

class GpuCollectives : public ::testing::Test {
 protected:
  void SetUp() override { BRAID_REQUIRE_DEVICE(); }
};

// Inputs are written and results read by copies on the call's stream, enqueued right before and
// after it, with one synchronisation at the end: only stream order makes this pass.
TEST_F(GpuCollectives, AllReduceEverySizeOnTheCallersStream) {
  for (int nranks : {1, 2, 4}) {
    SCOPED_TRACE(std::to_string(nranks) + " ranks");
    expectAllOk(runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
      RankDevice d;
      if (auto e = d.init(comm); !e.empty()) return e;
      const size_t maxCount = size_t(16) << 20;
      float *send, *recv, *in, *out, *inPlace;
      if (auto e = d.alloc(maxCount * 4, &send); !e.empty()) return e;
      if (auto e = d.alloc(maxCount * 4, &recv); !e.empty()) return e;
      if (auto e = d.host(maxCount, &in); !e.empty()) return e;
      if (auto e = d.host(maxCount, &out); !e.empty()) return e;
      if (auto e = d.host(maxCount, &inPlace); !e.empty()) return e;
      for (size_t count = 2; count <= maxCount; count *= 8) {
        for (size_t i = 0; i < count; ++i) {
          in[i] = float((i * 7 + rank * 3) % 100);
          out[i] = inPlace[i] = -1;
        }
        RANK_CUDA(cudaMemcpyAsync(send, in, count * 4, cudaMemcpyHostToDevice, d.stream));
        RANK_NCCL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, d.stream), comm);
        RANK_CUDA(cudaMemcpyAsync(out, recv, count * 4, cudaMemcpyDeviceToHost, d.stream));
        // In place, on the same stream, reusing send.
        RANK_NCCL(ncclAllReduce(send, send, count, ncclFloat32, ncclSum, comm, d.stream), comm);
        RANK_CUDA(cudaMemcpyAsync(inPlace, send, count * 4, cudaMemcpyDeviceToHost, d.stream));
        RANK_CUDA(cudaStreamSynchronize(d.stream));
        for (size_t i = 0; i < count; ++i) {
          float want = 0;
          for (int r = 0; r < nranks; ++r) want += float((i * 7 + r * 3) % 100);
          if (out[i] != want || inPlace[i] != want)
            return "count " + std::to_string(count) + " element " + std::to_string(i) + ": " +
                   std::to_string(out[i]) + " / " + std::to_string(inPlace[i]) + ", want " +
                   std::to_string(want);
        }
      }
      return "";
    }));
  }
}

// The stream is held by a host function until every rank's call has returned: a call that
// waited for its stream would never return (the test would time out instead of passing).
// A host function that holds its stream until *gate (a std::atomic<bool>) opens.
void holdUntilOpen(void* gate) {
  auto* g = static_cast<std::atomic<bool>*>(gate);
  while (!g->load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

TEST_F(GpuCollectives, CallReturnsWithoutWaitingForTheStream) {
  const int nranks = 2;
  std::atomic<bool> gate{false};
  std::atomic<int> returned{0};
  expectAllOk(runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
    RankDevice d;
    if (auto e = d.init(comm); !e.empty()) return e;
    const size_t count = 1 << 20;
    float *buf, *in, *out;
    if (auto e = d.alloc(count * 4, &buf); !e.empty()) return e;
    if (auto e = d.host(count, &in); !e.empty()) return e;
    if (auto e = d.host(count, &out); !e.empty()) return e;
    for (size_t i = 0; i < count; ++i) in[i] = float(rank + 1);
    RANK_CUDA(cudaMemcpyAsync(buf, in, count * 4, cudaMemcpyHostToDevice, d.stream));
    RANK_CUDA(cudaLaunchHostFunc(d.stream, holdUntilOpen, &gate));
    RANK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, d.stream), comm);
    if (gate.load()) return "the gate opened before the call returned";
    if (++returned == nranks) gate.store(true);
    RANK_CUDA(cudaMemcpyAsync(out, buf, count * 4, cudaMemcpyDeviceToHost, d.stream));
    RANK_CUDA(cudaStreamSynchronize(d.stream));
    for (size_t i = 0; i < count; ++i)
      if (out[i] != 3.0f) return "element " + std::to_string(i) + " is " + std::to_string(out[i]);
    return "";
  }));
}

// A per-call config's launchCompletionEvent (NCCL 2.32) is recorded on the stream after the call's
// work: held behind a gate on the stream, it is not complete until the gate opens; inside a group
// it is recorded at ncclGroupEnd.
TEST_F(GpuCollectives, LaunchCompletionEventFollowsTheCall) {
  const int nranks = 2;
  std::atomic<bool> gate{false};
  std::atomic<int> returned{0};
  expectAllOk(runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
    RankDevice d;
    if (auto e = d.init(comm); !e.empty()) return e;
    const size_t count = 1 << 16;
    float *buf, *in, *out;
    if (auto e = d.alloc(count * 4, &buf); !e.empty()) return e;
    if (auto e = d.host(count, &in); !e.empty()) return e;
    if (auto e = d.host(count, &out); !e.empty()) return e;
    for (size_t i = 0; i < count; ++i) in[i] = float(rank + 1);
    cudaEvent_t launched, grouped;
    RANK_CUDA(cudaEventCreateWithFlags(&launched, cudaEventDisableTiming));
    RANK_CUDA(cudaEventCreateWithFlags(&grouped, cudaEventDisableTiming));
    RANK_CUDA(cudaMemcpyAsync(buf, in, count * 4, cudaMemcpyHostToDevice, d.stream));
    RANK_CUDA(cudaLaunchHostFunc(d.stream, holdUntilOpen, &gate));
    ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
    cfg.launchCompletionEvent = launched;
    RANK_NCCL(ncclAllReduceConfig(buf, buf, count, ncclFloat32, ncclSum, comm, d.stream, &cfg),
              comm);
    cfg.launchCompletionEvent = grouped;
    RANK_NCCL(ncclGroupStart(), comm);
    RANK_NCCL(ncclAllReduceConfig(buf, buf, count, ncclFloat32, ncclSum, comm, d.stream, &cfg),
              comm);
    RANK_NCCL(ncclGroupEnd(), comm);
    if (cudaEventQuery(launched) != cudaErrorNotReady) return "the event completed before the call";
    if (cudaEventQuery(grouped) != cudaErrorNotReady) return "the group's event completed early";
    if (++returned == nranks) gate.store(true);
    RANK_CUDA(cudaEventSynchronize(grouped));
    RANK_CUDA(cudaMemcpyAsync(out, buf, count * 4, cudaMemcpyDeviceToHost, d.stream));
    RANK_CUDA(cudaStreamSynchronize(d.stream));
    cudaEventDestroy(launched);
    cudaEventDestroy(grouped);
    for (size_t i = 0; i < count; ++i)  // (1 + 2) summed twice over two ranks: 6
      if (out[i] != 6.0f) return "element " + std::to_string(i) + " is " + std::to_string(out[i]);
    return "";
  }));
}

// BRAID_DEVICE_IPC for the communicators made meanwhile.
struct DeviceIpc {
  explicit DeviceIpc(bool on) { setenv("BRAID_DEVICE_IPC", on ? "1" : "0", 1); }
  ~DeviceIpc() { unsetenv("BRAID_DEVICE_IPC"); }
};

// AllGather, ReduceScatter, Broadcast, Reduce, AlltoAll and a Send/Recv ring, each checked. One
// rank's run as kernels on the stream (a send to itself is staged). `ipc`: the devices run the
// collectives among themselves (core/device/ipc_path.h), which a communicator of several ranks
// shows by its mailbox (ncclCommMemStats' persistent GPU memory).
void everyCollective(bool ipc) {
  DeviceIpc env(ipc);
  for (int nranks : {1, 2, 4}) {
    SCOPED_TRACE(std::to_string(nranks) + " ranks");
    expectAllOk(runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
      RankDevice d;
      if (auto e = d.init(comm); !e.empty()) return e;
      uint64_t mailbox = 0;
      RANK_NCCL(ncclCommMemStats(comm, ncclStatGpuMemPersist, &mailbox), comm);
      if ((mailbox > 0) != (ipc && nranks > 1))
        return "persistent GPU memory " + std::to_string(mailbox) + " bytes: the IPC path is " +
               (mailbox > 0 ? "on" : "off");
      const size_t n = 1000, all = n * nranks;
      float *send, *recv, *in, *out;
      if (auto e = d.alloc(all * 4, &send); !e.empty()) return e;
      if (auto e = d.alloc(all * 4, &recv); !e.empty()) return e;
      if (auto e = d.host(all, &in); !e.empty()) return e;
      if (auto e = d.host(all, &out); !e.empty()) return e;
      for (size_t i = 0; i < all; ++i) in[i] = float(rank * 10000 + i);
      auto run = [&](const char* what, auto&& call, auto&& want, size_t outCount) -> std::string {
        RANK_CUDA(cudaMemcpyAsync(send, in, all * 4, cudaMemcpyHostToDevice, d.stream));
        RANK_CUDA(cudaMemsetAsync(recv, 0, all * 4, d.stream));
        RANK_NCCL(call(), comm);
        RANK_CUDA(cudaMemcpyAsync(out, recv, outCount * 4, cudaMemcpyDeviceToHost, d.stream));
        RANK_CUDA(cudaStreamSynchronize(d.stream));
        for (size_t i = 0; i < outCount; ++i)
          if (out[i] != want(i))
            return std::string(what) + ": element " + std::to_string(i) + " is " +
                   std::to_string(out[i]) + ", want " + std::to_string(want(i));
        return "";
      };
      std::string e;
      e = run(
          "AllGather", [&] { return ncclAllGather(send, recv, n, ncclFloat32, comm, d.stream); },
          [&](size_t i) { return float((i / n) * 10000 + i % n); }, all);
      if (!e.empty()) return e;
      e = run(
          "ReduceScatter",
          [&] { return ncclReduceScatter(send, recv, n, ncclFloat32, ncclSum, comm, d.stream); },
          [&](size_t i) {
            float s = 0;
            for (int r = 0; r < nranks; ++r) s += float(r * 10000 + rank * n + i);
            return s;
          },
          n);
      if (!e.empty()) return e;
      e = run(
          "Broadcast",
          [&] { return ncclBroadcast(send, recv, all, ncclFloat32, 1 % nranks, comm, d.stream); },
          [&](size_t i) { return float((1 % nranks) * 10000 + i); }, all);
      if (!e.empty()) return e;
      e = run(
          "Reduce",
          [&] { return ncclReduce(send, recv, n, ncclFloat32, ncclMax, 0, comm, d.stream); },
          [&](size_t i) { return rank == 0 ? float((nranks - 1) * 10000 + i) : 0.0f; }, n);
      if (!e.empty()) return e;
      e = run(
          "AlltoAll", [&] { return ncclAlltoAll(send, recv, n, ncclFloat32, comm, d.stream); },
          [&](size_t i) { return float((i / n) * 10000 + rank * n + i % n); }, all);
      if (!e.empty()) return e;
      const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
      e = run(
          "Send/Recv ring",
          [&] {
            ncclGroupStart();
            ncclSend(send, n, ncclFloat32, next, comm, d.stream);
            ncclRecv(recv, n, ncclFloat32, prev, comm, d.stream);
            return ncclGroupEnd();
          },
          [&](size_t i) { return float(prev * 10000 + i); }, n);
      return e;
    }));
  }
}

TEST_F(GpuCollectives, EveryCollective) { everyCollective(false); }
TEST_F(GpuCollectives, EveryCollectiveOverIpc) { everyCollective(true); }

// One group, two operations on two streams of each rank.
TEST_F(GpuCollectives, GroupOverTwoStreams) {
  expectAllOk(runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    RankDevice d;
    if (auto e = d.init(comm); !e.empty()) return e;
    cudaStream_t other = nullptr;
    RANK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    const size_t n = 4096;
    float *a, *b, *c, *in, *outA, *outB;
    if (auto e = d.alloc(n * 4, &a); !e.empty()) return e;
    if (auto e = d.alloc(n * 2 * 4, &b); !e.empty()) return e;
    if (auto e = d.alloc(n * 4, &c); !e.empty()) return e;
    if (auto e = d.host(n, &in); !e.empty()) return e;
    if (auto e = d.host(n, &outA); !e.empty()) return e;
    if (auto e = d.host(2 * n, &outB); !e.empty()) return e;
    for (size_t i = 0; i < n; ++i) in[i] = float(rank + 1);
    RANK_CUDA(cudaMemcpyAsync(a, in, n * 4, cudaMemcpyHostToDevice, d.stream));
    RANK_CUDA(cudaMemcpyAsync(c, in, n * 4, cudaMemcpyHostToDevice, d.stream));
    RANK_CUDA(cudaStreamSynchronize(d.stream));  // c is read on the other stream
    RANK_NCCL(ncclGroupStart(), comm);
    RANK_NCCL(ncclAllReduce(a, a, n, ncclFloat32, ncclSum, comm, d.stream), comm);
    RANK_NCCL(ncclAllGather(c, b, n, ncclFloat32, comm, other), comm);
    RANK_NCCL(ncclGroupEnd(), comm);
    RANK_CUDA(cudaMemcpyAsync(outA, a, n * 4, cudaMemcpyDeviceToHost, d.stream));
    RANK_CUDA(cudaMemcpyAsync(outB, b, 2 * n * 4, cudaMemcpyDeviceToHost, other));
    RANK_CUDA(cudaStreamSynchronize(d.stream));
    RANK_CUDA(cudaStreamSynchronize(other));
    cudaStreamDestroy(other);
    for (size_t i = 0; i < n; ++i)
      if (outA[i] != 3.0f || outB[i] != 1.0f || outB[n + i] != 2.0f)
        return "element " + std::to_string(i) + " wrong";
    return "";
  }));
}

TEST_F(GpuCollectives, MemoryKindsCaptureDeviceAndMemAlloc) {
  expectAllOk(runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    RankDevice d;
    if (auto e = d.init(comm); !e.empty()) return e;
    float* dev;
    if (auto e = d.alloc(1024 * 4, &dev); !e.empty()) return e;
    std::vector<float> host(1024, 1.0f);
    // Mixing host and device buffers in one call.
    if (ncclAllReduce(host.data(), dev, 1024, ncclFloat32, ncclSum, comm, d.stream) !=
        ncclInvalidArgument)
      return "host sendbuff + device recvbuff was not ncclInvalidArgument";
    if (std::string(ncclGetLastError(comm)).find("cannot mix pageable host memory") ==
        std::string::npos)
      return std::string("mixing message: ") + ncclGetLastError(comm);
    // Graph capture is refused, clearly, and the capture is left intact.
    RANK_CUDA(cudaStreamBeginCapture(d.stream, cudaStreamCaptureModeThreadLocal));
    ncclResult_t r = ncclAllReduce(dev, dev, 1024, ncclFloat32, ncclSum, comm, d.stream);
    std::string text = ncclGetLastError(comm);
    cudaGraph_t graph = nullptr;
    RANK_CUDA(cudaStreamEndCapture(d.stream, &graph));
    if (graph) cudaGraphDestroy(graph);
    if (r != ncclInvalidUsage || text.find("CUDA graph") == std::string::npos)
      return "under capture: " + std::string(ncclGetErrorString(r)) + ": " + text;
    // ncclMemAlloc hands out device memory the collectives take.
    void* mem = nullptr;
    RANK_NCCL(ncclMemAlloc(&mem, 1 << 20), comm);
    cudaPointerAttributes attr{};
    RANK_CUDA(cudaPointerGetAttributes(&attr, mem));
    if (attr.type != cudaMemoryTypeDevice) return "ncclMemAlloc gave no device memory";
    void* handle = nullptr;
    RANK_NCCL(ncclCommRegister(comm, mem, 1 << 20, &handle), comm);
    float *in, *out;
    if (auto e = d.host(1024, &in); !e.empty()) return e;
    if (auto e = d.host(1024, &out); !e.empty()) return e;
    for (size_t i = 0; i < 1024; ++i) in[i] = 1.0f;
    RANK_CUDA(cudaMemcpyAsync(mem, in, 1024 * 4, cudaMemcpyHostToDevice, d.stream));
    RANK_NCCL(ncclAllReduce(mem, mem, 1024, ncclFloat32, ncclSum, comm, d.stream), comm);
    RANK_CUDA(cudaMemcpyAsync(out, mem, 1024 * 4, cudaMemcpyDeviceToHost, d.stream));
    RANK_CUDA(cudaStreamSynchronize(d.stream));
    RANK_NCCL(ncclCommDeregister(comm, handle), comm);
    for (size_t i = 0; i < 1024; ++i)
      if (float v = out[i]; v != 2.0f)
        return "AllReduce on ncclMemAlloc memory gave " + std::to_string(v);
    // A host-memory call after device work on the same communicator still works; it is also the
    // barrier after which freeing (a device-wide wait) cannot stall the other rank.
    std::vector<float> h(8, float(rank));
    RANK_NCCL(ncclAllReduce(h.data(), h.data(), 8, ncclFloat32, ncclSum, comm, nullptr), comm);
    if (h[0] != 1.0f) return "host AllReduce after device work gave " + std::to_string(h[0]);
    RANK_NCCL(ncclMemFree(mem), comm);
    return "";
  }));
}

// A Braid host stream carries host-memory calls only: with device buffers it is refused by
// name; with host buffers, device support on, the call is queued and completes as on a
// machine without a GPU.
TEST_F(GpuCollectives, HostStreamTakesHostBuffersOnly) {
  expectAllOk(runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    RankDevice d;
    if (auto e = d.init(comm); !e.empty()) return e;
    float* dev;
    if (auto e = d.alloc(1024 * 4, &dev); !e.empty()) return e;
    braidHostStream_t hs = nullptr;
    RANK_NCCL(braidHostStreamCreate(&hs, 0), comm);
    const auto stream = reinterpret_cast<cudaStream_t>(hs);
    if (ncclAllReduce(dev, dev, 1024, ncclFloat32, ncclSum, comm, stream) != ncclInvalidArgument)
      return "device buffers on a host stream were not ncclInvalidArgument";
    if (std::string(ncclGetLastError(comm)).find("host stream") == std::string::npos)
      return std::string("message: ") + ncclGetLastError(comm);
    std::vector<float> host(1024, float(rank + 1));
    RANK_NCCL(ncclAllReduce(host.data(), host.data(), 1024, ncclFloat32, ncclSum, comm, stream),
              comm);
    RANK_NCCL(braidHostStreamSynchronize(hs), comm);
    RANK_NCCL(braidHostStreamDestroy(hs), comm);
    for (float v : host)
      if (v != 3.0f)
        return "host-stream AllReduce with device support on gave " + std::to_string(v);
    return "";
  }));
}

// NCCL's single-thread pattern on one GPU: one thread drives both ranks of a communicator
// (ncclCommInitAll with a device list) in one group on one stream, a created stream and the
// legacy stream. Each rank's input copy must be queued before any rank's stream wait.
void oneThreadDrivesTwoRanks(bool ipc) {
  DeviceIpc env(ipc);
  ncclComm_t comms[2] = {};
  const int devs[2] = {0, 0};
  ASSERT_EQ(ncclCommInitAll(comms, 2, devs), ncclSuccess) << ncclGetLastError(nullptr);
  BRAID_CUDA_OK(cudaSetDevice(0));
  cudaStream_t created = nullptr;
  BRAID_CUDA_OK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
  const size_t n = 1 << 18;
  float *buf[2], *host[2];
  for (int r = 0; r < 2; ++r) {
    BRAID_CUDA_OK(cudaMalloc(&buf[r], n * 4));
    BRAID_CUDA_OK(cudaMallocHost(&host[r], n * 4));
  }
  for (cudaStream_t stream : {created, cudaStreamLegacy}) {
    for (int r = 0; r < 2; ++r) {
      for (size_t i = 0; i < n; ++i) host[r][i] = float(r + 1);
      BRAID_CUDA_OK(cudaMemcpyAsync(buf[r], host[r], n * 4, cudaMemcpyHostToDevice, stream));
    }
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(ncclAllReduce(buf[r], buf[r], n, ncclFloat32, ncclSum, comms[r], stream),
                ncclSuccess)
          << ncclGetLastError(comms[r]);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
    for (int r = 0; r < 2; ++r)
      BRAID_CUDA_OK(cudaMemcpyAsync(host[r], buf[r], n * 4, cudaMemcpyDeviceToHost, stream));
    BRAID_CUDA_OK(cudaStreamSynchronize(stream));
    for (int r = 0; r < 2; ++r)
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(host[r][i], 3.0f) << "rank " << r << " element " << i << " on stream " << stream;
  }
  for (ncclComm_t c : comms) ASSERT_EQ(ncclCommDestroy(c), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    cudaFree(buf[r]);
    cudaFreeHost(host[r]);
  }
  cudaStreamDestroy(created);
}

TEST_F(GpuCollectives, OneThreadDrivesTwoRanksOnOneStream) { oneThreadDrivesTwoRanks(false); }
TEST_F(GpuCollectives, OneThreadDrivesTwoRanksOnOneStreamOverIpc) { oneThreadDrivesTwoRanks(true); }

// Pinned host buffers on a CUDA stream are served in stream order, as NCCL serves them: the input
// below is written by a copy from device memory that a gate holds on the stream, so a call that
// ran at once on the host would read it unwritten. (A copy from host memory to host memory would
// not do: CUDA makes it synchronous with the host, so it would wait for the gate, which opens only
// after the calls.)
TEST_F(GpuCollectives, PinnedHostBuffersFollowTheStream) {
  const int nranks = 2;
  std::atomic<bool> gate{false};
  std::atomic<int> returned{0};
  expectAllOk(runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
    RankDevice d;
    if (auto e = d.init(comm); !e.empty()) return e;
    const size_t count = 1 << 16;
    float *src, *dev, *buf, *out;
    if (auto e = d.host(count, &src); !e.empty()) return e;
    if (auto e = d.alloc(count * 4, &dev); !e.empty()) return e;
    if (auto e = d.host(count, &buf); !e.empty()) return e;
    if (auto e = d.host(count, &out); !e.empty()) return e;
    for (size_t i = 0; i < count; ++i) {
      src[i] = float(rank + 1);
      buf[i] = out[i] = -100.0f;
    }
    RANK_CUDA(cudaMemcpyAsync(dev, src, count * 4, cudaMemcpyHostToDevice, d.stream));
    RANK_CUDA(cudaStreamSynchronize(d.stream));
    RANK_CUDA(cudaLaunchHostFunc(d.stream, holdUntilOpen, &gate));
    RANK_CUDA(cudaMemcpyAsync(buf, dev, count * 4, cudaMemcpyDeviceToHost, d.stream));
    RANK_NCCL(ncclAllReduce(buf, out, count, ncclFloat32, ncclSum, comm, d.stream), comm);
    if (gate.load()) return "the gate opened before the call returned";
    if (++returned == nranks) gate.store(true);
    RANK_CUDA(cudaStreamSynchronize(d.stream));
    for (size_t i = 0; i < count; ++i)
      if (out[i] != 3.0f) return "element " + std::to_string(i) + " is " + std::to_string(out[i]);
    return "";
  }));
}

// A watchdog aborting communicators of one GPU one after another: the first abort must not wait
// for the whole device (freeing pinned memory would), where the second communicator's stream
// waits for a collective whose peer never calls.
TEST_F(GpuCollectives, AbortsOneAfterAnotherOnASharedGpu) {
  ncclComm_t pair[2] = {}, single = nullptr;
  const int devs[2] = {0, 0};
  ASSERT_EQ(ncclCommInitAll(pair, 2, devs), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_EQ(ncclCommInitAll(&single, 1, devs), ncclSuccess) << ncclGetLastError(nullptr);
  BRAID_CUDA_OK(cudaSetDevice(0));
  cudaStream_t held = nullptr, free = nullptr;
  BRAID_CUDA_OK(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking));
  BRAID_CUDA_OK(cudaStreamCreateWithFlags(&free, cudaStreamNonBlocking));
  float *x = nullptr, *y = nullptr;
  BRAID_CUDA_OK(cudaMalloc(&x, 1 << 20));
  BRAID_CUDA_OK(cudaMalloc(&y, 1 << 20));
  // Rank 1 of the pair never calls: rank 0's stream waits until its communicator is aborted.
  ASSERT_EQ(ncclAllReduce(x, x, 1024, ncclFloat32, ncclSum, pair[0], held), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(y, y, 1024, ncclFloat32, ncclSum, single, free), ncclSuccess);
  BRAID_CUDA_OK(cudaStreamSynchronize(free));
  std::atomic<bool> aborted{false};
  std::thread watchdog([&] {
    ncclCommAbort(single);
    aborted = true;
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!aborted && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(aborted.load()) << "ncclCommAbort waited for another communicator's stream";
  ncclCommAbort(pair[0]);  // releases the held stream (and with it a first abort that waited)
  ncclCommAbort(pair[1]);
  watchdog.join();
  BRAID_CUDA_OK(cudaStreamSynchronize(held));
  cudaFree(x);
  cudaFree(y);
  cudaStreamDestroy(held);
  cudaStreamDestroy(free);
}

// Over CUDA IPC the devices wait for each other on words of their mailboxes, so a call whose peer
// never calls holds its stream until the abort lets those waits pass (core/device/ipc_path.h).
TEST_F(GpuCollectives, AbortReleasesAnIpcCallItsPeerNeverJoined) {
  DeviceIpc env(true);
  ncclComm_t pair[2] = {};
  const int devs[2] = {0, 0};
  ASSERT_EQ(ncclCommInitAll(pair, 2, devs), ncclSuccess) << ncclGetLastError(nullptr);
  uint64_t mailbox = 0;
  ASSERT_EQ(ncclCommMemStats(pair[0], ncclStatGpuMemPersist, &mailbox), ncclSuccess);
  ASSERT_GT(mailbox, 0u) << "the IPC path is off";
  BRAID_CUDA_OK(cudaSetDevice(0));
  cudaStream_t held = nullptr;
  BRAID_CUDA_OK(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking));
  float* x = nullptr;
  BRAID_CUDA_OK(cudaMalloc(&x, 1 << 20));
  ASSERT_EQ(ncclAllReduce(x, x, 1 << 18, ncclFloat32, ncclSum, pair[0], held), ncclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(cudaStreamQuery(held), cudaErrorNotReady) << "the call ended without its peer";
  ncclCommAbort(pair[0]);
  cudaError_t state = cudaErrorNotReady;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((state = cudaStreamQuery(held)) == cudaErrorNotReady &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(state, cudaSuccess) << "the stream still waits 20 s after the abort: "
                                << cudaGetErrorString(state);
  ncclCommAbort(pair[1]);
  if (state == cudaSuccess) {
    cudaFree(x);
    cudaStreamDestroy(held);
  }
}

// A child forked after device support came on cannot use the CUDA context it inherits: its calls
// take the host path, as in a process without a device.
TEST_F(GpuCollectives, ForkedChildRunsHostCalls) {
  ncclComm_t parent = nullptr;
  ASSERT_EQ(ncclCommInitAll(&parent, 1, nullptr), ncclSuccess);  // device support probed: on
  ASSERT_EQ(ncclCommDestroy(parent), ncclSuccess);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ncclComm_t comm = nullptr;
    if (ncclCommInitAll(&comm, 1, nullptr) != ncclSuccess) _exit(2);
    int dev = 0;
    if (ncclCommCuDevice(comm, &dev) != ncclSuccess || dev != -1) _exit(3);
    std::vector<float> v(64, 2.0f);
    if (ncclAllReduce(v.data(), v.data(), 64, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
      _exit(4);
    if (v[0] != 2.0f) _exit(5);
    ncclCommDestroy(comm);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "2: init failed, 3: bound to a device, 4: the call failed, 5: wrong result";
}

// BRAID_CUDA=0 keeps a process on host memory only, device present or not.
TEST_F(GpuCollectives, BraidCudaZeroSwitchesDeviceSupportOff) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the probe has not run
  EXPECT_EXIT(
      {
        setenv("BRAID_CUDA", "0", 1);
        std::exit(hostOnlyExitCode());
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace braid::testing
