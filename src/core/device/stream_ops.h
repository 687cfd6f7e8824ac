// What the stream proxy (core/device/stream_proxy.h) needs from a device runtime, and nothing else.
// The CUDA runtime implements it (src/core/device/cuda_stream_ops.cc); the tests implement it with
// host threads as streams (tests/common/fake_streams.h), so the proxy's logic (staging, in-place
// aliasing, ordering, failures, aborts) runs in every build, GPU or not.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "nccl.h"

namespace braid::device {

using Event = void*;

// A device allocation named so that another process can map it (cudaIpcMemHandle_t's bytes).
struct MemHandle {
  char bytes[64] = {};
};

class StreamOps {
 public:
  virtual ~StreamOps() = default;

  // Queued on `stream`, after what is queued there already.
  virtual Status copyToHost(void* dst, const void* src, size_t bytes, cudaStream_t stream) = 0;
  virtual Status copyToDevice(void* dst, const void* src, size_t bytes, cudaStream_t stream) = 0;
  virtual Status record(cudaStream_t stream, Event* event) = 0;
  // Holds the stream until (int32_t)(flag - value) >= 0, `flag` being the word flag() returns,
  // which the proxy writes from the host.
  virtual Status waitFlag(cudaStream_t stream, uint32_t value) = 0;

  // *done once everything queued before the event has run; an error if the stream failed.
  virtual Status query(Event event, bool* done) = 0;
  virtual void synchronize(Event event) = 0;
  virtual void destroy(Event event) = 0;

  // Host memory the device copies to and from quickly (pinned).
  virtual Status allocStaging(size_t bytes, void** out) = 0;
  virtual void freeStaging(void* ptr) = 0;
  virtual bool isDeviceMemory(const void* ptr) = 0;

  // Device kernels on `stream`, for schedules run on the devices (Proxy::onStreamOnly, IpcPath):
  // dst = src between device buffers (same bytes, no overlap unless equal), dst = a OP b (dst may
  // be a or b), and Avg's final division. hasKernels: whether the build has them for (type, op).
  virtual Status deviceCopy(void* dst, const void* src, size_t bytes, cudaStream_t stream) = 0;
  virtual Status deviceReduce(void* dst, const void* a, const void* b, size_t count,
                              ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream) = 0;
  virtual Status deviceFinishAvg(void* data, size_t count, ncclDataType_t type, int nranks,
                                 cudaStream_t stream) = 0;
  virtual bool hasKernels(ncclDataType_t type, ncclRedOp_t op) = 0;

  // A stream of the runtime's own for the proxy's copies (with CUDA: non-blocking, so it never
  // waits for the legacy stream), made on the proxy's thread after bindThread(); destroyStream()
  // lets it go once what is queued on it has run.
  virtual Status makeStream(cudaStream_t* out) = 0;
  virtual void destroyStream(cudaStream_t stream) = 0;

  // Stream-ordered execution across the ranks of one host (core/device/ipc_path.h): `stream`
  // waits for `event` (recorded on another stream); holds `stream` until
  // (int32_t)(*word - value) >= 0, `word` being device memory of this or another rank (mapped);
  // writes `value` to `word` once what is queued before it on `stream` has run and its writes
  // are visible to the other devices and processes.
  virtual Status waitEvent(cudaStream_t stream, Event event) = 0;
  virtual Status waitValue(cudaStream_t stream, const uint32_t* word, uint32_t value) = 0;
  virtual Status writeValue(cudaStream_t stream, uint32_t* word, uint32_t value) = 0;
  // Device memory of this communicator's device, zeroed, that other processes may map
  // (exportMemory, then openMemory there; closeMemory lets a mapping go).
  virtual Status allocShared(size_t bytes, void** out) = 0;
  virtual void freeShared(void* ptr) = 0;
  virtual Status exportMemory(void* ptr, MemHandle* out) = 0;
  virtual Status openMemory(const MemHandle& handle, void** out) = 0;
  virtual void closeMemory(void* ptr) = 0;
  // Lets this communicator's device reach memory of `device` (a rank of this process there).
  virtual Status enablePeerAccess(int device) = 0;
  // Device memory in stream order (cudaMallocAsync / cudaFreeAsync).
  virtual Status allocAsync(size_t bytes, cudaStream_t stream, void** out) = 0;
  virtual Status freeAsync(void* ptr, cudaStream_t stream) = 0;

  // The flag word (host memory the streams can read), made once.
  virtual uint32_t* flag() = 0;
  // On the proxy's thread, before anything else (the CUDA device to use).
  virtual void bindThread() {}
  // Around a submit on the caller's thread: makes this communicator's device current and returns
  // the caller's, which restoreCurrent() puts back. One thread may drive communicators of several
  // devices in one group (ncclCommInitAll with a device list), and events, copies and kernels
  // belong to the device current when they are made.
  virtual int makeCurrent() { return -1; }
  virtual void restoreCurrent(int /*previous*/) {}
  // "cuStreamWaitValue32", for the log.
  virtual const char* describe() const = 0;
};

}  // namespace braid::device
