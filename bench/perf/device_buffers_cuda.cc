#include <cuda_runtime.h>

#include <cstring>

#include <cstdio>
#include <cstdlib>

#include "device_buffers.h"

namespace braid::perf::device {
namespace {

void ok(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "device buffers: %s: %s\n", what, cudaGetErrorString(err));
  std::exit(1);
}

}  // namespace

std::string unavailable() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return cudaGetErrorString(err);
  return count > 0 ? "" : "no CUDA device";
}

void setDevice(int device) { ok(cudaSetDevice(device), "cudaSetDevice"); }

void* alloc(size_t bytes, bool pinnedHost) {
  void* p = nullptr;
  if (pinnedHost) {
    ok(cudaMallocHost(&p, bytes), "cudaMallocHost");
    std::memset(p, 0, bytes);
    return p;
  }
  ok(cudaMalloc(&p, bytes), "cudaMalloc");
  ok(cudaMemset(p, 0, bytes), "cudaMemset");
  return p;
}

void release(void* ptr) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) == cudaSuccess && attr.type == cudaMemoryTypeHost)
    cudaFreeHost(ptr);
  else
    cudaFree(ptr);
}

void toDevice(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream),
     "cudaMemcpyAsync to the device");
  ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void toHost(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream),
     "cudaMemcpyAsync to the host");
  ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

cudaStream_t newStream() {
  cudaStream_t s = nullptr;
  ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}

void destroyStream(cudaStream_t stream) { cudaStreamDestroy(stream); }

void sync(cudaStream_t stream) { ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }

}  // namespace braid::perf::device
