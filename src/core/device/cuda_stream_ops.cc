#include "core/device/cuda_stream_ops.h"

#include <cuda.h>  // types of cuStreamWaitValue32 only; the driver is reached through cudart
#include <cuda_runtime.h>

#include <cstring>

#include "base/log.h"
#include "core/device/cuda_scopes.h"
#include "kernels/cuda/kernels.h"

namespace braid::cuda {
namespace {

using StreamValueFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

// A driver entry point through the runtime (nothing links libcuda); null where it is missing.
void* driverEntry(const char* name) {
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  void* fn = nullptr;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) ==
          cudaSuccess &&
      found == cudaDriverEntryPointSuccess)
    return fn;
  cudaGetLastError();
  return nullptr;
}

class CudaStreamOps final : public device::StreamOps {
 public:
  explicit CudaStreamOps(int device) : device_(device) {}
  ~CudaStreamOps() override {
    RelaxedCapture relaxed;
    if (flag_) cudaFreeHost(flag_);
  }

  // The flag word: pinned, mapped into the device's address space.
  Status init() {
    // The caller's current device stays the caller's (one thread may drive communicators of
    // several devices in a group).
    int callerDev = -1;
    BRAID_TRY(cudaStatus(cudaGetDevice(&callerDev), "cudaGetDevice"));
    BRAID_TRY(cudaStatus(cudaSetDevice(device_), "cudaSetDevice"));
    Status st = makeFlag();
    cudaSetDevice(callerDev);
    return st;
  }

  // Copies between staging and the user's buffers, which may be device memory or pinned host
  // memory: the runtime tells which from the addresses (unified addressing).
  Status copy(void* dst, const void* src, size_t bytes, cudaStream_t stream, const char* what) {
    return cudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), what);
  }

  Status copyToHost(void* dst, const void* src, size_t bytes, cudaStream_t stream) override {
    return copy(dst, src, bytes, stream, "cudaMemcpyAsync (to staging)");
  }
  Status copyToDevice(void* dst, const void* src, size_t bytes, cudaStream_t stream) override {
    return copy(dst, src, bytes, stream, "cudaMemcpyAsync (from staging)");
  }
  Status record(cudaStream_t stream, device::Event* event) override {
    *event = nullptr;
    cudaEvent_t ev = nullptr;
    BRAID_TRY(cudaStatus(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate"));
    *event = ev;
    return cudaStatus(cudaEventRecord(ev, stream), "cudaEventRecord");
  }
  Status waitFlag(cudaStream_t stream, uint32_t value) override {
    return waitValue(stream, static_cast<const uint32_t*>(flagDevice_), value);
  }
  Status query(device::Event event, bool* done) override {
    cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    *done = err == cudaSuccess;
    if (err == cudaSuccess || err == cudaErrorNotReady) return Status::Ok();
    return cudaStatus(err, "cudaEventQuery");
  }
  void synchronize(device::Event event) override {
    if (cudaEventSynchronize(static_cast<cudaEvent_t>(event)) != cudaSuccess) cudaGetLastError();
  }
  void destroy(device::Event event) override { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }
  Status allocStaging(size_t bytes, void** out) override {
    RelaxedCapture relaxed;
    return cudaStatus(cudaHostAlloc(out, bytes, cudaHostAllocPortable), "cudaHostAlloc");
  }
  void freeStaging(void* ptr) override {
    RelaxedCapture relaxed;
    cudaFreeHost(ptr);
  }
  bool isDeviceMemory(const void* ptr) override {
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
  }
  Status deviceCopy(void* dst, const void* src, size_t bytes, cudaStream_t stream) override {
    return copy(dst, src, bytes, stream, "cudaMemcpyAsync (device to device)");
  }
  Status deviceReduce(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
                      ncclRedOp_t op, cudaStream_t stream) override {
    return reduce(dst, a, b, count, type, op, stream);
  }
  Status waitEvent(cudaStream_t stream, device::Event event) override {
    return cudaStatus(cudaStreamWaitEvent(stream, static_cast<cudaEvent_t>(event), 0),
                      "cudaStreamWaitEvent");
  }
  Status waitValue(cudaStream_t stream, const uint32_t* word, uint32_t value) override {
    bool queued = false;
    BRAID_TRY(valueOp(&waitValue_, "cuStreamWaitValue32", stream, word, value,
                      CU_STREAM_WAIT_VALUE_GEQ, &queued));
    return queued ? Status::Ok() : waitFlagKernel(word, value, stream);
  }
  Status writeValue(cudaStream_t stream, uint32_t* word, uint32_t value) override {
    // The default flags order the write after every write queued before it.
    bool queued = false;
    BRAID_TRY(valueOp(&writeValue_, "cuStreamWriteValue32", stream, word, value,
                      CU_STREAM_WRITE_VALUE_DEFAULT, &queued));
    return queued ? Status::Ok() : writeWordKernel(word, value, stream);
  }
  Status allocShared(size_t bytes, void** out) override {
    RelaxedCapture relaxed;
    BRAID_TRY(cudaStatus(cudaMalloc(out, bytes), "cudaMalloc (IPC mailbox)"));
    return cudaStatus(cudaMemset(*out, 0, bytes), "cudaMemset (IPC mailbox)");
  }
  void freeShared(void* ptr) override {
    RelaxedCapture relaxed;
    cudaFree(ptr);
  }
  Status exportMemory(void* ptr, device::MemHandle* out) override {
    static_assert(sizeof(cudaIpcMemHandle_t) <= sizeof(out->bytes));
    cudaIpcMemHandle_t h;
    BRAID_TRY(cudaStatus(cudaIpcGetMemHandle(&h, ptr), "cudaIpcGetMemHandle"));
    std::memcpy(out->bytes, &h, sizeof h);
    return Status::Ok();
  }
  Status openMemory(const device::MemHandle& handle, void** out) override {
    cudaIpcMemHandle_t h;
    std::memcpy(&h, handle.bytes, sizeof h);
    return cudaStatus(cudaIpcOpenMemHandle(out, h, cudaIpcMemLazyEnablePeerAccess),
                      "cudaIpcOpenMemHandle");
  }
  void closeMemory(void* ptr) override { cudaIpcCloseMemHandle(ptr); }
  Status enablePeerAccess(int device) override {
    if (device == device_) return Status::Ok();
    cudaError_t err = cudaDeviceEnablePeerAccess(device, 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled) err = (cudaGetLastError(), cudaSuccess);
    return cudaStatus(err, "cudaDeviceEnablePeerAccess");
  }
  Status allocAsync(size_t bytes, cudaStream_t stream, void** out) override {
    return cudaStatus(cudaMallocAsync(out, bytes, stream), "cudaMallocAsync");
  }
  Status freeAsync(void* ptr, cudaStream_t stream) override {
    return cudaStatus(cudaFreeAsync(ptr, stream), "cudaFreeAsync");
  }
  Status deviceFinishAvg(void* data, size_t count, ncclDataType_t type, int nranks,
                         cudaStream_t stream) override {
    return finishAvg(data, count, type, nranks, stream);
  }
  bool hasKernels(ncclDataType_t type, ncclRedOp_t op) override { return built(type, op); }
  Status makeStream(cudaStream_t* out) override {
    RelaxedCapture relaxed;
    return cudaStatus(cudaStreamCreateWithFlags(out, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  void destroyStream(cudaStream_t stream) override { cudaStreamDestroy(stream); }
  uint32_t* flag() override { return flag_; }
  void bindThread() override { cudaSetDevice(device_); }
  int makeCurrent() override { return switchDevice(device_); }
  void restoreCurrent(int previous) override { restoreDevice(previous); }
  const char* describe() const override {
    return waitValue_ ? "cuStreamWaitValue32" : "a wait kernel";
  }

 private:
  // A stream memory operation through the driver: *queued, or not where the driver does not
  // support it here (*fn is then forgotten, and the caller queues its kernel instead).
  Status valueOp(void** fn, const char* name, cudaStream_t stream, const void* word, uint32_t value,
                 unsigned flags, bool* queued) {
    *queued = false;
    if (!*fn) return Status::Ok();
    CUresult r = reinterpret_cast<StreamValueFn>(*fn)(stream, reinterpret_cast<CUdeviceptr>(word),
                                                      value, flags);
    if (r == CUDA_SUCCESS) {
      *queued = true;
      return Status::Ok();
    }
    if (r != CUDA_ERROR_NOT_SUPPORTED)
      return {ncclUnhandledCudaError, strfmt("%s: CUresult %d", name, int(r))};
    BRAID_INFO(kProxy, "%s is not supported here: streams use a kernel instead", name);
    *fn = nullptr;
    return Status::Ok();
  }

  Status makeFlag() {
    RelaxedCapture relaxed;
    void* flag = nullptr;
    BRAID_TRY(cudaStatus(cudaHostAlloc(&flag, 64, cudaHostAllocMapped | cudaHostAllocPortable),
                         "cudaHostAlloc (flag)"));
    flag_ = static_cast<uint32_t*>(flag);
    BRAID_TRY(
        cudaStatus(cudaHostGetDevicePointer(&flagDevice_, flag, 0), "cudaHostGetDevicePointer"));
    waitValue_ = driverEntry("cuStreamWaitValue32");
    writeValue_ = driverEntry("cuStreamWriteValue32");
    return Status::Ok();
  }

  int device_;
  uint32_t* flag_ = nullptr;
  void* flagDevice_ = nullptr;
  void* waitValue_ = nullptr;   // cuStreamWaitValue32; null: the wait kernel
  void* writeValue_ = nullptr;  // cuStreamWriteValue32; null: the write kernel
};

}  // namespace

Status makeStreamOps(int device, std::unique_ptr<device::StreamOps>* out) {
  auto ops = std::make_unique<CudaStreamOps>(device);
  BRAID_TRY(ops->init());
  *out = std::move(ops);
  return Status::Ok();
}

}  // namespace braid::cuda
