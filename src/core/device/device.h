// Device memory behind one interface. src/cuda/ implements it with the CUDA runtime when Braid is
// built with CUDA; src/core/device/device_off.cc implements it for host-only builds. Callers never
// test for CUDA themselves: without device support (no CUDA build, no driver, no device) enabled()
// is false and the host path runs exactly as before, paying one load per call.
#pragma once

#include <atomic>
#include <cstddef>
#include <span>

#include "base/status.h"
#include "nccl.h"

struct ncclComm;

namespace braid {
struct Plan;
}  // namespace braid

namespace braid::device {

namespace detail {
inline std::atomic<bool> enabled{false};
}  // namespace detail

// A CUDA build, a driver and at least one device: fixed once by probe().
inline bool enabled() { return detail::enabled.load(std::memory_order_relaxed); }

// Decides enabled() once per process and says so in one INFO line. Every init calls it.
void probe();

// Devices visible to this process (enabled() only).
Status deviceCount(int* count);

// The device a new communicator is bound to: `requested` when >= 0, else the calling thread's
// current device; -1 without device support.
Status bindDevice(int requested, int* device);

// Whether this rank offers to run device collectives on the device among the ranks of one host
// (BRAID_DEVICE_IPC=1, device support on, a bound device): PeerInfo::deviceIpc.
bool offersIpc(const ncclComm* comm);

// At init, after the peer table is gathered, on every rank: where every rank is on this host and
// offered it, makes and maps the mailboxes (core/device/ipc_path.h; comm->deviceIpc), all ranks
// or none. An error only where the bootstrap failed.
Status joinIpc(ncclComm* comm);

// A call's buffers, each with the bytes the call reads or writes there (0: unused on this rank).
struct Buffers {
  const void* send = nullptr;
  size_t sendBytes = 0;
  const void* recv = nullptr;
  size_t recvBytes = 0;
};

// How a call's buffers are served (classify).
struct Placement {
  bool onDevice = false;  // in stream order, through the communicator's proxy
  // onDevice, and the buffer is pinned host memory: the proxy needs no staging for it.
  bool sendPinned = false;
  bool recvPinned = false;
};

// Only when enabled(): whether the buffers go in stream order (device memory; pinned host memory
// too where `pinnedInStreamOrder`, as on a CUDA stream, where a copy before the call may not have
// landed yet) or take the host path (pageable host memory, or pinned on a Braid host stream).
// Device memory must be on the communicator's device; mixing pageable host memory with
// stream-ordered buffers in one call is ncclInvalidArgument. An in-place call asks once.
Status classify(const ncclComm* comm, const Buffers& buffers, bool pinnedInStreamOrder,
                Placement* placement);

// Only when enabled(), for stream-ordered calls: a stream being captured into a CUDA graph is
// refused (ncclInvalidUsage); Braid's stream mechanism cannot be captured yet.
Status checkStream(cudaStream_t stream);

// Device plans, all of one call or group: enqueued on their streams and run by each
// communicator's progress thread; returns without waiting for the streams.
Status submit(std::span<Plan> plans);

// Waits until everything submitted on the communicator has run on its progress thread, so the
// host path may use the communicator's connections. Cheap when nothing is pending.
Status drain(ncclComm* comm);

// ncclCommSuspend(NCCL_SUSPEND_MEM): once everything submitted has run and landed, ends the
// communicator's progress thread and lets its pinned staging go (freed once no communicator of the
// process has one; the next device call starts a new thread). *pinnedBytes: what it held.
Status suspend(ncclComm* comm, size_t* pinnedBytes);

// Destroy and abort: ends the communicator's progress thread (work still queued fails, after an
// abort, or runs, otherwise) and releases every stream waiting on it.
void shutdown(ncclComm* comm);

// Records `event` on `stream` (cudaEventRecord), once a call's work is on the stream: a per-call
// config's launchCompletionEvent. ncclInvalidArgument without device support.
Status recordEvent(cudaEvent_t event, cudaStream_t stream);

// ncclMemAlloc / ncclMemFree of device memory when enabled(); *handled is false otherwise (the
// caller then serves host memory).
Status memAlloc(size_t size, void** out, bool* handled);
Status memFree(void* ptr, bool* handled);

}  // namespace braid::device
