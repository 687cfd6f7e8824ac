// Shared by the GPU tests (label gpu): they skip, saying why, where there is no usable device,
// so the suite passes on the CPU-only machines that build CUDA.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

namespace braid::testing {

// "" when a CUDA device can be used, else why not.
inline std::string whyNoDevice() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA driver/device: ") + cudaGetErrorString(err);
  }
  if (count == 0) return "no CUDA device";
  return "";
}

// Device memory with room to misalign, freed at scope end.
struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) { ok = cudaMalloc(&ptr, bytes + 64) == cudaSuccess; }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  char* at(size_t offset) { return static_cast<char*>(ptr) + offset; }
  void* ptr = nullptr;
  bool ok = false;
};

}  // namespace braid::testing

#define BRAID_REQUIRE_DEVICE()                               \
  do {                                                       \
    std::string braid_why = ::braid::testing::whyNoDevice(); \
    if (!braid_why.empty()) GTEST_SKIP() << braid_why;       \
  } while (0)

#define BRAID_CUDA_OK(expr)                                                              \
  do {                                                                                   \
    cudaError_t braid_err = (expr);                                                      \
    ASSERT_EQ(braid_err, cudaSuccess) << #expr << ": " << cudaGetErrorString(braid_err); \
  } while (0)
