// Adaptation across processes (core/adapt/adapt.h): four processes calling themselves h0..h3
// (NCCL_HOSTID, so the init probe runs and adaptation is on) run a loop of 1 MiB AllReduces in
// which rank 2 starts calls 9-23 30 ms late. Every rank must name rank 2 late at the same call,
// report it in braidCommGetStats while it is late and not after, never re-plan for it (a
// re-plan cannot help a late rank), and get every result exact.
#include <gtest/gtest.h>
#include <braid/braid.h>

#include <chrono>
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
  const std::regex late(R"(adapt: comm \S+ rank (\d): call (\d+): rank 2 \(host h2, pid \d+\) is late)");
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

}  // namespace
