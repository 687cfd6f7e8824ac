// A communicator takes its racks and link costs from BRAID_CLUSTER_FILE: with four processes
// calling themselves h0..h3 (NCCL_HOSTID), the map's two racks appear in the GRAPH log, the
// TUNING log prices algorithms on them, and collectives stay correct.
#include <gtest/gtest.h>

#include <sched.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/log_file.h"
#include "common/ranks.h"

namespace {

TEST(ClusterMap, RanksGetTheMapsRacks) {
  const std::string map =
      std::string(BRAID_SOURCE_DIR) + "/tests/fixtures/topo/cluster_four_hosts.xml";
  auto results =
      braid::testing::runProcesses(4,
                                   [](int rank, ncclComm_t comm) {
                                     std::vector<int> v(4096, rank + 1);
                                     if (ncclAllReduce(v.data(), v.data(), v.size(), ncclInt32,
                                                       ncclSum, comm, nullptr) != ncclSuccess)
                                       return 1;
                                     for (int x : v)
                                       if (x != 10) return 2;
                                     return 0;
                                   },
                                   {{"NCCL_HOSTID", "h%r"},
                                    {"BRAID_CLUSTER_FILE", map},
                                    {"NCCL_DEBUG", "INFO"},
                                    {"NCCL_DEBUG_SUBSYS", "GRAPH,TUNING"},
                                    {"NCCL_DEBUG_FILE", "/tmp/braid-cluster-map-test.%p.log"}});
  for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
  std::string logs = braid::testing::takeProcessLogs("/tmp/braid-cluster-map-test");
  EXPECT_NE(logs.find("r0"), std::string::npos) << logs;
  EXPECT_NE(logs.find("r1"), std::string::npos) << logs;
  EXPECT_NE(logs.find("ncclAllReduce count 4096"), std::string::npos) << logs;
}

// Every AllReduce algorithm, forced, runs correctly through the executor on the map's two racks
// (the schedule tests prove the schedules; this runs them over shared memory between processes).
TEST(ClusterMap, EveryAllReduceAlgorithmOnTwoRacks) {
  const std::string map =
      std::string(BRAID_SOURCE_DIR) + "/tests/fixtures/topo/cluster_four_hosts.xml";
  for (const char* algo :
       {"ring", "direct", "hierdirect", "rhd", "tree", "hier", "hierpipe", "rackring"}) {
    auto results = braid::testing::runProcesses(
        4,
        [](int rank, ncclComm_t comm) {
          for (size_t count : {size_t{1}, size_t{7}, size_t{300007}}) {
            std::vector<int> v(count);
            for (size_t i = 0; i < count; ++i) v[i] = static_cast<int>(i % 1000) * (rank + 1);
            if (ncclAllReduce(v.data(), v.data(), count, ncclInt32, ncclSum, comm, nullptr) !=
                ncclSuccess)
              return 1;
            for (size_t i = 0; i < count; ++i)
              if (v[i] != static_cast<int>(i % 1000) * 10) return 2;
          }
          return 0;
        },
        {{"NCCL_HOSTID", "h%r"}, {"BRAID_CLUSTER_FILE", map}, {"BRAID_ALGO", algo}});
    for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].exitCode, 0) << algo << " rank " << r;
  }
}

// hierdirect adds the racks' sums in one order on every rank: the same bits everywhere, where
// floating-point order shows (magnitudes that cancel, signed zeros, NaN payloads). Each rank
// gathers every rank's result and compares the bits.
TEST(ClusterMap, HierDirectGivesEveryRankTheSameBits) {
  const std::string map =
      std::string(BRAID_SOURCE_DIR) + "/tests/fixtures/topo/cluster_four_hosts.xml";
  auto results = braid::testing::runProcesses(
      4,
      [](int rank, ncclComm_t comm) {
        const size_t count = 3001;
        std::vector<float> v(count);
        for (size_t i = 0; i < count; ++i) {
          switch (i % 4) {
            case 0: v[i] = (rank % 2 ? 1e8f : -1e8f) + static_cast<float>(rank) * 0.37f; break;
            case 1: v[i] = rank % 2 ? 0.0f : -0.0f; break;
            case 2: {
              const uint32_t nan = 0x7fc00000u | static_cast<uint32_t>(rank + 1);
              std::memcpy(&v[i], &nan, sizeof nan);
              break;
            }
            default: v[i] = 1.0f / static_cast<float>(3 + rank + static_cast<int>(i % 11)); break;
          }
        }
        for (ncclRedOp_t op : {ncclSum, ncclMax, ncclProd}) {
          std::vector<float> out(count), all(4 * count);
          if (ncclAllReduce(v.data(), out.data(), count, ncclFloat, op, comm, nullptr) !=
              ncclSuccess)
            return 1;
          if (ncclAllGather(out.data(), all.data(), count, ncclFloat, comm, nullptr) != ncclSuccess)
            return 2;
          for (int r = 1; r < 4; ++r)
            if (std::memcmp(all.data(), all.data() + r * count, count * sizeof(float)) != 0)
              return 3;
        }
        return 0;
      },
      {{"NCCL_HOSTID", "h%r"},
       {"BRAID_CLUSTER_FILE", map},
       {"BRAID_ALGO", "hierdirect"},
       {"NCCL_DEBUG", "INFO"},
       {"NCCL_DEBUG_SUBSYS", "TUNING"},
       {"NCCL_DEBUG_FILE", "/tmp/braid-hierdirect-test.%p.log"}});
  for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
  const std::string logs =
      braid::testing::takeProcessLogs("/tmp/braid-hierdirect-test");
  EXPECT_NE(logs.find("hierdirect"), std::string::npos) << logs;  // it ran, not a fallback
}

// Four ranks held to one CPU (the affinity the processes inherit): the cost model prices every
// alpha four times over, and says so in the GRAPH log.
TEST(ClusterMap, RanksThatOutnumberCoresScaleTheAlphas) {
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &saved)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  auto results = braid::testing::runProcesses(
      4,
      [](int rank, ncclComm_t comm) {
        int v = rank;
        return ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, comm, nullptr) == ncclSuccess && v == 6
                   ? 0
                   : 1;
      },
      {{"NCCL_DEBUG", "INFO"},
       {"NCCL_DEBUG_SUBSYS", "GRAPH"},
       {"NCCL_DEBUG_FILE", "/tmp/braid-cores-test.%p.log"}});
  sched_setaffinity(0, sizeof saved, &saved);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
  std::string logs = braid::testing::takeProcessLogs("/tmp/braid-cores-test");
  EXPECT_NE(logs.find("4.00 ranks per core on the most crowded machine: every alpha priced x4.00"),
            std::string::npos)
      << logs;
}

}  // namespace
