// Mismatched calls between processes, over shared memory and TCP, where most ranks never talk to
// the rank whose call differs (a forced ring of 6): AllReduce checks its signatures only with
// the peers it exchanges data with (tests/inproc/mismatch_test.cc has every kind of mismatch on
// threads), so the others must hear of it: every process returns ncclInvalidUsage, with a message
// that names both calls. No collective timeout is set, so a rank that was never told would wait
// until the harness kills it; how fast the notice travels is not asserted (under sanitizers on
// a loaded machine it takes seconds).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/ranks.h"

namespace {

void expectEveryRankFails(const std::vector<std::pair<std::string, std::string>>& transport) {
  std::vector<std::pair<std::string, std::string>> env = transport;
  env.emplace_back("BRAID_ALGO", "ring");
  env.emplace_back("BRAID_TIMEOUT_MS", "0");
  auto results = braid::testing::runProcesses(
      6,
      [](int rank, ncclComm_t comm) {
        std::vector<float> b(64, 1.0f);
        const ncclResult_t res = ncclAllReduce(b.data(), b.data(), rank == 2 ? 60 : 64, ncclFloat,
                                               ncclSum, comm, nullptr);
        const std::string msg = ncclGetLastError(comm);
        if (res != ncclInvalidUsage) {
          std::fprintf(stderr, "rank %d returned %d: %s\n", rank, res, msg.c_str());
          return 1;
        }
        if (msg.find("ncclAllReduce(count=60, float, sum)") == std::string::npos ||
            msg.find("ncclAllReduce(count=64, float, sum)") == std::string::npos) {
          std::fprintf(stderr, "rank %d: the message does not name both calls: %s\n", rank,
                       msg.c_str());
          return 3;
        }
        return 0;
      },
      env, 30);
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

TEST(MismatchBetweenProcesses, RanksThatNeverTalkToTheCulpritHearOfItOverSharedMemory) {
  expectEveryRankFails({});
}

TEST(MismatchBetweenProcesses, RanksThatNeverTalkToTheCulpritHearOfItOverTcp) {
  expectEveryRankFails({{"NCCL_SHM_DISABLE", "1"}});
}

}  // namespace
