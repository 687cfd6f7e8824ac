// Memory bandwidth of Braid's CUDA kernels against the device's own copy, at one size (256 MiB by
// default): cudaMemcpyAsync device to device, the copy kernel, and the reduction kernel of every
// type and op this build has. Bandwidth counts bytes read plus bytes written (a copy moves 2x the
// buffer, a reduction 3x), so a kernel that streams at the memory's speed scores what the copy
// does. Then the copies between pinned host memory and the device (bytes moved, once), which
// the staged device path pays. The last line compares float sum with the copy (the issue asks
// for >= 85%).
//
//   cuda-kernel-bw [MiB] [iterations]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/cuda/kernels.h"
#include "kernels/reduce.h"

namespace {

void ok(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "cuda-kernel-bw: %s: %s\n", what, cudaGetErrorString(err));
  std::exit(1);
}

void ok(const braid::Status& st) {
  if (st.ok()) return;
  std::fprintf(stderr, "cuda-kernel-bw: %s\n", st.message().c_str());
  std::exit(1);
}

// GB/s (1e9 bytes) of `traffic` bytes per run of `body`, timed with events over `iters` runs.
template <typename Body>
double measure(size_t traffic, int iters, cudaStream_t s, Body&& body) {
  cudaEvent_t t0, t1;
  ok(cudaEventCreate(&t0), "cudaEventCreate");
  ok(cudaEventCreate(&t1), "cudaEventCreate");
  for (int i = 0; i < 3; ++i) body();
  ok(cudaEventRecord(t0, s), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) body();
  ok(cudaEventRecord(t1, s), "cudaEventRecord");
  ok(cudaEventSynchronize(t1), "cudaEventSynchronize");
  float ms = 0;
  ok(cudaEventElapsedTime(&ms, t0, t1), "cudaEventElapsedTime");
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  return double(traffic) * iters / (ms * 1e-3) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  const size_t bytes = mib << 20;
  cudaStream_t s;
  ok(cudaStreamCreate(&s), "cudaStreamCreate");
  void *a, *b, *c;
  ok(cudaMalloc(&a, bytes), "cudaMalloc");
  ok(cudaMalloc(&b, bytes), "cudaMalloc");
  ok(cudaMalloc(&c, bytes), "cudaMalloc");
  ok(cudaMemset(a, 0, bytes), "cudaMemset");
  ok(cudaMemset(b, 0, bytes), "cudaMemset");
  cudaDeviceProp prop{};
  ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf(
      "# %s, %d SMs; %zu MiB buffers, %d iterations; GB/s = (bytes read + written) / time\n",
      prop.name, prop.multiProcessorCount, mib, iters);
  std::printf("%-24s %10s\n", "kernel", "GB/s");
  const double memcpyBw = measure(2 * bytes, iters, s, [&] {
    ok(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
  });
  std::printf("%-24s %10.1f\n", "cudaMemcpy D2D", memcpyBw);
  const double copyBw =
      measure(2 * bytes, iters, s, [&] { ok(braid::cuda::copy(c, a, bytes, s)); });
  std::printf("%-24s %10.1f\n", "copy kernel", copyBw);
  double floatSum = 0;
  for (int t = 0; t < ncclNumTypes; ++t)
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin}) {
      auto type = ncclDataType_t(t);
      if (!braid::cuda::built(type, op)) continue;
      const size_t count = bytes / braid::kernels::typeSize(type);
      const double bw = measure(3 * bytes, iters, s,
                                [&] { ok(braid::cuda::reduce(c, a, b, count, type, op, s)); });
      if (type == ncclFloat32 && op == ncclSum) floatSum = bw;
      std::printf("%-24s %10.1f\n",
                  (std::string("reduce ") + braid::kernels::typeName(type) + " " +
                   braid::kernels::opName(op))
                      .c_str(),
                  bw);
    }
  const double fused = measure(4 * bytes, iters, s, [&] {
    ok(braid::cuda::reduceCopy(c, b, a, c, bytes / 4, ncclFloat32, ncclSum, s));
  });
  std::printf("%-24s %10.1f\n", "reduceCopy float sum", fused);
  // The staged device path's copies: pinned host memory to and from the device, and host to
  // host (a pinned buffer copied on the stream). Here GB/s counts the bytes moved, once.
  void* pinned = nullptr;
  void* pinned2 = nullptr;
  ok(cudaMallocHost(&pinned, bytes), "cudaMallocHost");
  ok(cudaMallocHost(&pinned2, bytes), "cudaMallocHost");
  std::printf("# host copies, pinned memory; GB/s = bytes moved / time\n");
  const struct {
    const char* name;
    void* dst;
    const void* src;
  } copies[] = {{"cudaMemcpy D2H pinned", pinned, a},
                {"cudaMemcpy H2D pinned", c, pinned},
                {"cudaMemcpy H2H pinned", pinned2, pinned}};
  for (const auto& cp : copies)
    std::printf("%-24s %10.1f\n", cp.name, measure(bytes, iters, s, [&] {
                  ok(cudaMemcpyAsync(cp.dst, cp.src, bytes, cudaMemcpyDefault, s),
                     "cudaMemcpyAsync");
                }));
  cudaFreeHost(pinned);
  cudaFreeHost(pinned2);
  const double ratio = memcpyBw > 0 ? floatSum / memcpyBw : 0;
  std::printf("# float sum reduce / cudaMemcpy D2D: %.0f%% (target >= 85%%): %s\n", ratio * 100,
              ratio >= 0.85 ? "PASS" : "FAIL");
  return ratio >= 0.85 ? 0 : 1;
}
