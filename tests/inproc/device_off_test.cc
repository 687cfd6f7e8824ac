// Without device support (a build without CUDA, or a CUDA build on a machine without a driver or
// device, as every CI machine is): one INFO line says so, communicators are bound to no device,
// host memory works, and ncclMemAlloc serves host memory. Skips where a device is usable.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/ranks.h"
#include "core/device/device.h"
#include "nccl.h"

namespace braid::testing {
namespace {

bool deviceSupport() {
  braid::device::probe();
  return braid::device::enabled();
}

TEST(DeviceOff, OneInfoLineSaysHostMemoryOnly) {
  // The threadsafe style re-runs this test in a fresh process up to the EXPECT_EXIT: logging
  // must be on before the skip check probes (and logs) there.
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT", 1);
  if (deviceSupport()) GTEST_SKIP() << "a CUDA device is usable here";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT({ std::exit(hostOnlyExitCode()); }, ::testing::ExitedWithCode(0),
              "device-memory support off, host memory only");
}

TEST(DeviceOff, HostMemoryCollectivesAndMemAlloc) {
  if (deviceSupport()) GTEST_SKIP() << "a CUDA device is usable here: the GPU tests cover this";
  auto results = runThreads(2, [](int rank, ncclComm_t comm) -> std::string {
    int dev = 0;
    if (ncclCommCuDevice(comm, &dev) != ncclSuccess || dev != -1)
      return "ncclCommCuDevice is not -1";
    void* mem = nullptr;
    if (ncclMemAlloc(&mem, 4096) != ncclSuccess) return "ncclMemAlloc failed";
    auto* f = static_cast<float*>(mem);  // host memory: writable here
    for (int i = 0; i < 16; ++i) f[i] = float(rank + 1);
    // The stream argument is ignored for host memory, whatever it holds.
    if (ncclAllReduce(f, f, 16, ncclFloat32, ncclSum, comm,
                      reinterpret_cast<cudaStream_t>(0x1234)) != ncclSuccess)
      return std::string("ncclAllReduce: ") + ncclGetLastError(comm);
    bool ok = f[0] == 3.0f && f[15] == 3.0f;
    if (ncclMemFree(mem) != ncclSuccess) return "ncclMemFree failed";
    return ok ? "" : "wrong sum";
  });
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r], "") << "rank " << r;
}

}  // namespace
}  // namespace braid::testing
