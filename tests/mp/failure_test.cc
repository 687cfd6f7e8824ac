// A rank dies (SIGKILL) or stalls (alive but silent) in the middle of an AllReduce loop: with
// BRAID_TIMEOUT_MS set, every other rank returns an error within the timeout plus one second
// that names the lost rank, its host and pid, nobody hangs, and no shared-memory segment is
// left behind in /dev/shm.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/ranks.h"

namespace braid {
namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Shared {
  std::atomic<int64_t> killedAt;
  std::atomic<int64_t> failedAt[8];
  std::atomic<int> result[8];
  std::atomic<int> pid[8];
  char message[8][2048];
};

// Segments the test's ranks created ("braid-<kind>-<pid>-..."): other tests running at the same
// time have segments of their own.
std::vector<std::string> segmentsOf(const Shared& shared, int ranks) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = e.path().filename().string();
    for (int r = 0; r < ranks; ++r)
      if (name.rfind("braid-", 0) == 0 &&
          name.find("-" + std::to_string(shared.pid[r]) + "-") != std::string::npos)
        names.push_back(e.path().string());
  }
  return names;
}

enum class Fault { Kill, Stall };

void faultOneRank(const char* shmDisable, Fault fault) {
  constexpr int kRanks = 4, kVictim = 2, kTimeoutMs = 2000;
  auto* shared = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  new (shared) Shared{};

  auto results = testing::runProcesses(
      kRanks,
      [&](int rank, ncclComm_t comm) {
        shared->pid[rank] = getpid();
        std::vector<float> buf(1 << 18, 1.0f);
        for (int iter = 0; iter < 100000; ++iter) {
          if (rank == kVictim && iter == 20) {
            shared->killedAt = nowMs();
            if (fault == Fault::Kill) raise(SIGKILL);
            // A stalled peer: alive, connected, silent. Only the timeout can catch it.
            usleep((kTimeoutMs + 3000) * 1000);
            _exit(0);
          }
          ncclResult_t res =
              ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclMax, comm, nullptr);
          if (res != ncclSuccess) {
            shared->failedAt[rank] = nowMs();
            shared->result[rank] = res;
            snprintf(shared->message[rank], sizeof shared->message[rank], "%s",
                     ncclGetLastError(comm));
            return 0;
          }
        }
        return 1;  // never noticed the dead peer
      },
      {{"BRAID_TIMEOUT_MS", std::to_string(kTimeoutMs)}, {"NCCL_SHM_DISABLE", shmDisable}}, 60);

  EXPECT_EQ(results[kVictim].exitCode, fault == Fault::Kill ? -SIGKILL : 0);
  for (int r = 0; r < kRanks; ++r) {
    if (r == kVictim) continue;
    EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << " did not return an error";
    int res = shared->result[r];
    EXPECT_TRUE(res == ncclRemoteError || res == ncclSystemError) << "rank " << r << ": " << res;
    if (fault == Fault::Stall) {
      EXPECT_GE(shared->failedAt[r] - shared->killedAt, kTimeoutMs - 100)
          << "rank " << r << " gave up early";
    }
    EXPECT_LE(shared->failedAt[r] - shared->killedAt, kTimeoutMs + 1000) << "rank " << r;
    // Every survivor names the lost rank, with its host and pid, whomever it waited on itself.
    const std::string named = "no word from rank " + std::to_string(kVictim) + " (host ";
    const std::string pid = "pid " + std::to_string(shared->pid[kVictim]) + ")";
    const std::string text = shared->message[r];
    EXPECT_NE(text.find(named), std::string::npos) << "rank " << r << ": " << text;
    EXPECT_NE(text.find(pid), std::string::npos) << "rank " << r << ": " << text;
  }
  const auto left = segmentsOf(*shared, kRanks);
  EXPECT_TRUE(left.empty()) << "a /dev/shm segment was left behind: " << left.front();
  munmap(shared, sizeof(Shared));
}

TEST(RankFailure, KilledPeerOverShm) { faultOneRank("0", Fault::Kill); }
TEST(RankFailure, KilledPeerOverTcp) { faultOneRank("1", Fault::Kill); }
TEST(RankFailure, StalledPeerTimesOutOverShm) { faultOneRank("0", Fault::Stall); }
TEST(RankFailure, StalledPeerTimesOutOverTcp) { faultOneRank("1", Fault::Stall); }

}  // namespace
}  // namespace braid
