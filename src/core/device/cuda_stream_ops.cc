#include "core/device/cuda_stream_ops.h"

#include <cuda.h>  // types of cuStreamWaitValue32 only; the driver is reached through cudart
#include <cuda_runtime.h>

#include "base/log.h"
#include "core/device/cuda_scopes.h"
#include "kernels/cuda/kernels.h"

namespace braid::cuda {
namespace {

using WaitValueFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

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
    if (waitValue_) {
      CUresult r = reinterpret_cast<WaitValueFn>(waitValue_)(
          stream, reinterpret_cast<CUdeviceptr>(flagDevice_), value, CU_STREAM_WAIT_VALUE_GEQ);
      if (r == CUDA_SUCCESS) return Status::Ok();
      if (r != CUDA_ERROR_NOT_SUPPORTED)
        return {ncclUnhandledCudaError, strfmt("cuStreamWaitValue32: CUresult %d", int(r))};
      BRAID_INFO(kProxy, "cuStreamWaitValue32 is not supported here: streams wait with a kernel");
      waitValue_ = nullptr;
    }
    return waitFlagKernel(static_cast<const volatile uint32_t*>(flagDevice_), value, stream);
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
  Status deviceReduce(void* dst, const void* src, size_t count, ncclDataType_t type, ncclRedOp_t op,
                      cudaStream_t stream) override {
    return reduce(dst, dst, src, count, type, op, stream);
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
  Status makeFlag() {
    RelaxedCapture relaxed;
    void* flag = nullptr;
    BRAID_TRY(cudaStatus(cudaHostAlloc(&flag, 64, cudaHostAllocMapped | cudaHostAllocPortable),
                         "cudaHostAlloc (flag)"));
    flag_ = static_cast<uint32_t*>(flag);
    BRAID_TRY(
        cudaStatus(cudaHostGetDevicePointer(&flagDevice_, flag, 0), "cudaHostGetDevicePointer"));
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    void* fn = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000, cudaEnableDefault,
                                         &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      waitValue_ = fn;
    else
      cudaGetLastError();
    return Status::Ok();
  }

  int device_;
  uint32_t* flag_ = nullptr;
  void* flagDevice_ = nullptr;
  void* waitValue_ = nullptr;  // cuStreamWaitValue32; null: the wait kernel
};

}  // namespace

Status makeStreamOps(int device, std::unique_ptr<device::StreamOps>* out) {
  auto ops = std::make_unique<CudaStreamOps>(device);
  BRAID_TRY(ops->init());
  *out = std::move(ops);
  return Status::Ok();
}

}  // namespace braid::cuda
