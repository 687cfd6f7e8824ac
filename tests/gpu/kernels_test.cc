// The CUDA kernels on a device: every type and op this build has (BRAID_CUDA_TYPES/OPS) gives
// the host kernels' bytes exactly (NaNs as NaNs: common/element_compare.h), aligned and misaligned,
// fused and in place; scale, finishAvg and copy likewise. Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/element_compare.h"
#include "gpu_test_util.h"
#include "kernels/cuda/kernels.h"
#include "kernels/reduce.h"

namespace braid::cuda {
namespace {

using testing::DeviceBuffer;

constexpr auto& kTypes = kernels::testref::kAllTypes;
constexpr auto& kOps = kernels::testref::kReduceOps;

std::vector<unsigned char> randomBytes(size_t n, uint64_t seed) {
  std::vector<unsigned char> v(n);
  std::mt19937_64 rng(seed);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

class GpuKernels : public ::testing::Test {
 protected:
  void SetUp() override { BRAID_REQUIRE_DEVICE(); }
};

TEST_F(GpuKernels, ReduceAndFusedReduceCopyMatchHostKernels) {
  int compared = 0;
  for (ncclDataType_t type : kTypes)
    for (ncclRedOp_t op : kOps) {
      if (!built(type, op)) continue;
      ++compared;
      for (size_t count : {size_t(1), size_t(31), size_t(1000003)})
        for (size_t misalign : {size_t(0), size_t(1)}) {
          SCOPED_TRACE(std::string(kernels::typeName(type)) + " " + kernels::opName(op) +
                       " count " + std::to_string(count) + " misalign " + std::to_string(misalign));
          const size_t ts = kernels::typeSize(type), bytes = count * ts, off = misalign * ts;
          auto a = randomBytes(bytes, 1 + type * 4 + op),
               b = randomBytes(bytes, 50 + type * 4 + op);
          std::vector<unsigned char> want(bytes), got(bytes), got2(bytes);
          kernels::reduce(want.data(), a.data(), b.data(), count, type, op);
          DeviceBuffer da(bytes), db(bytes), dd(bytes), dd2(bytes);
          ASSERT_TRUE(da.ok && db.ok && dd.ok && dd2.ok);
          BRAID_CUDA_OK(cudaMemcpy(da.at(off), a.data(), bytes, cudaMemcpyHostToDevice));
          BRAID_CUDA_OK(cudaMemcpy(db.at(off), b.data(), bytes, cudaMemcpyHostToDevice));
          Status st =
              reduceCopy(dd.at(off), dd2.at(off), da.at(off), db.at(off), count, type, op, nullptr);
          ASSERT_TRUE(st.ok()) << st.message();
          BRAID_CUDA_OK(cudaDeviceSynchronize());
          BRAID_CUDA_OK(cudaMemcpy(got.data(), dd.at(off), bytes, cudaMemcpyDeviceToHost));
          BRAID_CUDA_OK(cudaMemcpy(got2.data(), dd2.at(off), bytes, cudaMemcpyDeviceToHost));
          EXPECT_EQ(testing::firstDifference(type, got.data(), want.data(), count), "") << "dst";
          EXPECT_EQ(testing::firstDifference(type, got2.data(), want.data(), count), "")
              << "fused second output";
          // In place, into a.
          st = reduce(da.at(off), da.at(off), db.at(off), count, type, op, nullptr);
          ASSERT_TRUE(st.ok()) << st.message();
          BRAID_CUDA_OK(cudaMemcpy(got.data(), da.at(off), bytes, cudaMemcpyDeviceToHost));
          EXPECT_EQ(testing::firstDifference(type, got.data(), want.data(), count), "")
              << "in place";
        }
    }
  EXPECT_GT(compared, 0) << "this build has no CUDA kernel at all";
}

TEST_F(GpuKernels, ScaleFinishAvgAndCopyMatchHost) {
  for (ncclDataType_t type : kTypes) {
    if (!built(type, ncclSum)) continue;
    SCOPED_TRACE(kernels::typeName(type));
    const size_t count = 100003, ts = kernels::typeSize(type), bytes = count * ts;
    auto src = randomBytes(bytes, 7 + type), scalar = randomBytes(ts, 8 + type);
    std::vector<unsigned char> want(bytes), got(bytes);
    DeviceBuffer ds(bytes), dd(bytes);
    ASSERT_TRUE(ds.ok && dd.ok);
    BRAID_CUDA_OK(cudaMemcpy(ds.at(0), src.data(), bytes, cudaMemcpyHostToDevice));

    kernels::scale(want.data(), src.data(), count, type, scalar.data());
    ASSERT_TRUE(scale(dd.at(0), ds.at(0), count, type, scalar.data(), nullptr).ok());
    BRAID_CUDA_OK(cudaMemcpy(got.data(), dd.at(0), bytes, cudaMemcpyDeviceToHost));
    EXPECT_EQ(testing::firstDifference(type, got.data(), want.data(), count), "") << "scale";

    want = src;
    kernels::finishAvg(want.data(), count, type, 6);
    ASSERT_TRUE(finishAvg(ds.at(0), count, type, 6, nullptr).ok());
    BRAID_CUDA_OK(cudaMemcpy(got.data(), ds.at(0), bytes, cudaMemcpyDeviceToHost));
    EXPECT_EQ(testing::firstDifference(type, got.data(), want.data(), count), "") << "finishAvg";

    // The copy is checked against the device's own bytes (`got`): the random inputs hold NaNs,
    // whose payloads the device's division and the host's need not agree on bit for bit.
    ASSERT_TRUE(copy(dd.at(3), ds.at(0), bytes - 3, nullptr).ok());
    std::vector<unsigned char> copied(bytes - 3);
    BRAID_CUDA_OK(cudaMemcpy(copied.data(), dd.at(3), bytes - 3, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(std::equal(copied.begin(), copied.end(), got.begin())) << "copy";
  }
}

TEST_F(GpuKernels, TypesLeftOutOfTheBuildAreRefusedByName) {
  for (ncclDataType_t type : kTypes)
    for (ncclRedOp_t op : kOps) {
      if (built(type, op)) continue;
      Status st = reduce(nullptr, nullptr, nullptr, 1, type, op, nullptr);
      EXPECT_EQ(st.code(), ncclInvalidUsage);
      EXPECT_NE(st.message().find("BRAID_CUDA_TYPES"), std::string::npos) << st.message();
    }
}

}  // namespace
}  // namespace braid::cuda
