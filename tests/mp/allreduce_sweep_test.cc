// The AllReduce sweep with real processes: every type x op x count {0, 1, 7, n-1, 1M+3} x
// in/out of place for 2, 3, 4 and 8 ranks, over shared memory and over TCP
// (NCCL_SHM_DISABLE=1), each rank checking its own result against the reference.
#include <gtest/gtest.h>

#include <cstdio>

#include "common/allreduce_check.h"
#include "common/ranks.h"

namespace braid {
namespace {

class AllReduceProcesses : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(AllReduceProcesses, MatchesReference) {
  // Not a structured binding: a lambda below captures nranks, which clang 14 cannot do with one.
  const auto& shmDisable = std::get<0>(GetParam());
  const int nranks = std::get<1>(GetParam());
  auto cases = testing::sweepCases(nranks, true);
  auto results = testing::runProcesses(
      nranks,
      [&](int rank, ncclComm_t comm) {
        for (const auto& c : cases) {
          std::string e = testing::runAllReduce(comm, rank, nranks, c);
          if (!e.empty()) {
            std::fprintf(stderr, "rank %d: %s\n", rank, e.c_str());
            return 1;
          }
        }
        return 0;
      },
      {{"NCCL_SHM_DISABLE", shmDisable}}, 600);
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

std::string caseName(const ::testing::TestParamInfo<AllReduceProcesses::ParamType>& info) {
  return std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Shm, AllReduceProcesses,
                         ::testing::Combine(::testing::Values("0"), ::testing::Values(2, 3, 4, 8)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Tcp, AllReduceProcesses,
                         ::testing::Combine(::testing::Values("1"), ::testing::Values(2, 3, 4, 8)),
                         caseName);

}  // namespace
}  // namespace braid
