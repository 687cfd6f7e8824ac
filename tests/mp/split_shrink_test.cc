// Split and shrink between processes. Split: two colors over shared memory, each child sums its
// own group. Shrink: a rank is SIGKILLed; the survivors notice (their AllReduce fails within
// BRAID_TIMEOUT_MS), shrink it away using only messages among themselves, and carry on: an
// AllReduce over the new communicator gives the survivors' sum. The victim is rank 0 in one case,
// so the survivors' leader is not the rank that hosted the original root.
#include <gtest/gtest.h>
#include <signal.h>

#include <vector>

#include "common/ranks.h"

namespace braid {
namespace {

enum Exit {
  kOk = 0,
  kNeverFailed = 1,
  kNoChild = 2,  // shrink or split failed
  kWrongShape = 3,
  kChildFailed = 4,
  kWrongSum = 5
};

void killAndShrink(int victim, const char* shmDisable, int shrinkFlags) {
  constexpr int kRanks = 4;
  auto results = testing::runProcesses(
      kRanks,
      [&](int rank, ncclComm_t comm) -> int {
        std::vector<float> buf(1 << 16, 1.0f);
        for (int iter = 0; iter < 100000; ++iter) {
          if (rank == victim && iter == 3) raise(SIGKILL);
          if (ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclMax, comm,
                            nullptr) != ncclSuccess)
            break;
          if (iter == 99999) return kNeverFailed;
        }
        int excluded[] = {victim};
        ncclComm_t child = nullptr;
        if (ncclCommShrink(comm, excluded, 1, &child, nullptr, shrinkFlags) != ncclSuccess ||
            !child) {
          fprintf(stderr, "rank %d: shrink: %s\n", rank, ncclGetLastError(comm));
          return kNoChild;
        }
        int newRank = -1, n = -1;
        ncclCommUserRank(child, &newRank);
        ncclCommCount(child, &n);
        if (n != kRanks - 1 || newRank != (rank < victim ? rank : rank - 1)) return kWrongShape;
        std::vector<int> mine(4096, rank + 1);
        if (ncclAllReduce(mine.data(), mine.data(), mine.size(), ncclInt32, ncclSum, child,
                          nullptr) != ncclSuccess) {
          fprintf(stderr, "rank %d: AllReduce on the shrunk communicator: %s\n", rank,
                  ncclGetLastError(child));
          return kChildFailed;
        }
        const int expected = 1 + 2 + 3 + 4 - (victim + 1);
        for (int x : mine)
          if (x != expected) return kWrongSum;
        ncclCommDestroy(child);
        return kOk;
      },
      {{"BRAID_TIMEOUT_MS", "2000"}, {"NCCL_SHM_DISABLE", shmDisable}}, 60);
  EXPECT_EQ(results[victim].exitCode, -SIGKILL);
  for (int r = 0; r < kRanks; ++r) {
    if (r != victim) {
      EXPECT_EQ(results[r].exitCode, kOk) << "rank " << r;
    }
  }
}

TEST(SplitAcrossProcesses, TwoColors) {
  auto results = testing::runProcesses(4, [](int rank, ncclComm_t comm) -> int {
    ncclComm_t child = nullptr;
    if (ncclCommSplit(comm, rank % 2, -rank, &child, nullptr) != ncclSuccess || !child) {
      fprintf(stderr, "rank %d: split: %s\n", rank, ncclGetLastError(comm));
      return kNoChild;
    }
    int newRank = -1;
    ncclCommUserRank(child, &newRank);
    if (newRank != 1 - rank / 2) return kWrongShape;  // keys reverse each pair
    std::vector<int> mine(100000, rank + 1);
    if (ncclAllReduce(mine.data(), mine.data(), mine.size(), ncclInt32, ncclSum, child, nullptr) !=
        ncclSuccess)
      return kChildFailed;
    for (int x : mine)
      if (x != (rank % 2 == 0 ? 1 + 3 : 2 + 4)) return kWrongSum;
    ncclCommDestroy(child);
    return kOk;
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].exitCode, kOk) << "rank " << r;
}

TEST(ShrinkAfterKill, MiddleRankOverShm) { killAndShrink(2, "0", NCCL_SHRINK_DEFAULT); }
TEST(ShrinkAfterKill, RankZeroOverTcp) { killAndShrink(0, "1", NCCL_SHRINK_DEFAULT); }
TEST(ShrinkAfterKill, AbortFlagOverShm) { killAndShrink(3, "0", NCCL_SHRINK_ABORT); }

}  // namespace
}  // namespace braid
