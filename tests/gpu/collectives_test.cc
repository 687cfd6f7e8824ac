// Collectives on device buffers with threads as ranks on the one GPU (Braid allows several ranks
// per device): results, stream order (inputs written and results read by async copies on the same
// stream around the call), the call not waiting for its stream, every collective, groups over two
// streams, memory-kind errors, graph capture, ncclCommCuDevice and ncclMemAlloc. Skips without a
// device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/ranks.h"
#include "gpu_test_util.h"
#include "braid/braid.h"
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
// does not wait for.
struct RankDevice {
  cudaStream_t stream = nullptr;
  std::vector<void*> buffers;
  ~RankDevice() {
    for (void* p : buffers) cudaFree(p);
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
      float *send, *recv;
      if (auto e = d.alloc(maxCount * 4, &send); !e.empty()) return e;
      if (auto e = d.alloc(maxCount * 4, &recv); !e.empty()) return e;
      for (size_t count = 2; count <= maxCount; count *= 8) {
        std::vector<float> in(count), out(count, -1), inPlace(count, -1);
        for (size_t i = 0; i < count; ++i) in[i] = float((i * 7 + rank * 3) % 100);
        RANK_CUDA(cudaMemcpyAsync(send, in.data(), count * 4, cudaMemcpyHostToDevice, d.stream));
        RANK_NCCL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, d.stream), comm);
        RANK_CUDA(cudaMemcpyAsync(out.data(), recv, count * 4, cudaMemcpyDeviceToHost, d.stream));
        // In place, on the same stream, reusing send.
        RANK_NCCL(ncclAllReduce(send, send, count, ncclFloat32, ncclSum, comm, d.stream), comm);
        RANK_CUDA(
            cudaMemcpyAsync(inPlace.data(), send, count * 4, cudaMemcpyDeviceToHost, d.stream));
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
    float* buf;
    if (auto e = d.alloc(count * 4, &buf); !e.empty()) return e;
    std::vector<float> in(count, float(rank + 1)), out(count);
    RANK_CUDA(cudaMemcpyAsync(buf, in.data(), count * 4, cudaMemcpyHostToDevice, d.stream));
    RANK_CUDA(cudaLaunchHostFunc(d.stream, holdUntilOpen, &gate));
    RANK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, d.stream), comm);
    if (gate.load()) return "the gate opened before the call returned";
    if (++returned == nranks) gate.store(true);
    RANK_CUDA(cudaMemcpyAsync(out.data(), buf, count * 4, cudaMemcpyDeviceToHost, d.stream));
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
    float* buf;
    if (auto e = d.alloc(count * 4, &buf); !e.empty()) return e;
    std::vector<float> in(count, float(rank + 1)), out(count);
    cudaEvent_t launched, grouped;
    RANK_CUDA(cudaEventCreateWithFlags(&launched, cudaEventDisableTiming));
    RANK_CUDA(cudaEventCreateWithFlags(&grouped, cudaEventDisableTiming));
    RANK_CUDA(cudaMemcpyAsync(buf, in.data(), count * 4, cudaMemcpyHostToDevice, d.stream));
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
    RANK_CUDA(cudaMemcpyAsync(out.data(), buf, count * 4, cudaMemcpyDeviceToHost, d.stream));
    RANK_CUDA(cudaStreamSynchronize(d.stream));
    cudaEventDestroy(launched);
    cudaEventDestroy(grouped);
    for (size_t i = 0; i < count; ++i)  // (1 + 2) summed twice over two ranks: 6
      if (out[i] != 6.0f) return "element " + std::to_string(i) + " is " + std::to_string(out[i]);
    return "";
  }));
}

// AllGather, ReduceScatter, Broadcast, Reduce, AlltoAll and a Send/Recv ring, each checked.
TEST_F(GpuCollectives, EveryCollective) {
  for (int nranks : {2, 4}) {
    SCOPED_TRACE(std::to_string(nranks) + " ranks");
    expectAllOk(runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
      RankDevice d;
      if (auto e = d.init(comm); !e.empty()) return e;
      const size_t n = 1000, all = n * nranks;
      float *send, *recv;
      if (auto e = d.alloc(all * 4, &send); !e.empty()) return e;
      if (auto e = d.alloc(all * 4, &recv); !e.empty()) return e;
      std::vector<float> in(all), out(all);
      for (size_t i = 0; i < all; ++i) in[i] = float(rank * 10000 + i);
      auto run = [&](const char* what, auto&& call, auto&& want, size_t outCount) -> std::string {
        RANK_CUDA(cudaMemcpyAsync(send, in.data(), all * 4, cudaMemcpyHostToDevice, d.stream));
        RANK_CUDA(cudaMemsetAsync(recv, 0, all * 4, d.stream));
        RANK_NCCL(call(), comm);
        RANK_CUDA(
            cudaMemcpyAsync(out.data(), recv, outCount * 4, cudaMemcpyDeviceToHost, d.stream));
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
          [&] { return ncclBroadcast(send, recv, all, ncclFloat32, 1, comm, d.stream); },
          [&](size_t i) { return float(10000 + i); }, all);
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

// One group, two operations on two streams of each rank.
TEST_F(GpuCollectives, GroupOverTwoStreams) {
  expectAllOk(runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    RankDevice d;
    if (auto e = d.init(comm); !e.empty()) return e;
    cudaStream_t other = nullptr;
    RANK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    const size_t n = 4096;
    float *a, *b, *c;
    if (auto e = d.alloc(n * 4, &a); !e.empty()) return e;
    if (auto e = d.alloc(n * 2 * 4, &b); !e.empty()) return e;
    if (auto e = d.alloc(n * 4, &c); !e.empty()) return e;
    std::vector<float> in(n, float(rank + 1)), outA(n), outB(2 * n);
    RANK_CUDA(cudaMemcpyAsync(a, in.data(), n * 4, cudaMemcpyHostToDevice, d.stream));
    RANK_CUDA(cudaMemcpyAsync(c, in.data(), n * 4, cudaMemcpyHostToDevice, d.stream));
    RANK_CUDA(cudaStreamSynchronize(d.stream));  // c is read on the other stream
    RANK_NCCL(ncclGroupStart(), comm);
    RANK_NCCL(ncclAllReduce(a, a, n, ncclFloat32, ncclSum, comm, d.stream), comm);
    RANK_NCCL(ncclAllGather(c, b, n, ncclFloat32, comm, other), comm);
    RANK_NCCL(ncclGroupEnd(), comm);
    RANK_CUDA(cudaMemcpyAsync(outA.data(), a, n * 4, cudaMemcpyDeviceToHost, d.stream));
    RANK_CUDA(cudaMemcpyAsync(outB.data(), b, 2 * n * 4, cudaMemcpyDeviceToHost, other));
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
    if (std::string(ncclGetLastError(comm)).find("mix host and device") == std::string::npos)
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
    RANK_CUDA(cudaMemcpyAsync(mem, host.data(), 1024 * 4, cudaMemcpyHostToDevice, d.stream));
    RANK_NCCL(ncclAllReduce(mem, mem, 1024, ncclFloat32, ncclSum, comm, d.stream), comm);
    std::vector<float> out(1024);
    RANK_CUDA(cudaMemcpyAsync(out.data(), mem, 1024 * 4, cudaMemcpyDeviceToHost, d.stream));
    RANK_CUDA(cudaStreamSynchronize(d.stream));
    RANK_NCCL(ncclCommDeregister(comm, handle), comm);
    for (float v : out)
      if (v != 2.0f) return "AllReduce on ncclMemAlloc memory gave " + std::to_string(v);
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
      if (v != 3.0f) return "host-stream AllReduce with device support on gave " + std::to_string(v);
    return "";
  }));
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
