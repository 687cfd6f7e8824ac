// Scoped CUDA thread state for Braid's own runtime calls (CUDA builds only).
#pragma once

#include <cuda_runtime.h>

namespace braid::cuda {

// While alive, this thread's CUDA calls that a stream capture forbids (allocating and freeing
// memory, pinned or not) do not invalidate a capture another thread or stream has running: the
// thread is in relaxed capture mode, as NCCL and PyTorch switch to around their allocations.
class RelaxedCapture {
 public:
  RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

// Makes `device` current on this thread, or returns -1 where it already is (nothing to restore);
// restoreDevice() puts the caller's back.
inline int switchDevice(int device) {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  if (current == device || cudaSetDevice(device) != cudaSuccess) return -1;
  return current;
}
inline void restoreDevice(int previous) {
  if (previous >= 0) cudaSetDevice(previous);
}

}  // namespace braid::cuda
