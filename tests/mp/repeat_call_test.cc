// Repeated calls between processes (shared memory, TCP): a repeat of the kept plan
// (core/plan/plan.h) reads fresh inputs and follows op switches, as on threads
// (tests/inproc/repeat_call_test.cc).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/ranks.h"
#include "common/repeat_calls.h"

namespace braid {
namespace {

void expectRepeatsRight(const std::vector<std::pair<std::string, std::string>>& env) {
  auto results = testing::runProcesses(
      3,
      [](int rank, ncclComm_t comm) {
        std::string e = testing::alternateOps(rank, 3, comm, 200);
        if (!e.empty()) std::fprintf(stderr, "rank %d: %s\n", rank, e.c_str());
        return e.empty() ? 0 : 1;
      },
      env);
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

TEST(RepeatCall, FreshDataAndAlternatingOpsOverSharedMemory) { expectRepeatsRight({}); }

TEST(RepeatCall, FreshDataAndAlternatingOpsOverTcp) {
  expectRepeatsRight({{"NCCL_SHM_DISABLE", "1"}});
}

}  // namespace
}  // namespace braid
