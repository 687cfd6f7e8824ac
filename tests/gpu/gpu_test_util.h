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
