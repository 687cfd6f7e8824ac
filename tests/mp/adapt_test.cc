// Adaptation across processes (core/adapt/adapt.h): four processes calling themselves h0..h3
// (NCCL_HOSTID, so the init probe runs and adaptation is on) run a loop of 1 MiB AllReduces in
// which rank 2 starts calls 9-23 30 ms late. Every rank must name rank 2 late at the same call,
// report it in braidCommGetStats while it is late and not after, never re-plan for it (a
// re-plan cannot help a late rank), and get every result exact. And a rank silent at a vote is
// named on every other rank within BRAID_TIMEOUT_MS, while an abort during a vote ends the call
// as an abort, naming no rank.
#include <braid/braid.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/log_file.h"
#include "common/ranks.h"

namespace {

constexpr int kCalls = 36, kLateFrom = 9, kLateUntil = 24;  // rank 2 late in [from, until)
constexpr int kWindowCalls = 3;  // braid::adapt::kWindow: large calls between two votes

TEST(AdaptProcesses, ALateRankIsNamedAtTheSameCallOnEveryRankAndNothingReplans) {
  const std::string logPrefix = "/tmp/braid-adapt-mp-test." + std::to_string(getpid());
  auto results = braid::testing::runProcesses(
      4,
      [](int rank, ncclComm_t comm) {
        const size_t count = 262144;  // 1 MiB of floats: a call adaptation watches
        std::vector<float> v(count);
        for (int call = 0; call < kCalls; ++call) {
          for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>((i + rank + call) % 97);
          if (rank == 2 && call >= kLateFrom && call < kLateUntil)
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
          if (ncclAllReduce(v.data(), v.data(), count, ncclFloat, ncclSum, comm, nullptr) !=
              ncclSuccess)
            return 1;
          for (size_t i = 0; i < count; ++i) {
            float want = 0;
            for (int r = 0; r < 4; ++r) want += static_cast<float>((i + r + call) % 97);
            if (v[i] != want) return 2;
          }
          braidCommStats_t s;
          if (braidCommGetStats(comm, &s) != ncclSuccess) return 3;
          if (call == kLateUntil - 1 && (s.lateRank != 2 || s.lateUs < 10000)) return 4;
          if (call == kCalls - 1 && (s.lateRank != -1 || s.planChanges != 0)) return 5;
        }
        return 0;
      },
      {{"NCCL_HOSTID", "h%r"},
       {"NCCL_DEBUG", "INFO"},
       {"NCCL_DEBUG_SUBSYS", "TUNING"},
       {"NCCL_DEBUG_FILE", logPrefix + ".%p.log"}});
  const std::string logs = braid::testing::takeProcessLogs(logPrefix);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << "\n" << logs;
  // "adapt: comm 0x.. rank R: call N: rank 2 (host h2, pid P) is late: ..."
  const std::regex late(
      R"(adapt: comm \S+ rank (\d): call (\d+): rank 2 \(host h2, pid \d+\) is late)");
  std::map<int, std::string> namedAt;
  for (auto it = std::sregex_iterator(logs.begin(), logs.end(), late); it != std::sregex_iterator();
       ++it)
    namedAt[std::stoi((*it)[1])] = (*it)[2];
  EXPECT_EQ(namedAt.size(), 4u) << logs;
  std::set<std::string> calls;
  for (const auto& [rank, call] : namedAt) calls.insert(call);
  EXPECT_EQ(calls.size(), 1u) << "the ranks named rank 2 at different calls:\n" << logs;
  EXPECT_EQ(logs.find("probing the network again"), std::string::npos) << logs;
  EXPECT_NE(logs.find("rank 2's large calls no longer start late"), std::string::npos) << logs;
}

// A rank silent at a vote (its own work outlasts BRAID_TIMEOUT_MS just before one) is named on
// every other rank: rank 0, which gathers the votes, names it silent, and the others, which hear
// that rank 0 gave up (from rank 0, or from a rank that heard it first and gave up after it),
// name it silent too, through rank 0's report, naming rank 0; it names rank 0, which gave up on
// it.
TEST(AdaptProcesses, ARankSilentAtAVoteIsNamedOnEveryOtherRank) {
  constexpr int kTimeoutMs = 1000;
  constexpr int kSilentBefore = 2 * kWindowCalls;  // a vote precedes every kWindowCalls-th call
  auto results = braid::testing::runProcesses(
      4,
      [](int rank, ncclComm_t comm) {
        std::vector<float> v(262144, 1.0f);  // 1 MiB: a call adaptation watches
        for (int call = 0; call <= kSilentBefore; ++call) {
          if (rank == 3 && call == kSilentBefore)
            std::this_thread::sleep_for(std::chrono::milliseconds(3 * kTimeoutMs));
          const ncclResult_t res =
              ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, nullptr);
          if (call < kSilentBefore) {
            if (res != ncclSuccess) return 1;
            continue;
          }
          if (res == ncclSuccess) return 2;
          const std::string error = ncclGetLastError(comm);
          fprintf(stderr, "rank %d: %s\n", rank, error.c_str());
          // Rank 3 wakes to find rank 0's report, or rank 0 gone already: it names rank 0.
          const std::string want = rank == 0 ? "rank 3 (host h3, pid" : "rank 0 (host h0, pid";
          if (error.find("adaptation's vote before call") == std::string::npos ||
              error.find(want) == std::string::npos)
            return 3;
          if (rank == 1 || rank == 2) {
            if (error.find("gave up on its peers") == std::string::npos ||
                error.find("no word from rank 3 (host h3, pid") == std::string::npos)
              return 4;
          }
        }
        return 0;
      },
      {{"NCCL_HOSTID", "h%r"}, {"BRAID_TIMEOUT_MS", std::to_string(kTimeoutMs)}});
  for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

// ncclCommAbort while rank 0 waits in a vote for rank 3, which never comes: the call ends as the
// data path's calls end on an abort, saying so; it names no rank lost and reports no loss.
TEST(AdaptProcesses, AnAbortDuringAVoteEndsTheCallAsAnAbort) {
  constexpr int kVoteBefore = 2 * kWindowCalls;
  auto results = braid::testing::runProcesses(
      4,
      [](int rank, ncclComm_t comm) {
        std::vector<float> v(262144, 1.0f);  // 1 MiB: a call adaptation watches
        for (int call = 0; call < kVoteBefore; ++call)
          if (ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, nullptr) !=
              ncclSuccess)
            return 1;
        if (rank == 3) {  // never votes; gone before rank 0's wait could time out
          std::this_thread::sleep_for(std::chrono::seconds(3));
          _exit(0);
        }
        if (rank != 0) {  // vote, then lose rank 0 one way or another
          (void)ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, nullptr);
          return 0;
        }
        std::thread aborter([comm] {
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          ncclCommAbort(comm);
        });
        const ncclResult_t res =
            ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, nullptr);
        aborter.join();
        const std::string error = ncclGetLastError(nullptr);
        fprintf(stderr, "rank 0: %s: %s\n", ncclGetErrorString(res), error.c_str());
        int code = 0;
        if (res == ncclSuccess)
          code = 2;
        else if (error.find("adaptation's vote before call") == std::string::npos ||
                 error.find("aborted") == std::string::npos)
          code = 3;
        else if (error.find("gave up") != std::string::npos ||
                 error.find("stopped or died") != std::string::npos ||
                 error.find("silent") != std::string::npos)
          code = 4;
        fflush(stderr);
        _exit(code);  // the communicator is gone: runProcesses must not destroy it
      },
      {{"NCCL_HOSTID", "h%r"}, {"BRAID_TIMEOUT_MS", "5000"}});
  for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

}  // namespace
