// The collective sweep (tests/common/coll_sweep.h) with real processes, over shared memory and
// over TCP (NCCL_SHM_DISABLE=1), for 1 (shared memory only), 2, 3, 5 and 8 ranks. Threads as
// ranks already run every type and op; here the transports between processes are under test,
// so the sweep runs the representative (type, op) pairs, every root and in-place form, up to
// ~1M elements.
#include "common/coll_sweep.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "common/ranks.h"

namespace braid {
namespace {

class CollSweepProcesses : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(CollSweepProcesses, MatchesReference) {
  // Not a structured binding: a lambda below captures nranks, which clang 14 cannot do with one.
  const auto& shmDisable = std::get<0>(GetParam());
  const int nranks = std::get<1>(GetParam());
  const auto cases = testing::sweepCases(nranks, {false, true, true});
  auto results = testing::runProcesses(
      nranks,
      [&](int rank, ncclComm_t comm) {
        std::string e = testing::summary(testing::runSweep(comm, rank, nranks, cases));
        if (e.empty()) return 0;
        std::fprintf(stderr, "rank %d: %s\n", rank, e.c_str());
        return 1;
      },
      // A rank that stops early (a failed call) must not leave the others waiting for ever.
      {{"NCCL_SHM_DISABLE", shmDisable}, {"BRAID_TIMEOUT_MS", "20000"}}, 240);
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Shm, CollSweepProcesses,
                         ::testing::Combine(::testing::Values("0"),
                                            ::testing::Values(1, 2, 3, 5, 8)));
INSTANTIATE_TEST_SUITE_P(Tcp, CollSweepProcesses,
                         ::testing::Combine(::testing::Values("1"), ::testing::Values(2, 3, 5, 8)));

}  // namespace
}  // namespace braid
