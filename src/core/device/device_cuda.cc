// core/device/device.h with the CUDA runtime (linked statically, hidden behind the version script).
// Without a driver every runtime call fails cleanly (cudaErrorInsufficientDriver or
// cudaErrorNoDevice), which probe() turns into "device support off".
#include "core/device/device.h"

#include <cuda_runtime.h>
#include <pthread.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/env.h"
#include "base/log.h"
#include "core/comm/comm.h"
#include "core/device/cuda_scopes.h"
#include "core/device/cuda_stream_ops.h"
#include "core/device/ipc_path.h"
#include "core/device/stream_proxy.h"
#include "core/exec/executor.h"
#include "core/variables.h"
#include "kernels/cuda/kernels.h"

namespace braid::device {
namespace {

std::mutex allocMu;
std::unordered_map<void*, size_t>& allocations() {
  static std::unordered_map<void*, size_t> map;
  return map;
}

// What a pointer is, for classify(): device (or managed) memory of a device, pinned host memory
// (allocated or registered with CUDA), or pageable host memory.
struct Kind {
  bool device = false;
  bool pinned = false;
  int ordinal = -1;
};

Status kindOf(const void* ptr, const char* name, Kind* kind) {
  cudaPointerAttributes attr{};
  cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();  // not sticky; clear it so the next call does not report it
    return invalidArgument("%s %p: cudaPointerGetAttributes failed: %s", name, ptr,
                           cudaGetErrorString(err));
  }
  kind->device = attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
  kind->pinned = attr.type == cudaMemoryTypeHost;
  kind->ordinal = attr.device;
  return Status::Ok();
}

}  // namespace

void probe() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (env::getInt(env::kBraidCuda) == 0) {
      BRAID_INFO(kInit, "CUDA: BRAID_CUDA=0: device-memory support off, host memory only");
      return;
    }
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      cudaGetLastError();
      BRAID_INFO(kInit, "CUDA: %s: device-memory support off, host memory only",
                 err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device");
      return;
    }
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    BRAID_INFO(kInit, "CUDA: %d device(s), driver %d, runtime %d (static): device memory supported",
               count, driver, runtime);
    detail::enabled.store(true, std::memory_order_relaxed);
    // A child forked from here cannot use the CUDA context it inherits: device support is off
    // there, and its calls take the host path (as in a process without a device).
    pthread_atfork(nullptr, nullptr,
                   [] { detail::enabled.store(false, std::memory_order_relaxed); });
  });
}

Status deviceCount(int* count) {
  *count = 0;
  if (!enabled()) return Status::Ok();
  return cuda::cudaStatus(cudaGetDeviceCount(count), "cudaGetDeviceCount");
}

Status bindDevice(int requested, int* device) {
  *device = -1;
  if (!enabled()) return Status::Ok();
  int count = 0;
  BRAID_TRY(deviceCount(&count));
  if (requested >= 0) {
    if (requested >= count)
      return invalidArgument("CUDA device %d does not exist (%d visible)", requested, count);
    *device = requested;
    return Status::Ok();
  }
  return cuda::cudaStatus(cudaGetDevice(device), "cudaGetDevice");
}

bool offersIpc(const ncclComm* comm) {
  return enabled() && comm->cudaDev >= 0 && env::getInt(env::kBraidDeviceIpc) == 1;
}

Status joinIpc(ncclComm* comm) {
  if (comm->nranks < 2) return Status::Ok();
  for (const transport::PeerInfo& p : comm->peers) {
    if (p.deviceIpc && p.hostHash == comm->peers[0].hostHash) continue;
    if (comm->peers[size_t(comm->rank)].deviceIpc)
      BRAID_INFO(kInit, "rank %d: %s=1, but rank %d %s: device collectives through host staging",
                 comm->rank, env::kBraidDeviceIpc.name, p.rank,
                 p.deviceIpc ? "is on another host" : "does not offer it");
    return Status::Ok();
  }
  std::unique_ptr<StreamOps> ops;
  BRAID_TRY(cuda::makeStreamOps(comm->cudaDev, &ops));
  std::unique_ptr<IpcPath> path;
  const int64_t slot = env::getInt(env::kBraidDeviceIpcSlotBytes);
  BRAID_TRY(IpcPath::join(comm, std::move(ops), slot > 0 ? size_t(slot) : size_t(1) << 20, &path));
  comm->deviceIpc = path.release();
  return Status::Ok();
}

Status classify(const ncclComm* comm, const Buffers& b, bool pinnedInStreamOrder,
                Placement* where) {
  *where = {};
  Kind send, recv;
  const bool useSend = b.send && b.sendBytes > 0, useRecv = b.recv && b.recvBytes > 0;
  if (useSend) BRAID_TRY(kindOf(b.send, "sendbuff", &send));
  if (useRecv) {
    if (useSend && b.recv == b.send)
      recv = send;
    else
      BRAID_TRY(kindOf(b.recv, "recvbuff", &recv));
  }
  auto ordered = [&](const Kind& k) { return k.device || (pinnedInStreamOrder && k.pinned); };
  auto name = [](const Kind& k) {
    return k.device ? "device" : k.pinned ? "pinned host" : "pageable host";
  };
  if (useSend && useRecv && ordered(send) != ordered(recv))
    return invalidArgument(
        "sendbuff %p is %s memory but recvbuff %p is %s memory; one call cannot mix pageable "
        "host memory with device (or, on a CUDA stream, pinned host) memory",
        b.send, name(send), b.recv, name(recv));
  for (const Kind* k : {&send, &recv}) {
    const bool used = k == &send ? useSend : useRecv;
    if (!used || !ordered(*k)) continue;
    if (k->device && k->ordinal != comm->cudaDev)
      return invalidArgument(
          "%s is memory of CUDA device %d, but the communicator is bound to "
          "device %d",
          k == &send ? "sendbuff" : "recvbuff", k->ordinal, comm->cudaDev);
    where->onDevice = true;
    (k == &send ? where->sendPinned : where->recvPinned) = k->pinned;
  }
  return Status::Ok();
}

Status checkStream(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaError_t err = cudaStreamIsCapturing(stream, &status);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return invalidUsage(
        "stream %p: cudaStreamIsCapturing failed: %s (a collective cannot join a "
        "CUDA graph capture in Braid yet)",
        static_cast<void*>(stream), cudaGetErrorString(err));
  }
  if (status != cudaStreamCaptureStatusNone)
    return invalidUsage(
        "stream %p is being captured into a CUDA graph: Braid cannot capture "
        "collectives yet; run them outside the capture",
        static_cast<void*>(stream));
  return Status::Ok();
}

Status recordEvent(cudaEvent_t event, cudaStream_t stream) {
  if (!enabled())
    return invalidArgument(
        "launchCompletionEvent %p: no CUDA device is usable in this process, so it has no "
        "event to record",
        static_cast<void*>(event));
  cudaError_t err = cudaEventRecord(event, stream);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return invalidArgument("launchCompletionEvent %p on stream %p: cudaEventRecord failed: %s",
                           static_cast<void*>(event), static_cast<void*>(stream),
                           cudaGetErrorString(err));
  }
  return Status::Ok();
}

Status submit(std::span<Plan> plans) {
  // Plans the devices run among themselves (IpcPath) are queued first; the rest go in one batch
  // per communicator, in call order, all queued together (Proxy::submitAll), so communicators
  // that share a stream do not wait behind each other's input copies; only then do the callers'
  // streams wait for the IpcPath plans' ends (a stream holding both waits for neither first).
  std::vector<Plan> onDevices;
  std::vector<std::pair<Proxy*, std::vector<Plan>>> parts;
  for (Plan& p : plans) {
    ncclComm* comm = p.comm;
    if (comm->deviceIpc && comm->deviceIpc->runs(p)) {
      onDevices.push_back(std::move(p));
      continue;
    }
    if (!comm->deviceProxy) {
      std::unique_ptr<StreamOps> ops;
      BRAID_TRY(cuda::makeStreamOps(comm->cudaDev, &ops));
      BRAID_TRY(Proxy::create(comm, std::move(ops), &comm->deviceProxy));
    }
    auto it = std::find_if(parts.begin(), parts.end(),
                           [&](const auto& part) { return part.first == comm->deviceProxy; });
    if (it == parts.end()) {
      parts.emplace_back(comm->deviceProxy, std::vector<Plan>{});
      it = parts.end() - 1;
    }
    it->second.push_back(std::move(p));
  }
  std::vector<IpcPath::Queued> queued;
  Status st = onDevices.empty() ? Status::Ok() : IpcPath::start(onDevices, &queued);
  if (st.ok() && !parts.empty()) st = Proxy::submitAll(std::move(parts));
  Status ends = IpcPath::finish(queued);
  return st.ok() ? ends : st;
}

Status drain(ncclComm* comm) {
  if (!comm->deviceProxy) return Status::Ok();
  return comm->deviceProxy->drain();
}

Status suspend(ncclComm* comm, size_t* pinnedBytes) { return Proxy::release(comm, pinnedBytes); }

void shutdown(ncclComm* comm) {
  delete comm->deviceProxy;
  comm->deviceProxy = nullptr;
  if (comm->deviceIpc) comm->deviceIpc->close(comm->abortFlag.load(), comm->timeoutMs);
  delete comm->deviceIpc;
  comm->deviceIpc = nullptr;
}

Status memAlloc(size_t size, void** out, bool* handled) {
  *handled = enabled();
  if (!*handled) return Status::Ok();
  {
    cuda::RelaxedCapture relaxed;
    BRAID_TRY(cuda::cudaStatus(cudaMalloc(out, size), "cudaMalloc"));
  }
  std::lock_guard<std::mutex> lock(allocMu);
  allocations().emplace(*out, size);
  int dev = -1;
  cudaGetDevice(&dev);
  BRAID_INFO(kAlloc, "ncclMemAlloc %p, %zu bytes of device %d memory", *out, size, dev);
  return Status::Ok();
}

Status memFree(void* ptr, bool* handled) {
  *handled = false;
  if (!enabled()) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(allocMu);
    auto it = allocations().find(ptr);
    if (it == allocations().end()) return Status::Ok();  // not ours: maybe host memory
    allocations().erase(it);
  }
  *handled = true;
  cuda::RelaxedCapture relaxed;
  return cuda::cudaStatus(cudaFree(ptr), "cudaFree");
}

}  // namespace braid::device
