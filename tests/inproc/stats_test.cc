// Telemetry (braidCommGetStats, braidCommGetPeerStats, braidCommGetTagStats): bytes counted
// exactly against known traffic, both sides of every connection agreeing after collectives,
// failed calls and link errors counted, calls per profiler tag, the arguments checked, and the
// summary logged at destroy.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "common/log_file.h"
#include "common/ranks.h"

namespace {

using braid::testing::runThreads;

std::string peerStats(ncclComm_t comm, int peer, braidPeerStats_t* out) {
  if (braidCommGetPeerStats(comm, peer, out) != ncclSuccess)
    return std::string("braidCommGetPeerStats: ") + ncclGetLastError(comm);
  return "";
}

// Every peer's stats of `rank` into row[peer] (its own entry left alone).
std::string everyPeer(ncclComm_t comm, int rank, std::vector<braidPeerStats_t>* row) {
  for (int p = 0; p < static_cast<int>(row->size()); ++p)
    if (p != rank)
      if (auto e = peerStats(comm, p, &(*row)[p]); !e.empty()) return e;
  return "";
}

// Without mismatch checking a send is its data alone: rank 0's count of bytes sent to rank 1,
// and rank 1's of bytes received from rank 0, grow by exactly its size, on both transports.
class TelemetryOver : public ::testing::TestWithParam<const char*> {};

TEST_P(TelemetryOver, ASendIsCountedExactlyOnBothSides) {
  setenv("BRAID_TRANSPORTS", GetParam(), 1);
  setenv("BRAID_CHECK_MISMATCH", "0", 1);
  constexpr size_t kBytes = (size_t{1} << 20) + 3;
  std::vector<braidPeerStats_t> before(2), after(2);
  std::vector<braidCommStats_t> calls(2);
  auto errors = runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    const int peer = 1 - rank;
    std::vector<char> data(kBytes, static_cast<char>(rank + 1));
    if (auto e = peerStats(comm, peer, &before[rank]); !e.empty()) return e;
    const ncclResult_t rc = rank == 0
                                ? ncclSend(data.data(), kBytes, ncclInt8, peer, comm, nullptr)
                                : ncclRecv(data.data(), kBytes, ncclInt8, peer, comm, nullptr);
    if (rc != ncclSuccess) return ncclGetLastError(comm);
    if (auto e = peerStats(comm, peer, &after[rank]); !e.empty()) return e;
    if (braidCommGetStats(comm, &calls[rank]) != ncclSuccess) return "braidCommGetStats";
    return "";
  });
  unsetenv("BRAID_TRANSPORTS");
  unsetenv("BRAID_CHECK_MISMATCH");
  for (const auto& e : errors) ASSERT_EQ(e, "");
  EXPECT_EQ(after[0].bytesSent - before[0].bytesSent, kBytes);
  EXPECT_EQ(after[0].bytesReceived - before[0].bytesReceived, 0u);
  EXPECT_EQ(after[1].bytesReceived - before[1].bytesReceived, kBytes);
  EXPECT_EQ(after[1].bytesSent - before[1].bytesSent, 0u);
  EXPECT_GE(after[0].messagesSent - before[0].messagesSent, 1u);
  EXPECT_EQ(after[0].messagesSent - before[0].messagesSent,
            after[1].messagesReceived - before[1].messagesReceived);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(calls[r].calls, 1u) << "rank " << r;
    EXPECT_EQ(calls[r].failedCalls, 0u) << "rank " << r;
    EXPECT_EQ(calls[r].timedCalls, 1u) << "rank " << r;  // 1 MiB: timed
    EXPECT_GT(calls[r].callNs, 0u) << "rank " << r;
    EXPECT_EQ(calls[r].errors, 0u) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, TelemetryOver, ::testing::Values("loopback", "tcp"));

// After AllReduces of several sizes (signatures on), what each rank counts as sent to a peer
// is what that peer counts as received from it, message for message; every rank received at
// least the whole result of each call (each element needs at least one value from elsewhere);
// and the communicator's totals are the sums of its peers'.
TEST(Telemetry, BothEndsOfEveryConnectionAgreeAfterAllReduces) {
  constexpr int n = 4;
  const std::vector<size_t> counts = {1, 1000, 100000, 1 << 20};
  std::vector<std::vector<braidPeerStats_t>> seen(n, std::vector<braidPeerStats_t>(n));
  std::vector<braidCommStats_t> total(n);
  auto errors = runThreads(n, [&](int rank, ncclComm_t comm) -> std::string {
    for (size_t count : counts) {
      std::vector<float> buf(count, 1.0f);
      if (ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, ncclSum, comm, nullptr) !=
          ncclSuccess)
        return ncclGetLastError(comm);
    }
    if (auto e = everyPeer(comm, rank, &seen[rank]); !e.empty()) return e;
    if (braidCommGetStats(comm, &total[rank]) != ncclSuccess) return "braidCommGetStats";
    return "";
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  size_t resultBytes = 0;
  for (size_t c : counts) resultBytes += c * sizeof(float);
  for (int r = 0; r < n; ++r) {
    braidPeerStats_t sum{};
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      EXPECT_EQ(seen[r][p].bytesSent, seen[p][r].bytesReceived) << r << " -> " << p;
      EXPECT_EQ(seen[r][p].messagesSent, seen[p][r].messagesReceived) << r << " -> " << p;
      EXPECT_EQ(seen[r][p].errors, 0u);
      sum.bytesSent += seen[r][p].bytesSent;
      sum.bytesReceived += seen[r][p].bytesReceived;
      sum.messagesSent += seen[r][p].messagesSent;
      sum.messagesReceived += seen[r][p].messagesReceived;
    }
    EXPECT_GE(sum.bytesReceived, resultBytes) << "rank " << r;
    EXPECT_EQ(total[r].bytesSent, sum.bytesSent) << "rank " << r;
    EXPECT_EQ(total[r].bytesReceived, sum.bytesReceived) << "rank " << r;
    EXPECT_EQ(total[r].messagesSent, sum.messagesSent) << "rank " << r;
    EXPECT_EQ(total[r].messagesReceived, sum.messagesReceived) << "rank " << r;
    EXPECT_EQ(total[r].calls, counts.size()) << "rank " << r;
  }
}

// Mismatched calls fail on every rank: each counts one failed call, the rank that found the
// mismatch on a connection counts an error on it, and the failed communicator's counts can
// still be read.
TEST(Telemetry, AFailedCallAndItsLinkErrorAreCounted) {
  std::vector<braidCommStats_t> total(2);
  auto errors = runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    std::vector<float> buf(64, 1.0f);
    if (ncclAllReduce(buf.data(), buf.data(), rank == 0 ? 16 : 32, ncclFloat, ncclSum, comm,
                      nullptr) == ncclSuccess)
      return "a mismatched AllReduce succeeded";
    if (braidCommGetStats(comm, &total[rank]) != ncclSuccess)
      return std::string("braidCommGetStats on a failed communicator: ") + ncclGetLastError(comm);
    return "";
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(total[r].calls, 1u) << "rank " << r;
    EXPECT_EQ(total[r].failedCalls, 1u) << "rank " << r;
  }
  EXPECT_GE(total[0].errors + total[1].errors, 1u);
}

// Timed calls (4 MiB) over TCP: every connection that carried data was busy, stalled no longer
// than that, has a measured time per MiB and the model's price for the pair, and the kernel's
// view of its sockets; a 4000-byte call is not timed and changes none of it. The summary at
// destroy gives the model per level.
TEST(Telemetry, TimedCallsMeasureEveryConnection) {
  braid::testing::LogFile log("INIT");
  setenv("BRAID_TRANSPORTS", "tcp", 1);
  constexpr int n = 4;
  std::vector<std::vector<braidPeerStats_t>> seen(n, std::vector<braidPeerStats_t>(n)),
      after(n, std::vector<braidPeerStats_t>(n));
  auto errors = runThreads(n, [&](int rank, ncclComm_t comm) -> std::string {
    std::vector<float> big(1 << 20, 1.0f), small(1000, 1.0f);
    for (int i = 0; i < 3; ++i)
      if (ncclAllReduce(big.data(), big.data(), big.size(), ncclFloat, ncclSum, comm, nullptr) !=
          ncclSuccess)
        return ncclGetLastError(comm);
    if (auto e = everyPeer(comm, rank, &seen[rank]); !e.empty()) return e;
    if (ncclAllReduce(small.data(), small.data(), small.size(), ncclFloat, ncclSum, comm,
                      nullptr) != ncclSuccess)
      return ncclGetLastError(comm);
    if (auto e = everyPeer(comm, rank, &after[rank]); !e.empty()) return e;
    return "";
  });
  unsetenv("BRAID_TRANSPORTS");
  for (const auto& e : errors) ASSERT_EQ(e, "");
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      const braidPeerStats_t& s = seen[r][p];
      if (std::max(s.bytesSent, s.bytesReceived) < (size_t{256} << 10)) continue;  // no data
      EXPECT_GT(s.busyNs, 0u) << r << " -> " << p;
      EXPECT_LE(s.stallNs, s.busyNs) << r << " -> " << p;
      EXPECT_GT(s.measuredUsPerMiB, 0.0) << r << " -> " << p;
      EXPECT_GT(s.modelUsPerMiB, 0.0) << r << " -> " << p;
      EXPECT_EQ(s.level, 0) << r << " -> " << p;  // threads: one host
      EXPECT_GT(s.tcpRttUs, 0u) << r << " -> " << p;
      EXPECT_GT(s.tcpCwnd, 0u) << r << " -> " << p;
      EXPECT_EQ(after[r][p].busyNs, s.busyNs) << r << " -> " << p << ": an untimed call counted";
      EXPECT_EQ(after[r][p].measuredUsPerMiB, s.measuredUsPerMiB) << r << " -> " << p;
    }
  const std::string text = log.read();
  EXPECT_NE(text.find("; level 0: "), std::string::npos) << text;
  EXPECT_NE(text.find(" us/MiB measured (median of "), std::string::npos) << text;
}

// Shared memory has no kernel view of a path: the TCP fields stay 0 while the rest is measured.
TEST(Telemetry, OtherTransportsLeaveTheTcpFieldsZero) {
  setenv("BRAID_TRANSPORTS", "loopback", 1);
  std::vector<braidPeerStats_t> seen(2);
  auto errors = runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    std::vector<float> big(1 << 20, 1.0f);
    if (ncclAllReduce(big.data(), big.data(), big.size(), ncclFloat, ncclSum, comm, nullptr) !=
        ncclSuccess)
      return ncclGetLastError(comm);
    return peerStats(comm, 1 - rank, &seen[rank]);
  });
  unsetenv("BRAID_TRANSPORTS");
  for (const auto& e : errors) ASSERT_EQ(e, "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_GT(seen[r].busyNs, 0u) << "rank " << r;
    EXPECT_GT(seen[r].measuredUsPerMiB, 0.0) << "rank " << r;
    EXPECT_EQ(seen[r].tcpRttUs, 0u) << "rank " << r;
    EXPECT_EQ(seen[r].tcpCwnd, 0u) << "rank " << r;
    EXPECT_EQ(seen[r].tcpRetransmits, 0u) << "rank " << r;
    EXPECT_EQ(seen[r].tcpPathUsPerMiB, 0.0) << "rank " << r;
  }
}

// Rank 3 starts each call 30 ms late: the ranks that hear from it and from another peer in the
// same call (rhd on 4 ranks: its partners 1 and 2) find its first message at least 15 ms behind
// the earliest, on average, and later than every other peer's.
TEST(Telemetry, ALatePeersArrivalSkewIsMeasured) {
  setenv("BRAID_ALGO", "rhd", 1);
  constexpr int n = 4, kLate = 3, kCalls = 4;
  std::vector<std::vector<braidPeerStats_t>> seen(n, std::vector<braidPeerStats_t>(n));
  auto errors = runThreads(n, [&](int rank, ncclComm_t comm) -> std::string {
    std::vector<float> buf(1 << 18, 1.0f);  // 1 MiB: timed
    for (int i = 0; i < kCalls; ++i) {
      if (rank == kLate) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      if (ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr) !=
          ncclSuccess)
        return ncclGetLastError(comm);
    }
    if (auto e = everyPeer(comm, rank, &seen[rank]); !e.empty()) return e;
    return "";
  });
  unsetenv("BRAID_ALGO");
  for (const auto& e : errors) ASSERT_EQ(e, "");
  int judged = 0;
  for (int r = 0; r < n; ++r) {
    if (r == kLate || seen[r][kLate].skewCalls == 0) continue;
    ++judged;
    EXPECT_EQ(seen[r][kLate].skewCalls, static_cast<uint64_t>(kCalls)) << "rank " << r;
    const double late = static_cast<double>(seen[r][kLate].arrivalSkewNs) / kCalls;
    EXPECT_GE(late, 15e6) << "rank " << r;
    for (int p = 0; p < n; ++p) {
      if (p == r || p == kLate || seen[r][p].skewCalls == 0) continue;
      EXPECT_LT(static_cast<double>(seen[r][p].arrivalSkewNs) / seen[r][p].skewCalls, late)
          << "rank " << r << ", peer " << p;
    }
  }
  EXPECT_EQ(judged, 2);  // ranks 1 and 2
}

TEST(Telemetry, BadArgumentsAreNamed) {
  braidPeerStats_t ps;
  braidCommStats_t cs;
  EXPECT_EQ(braidCommGetStats(nullptr, &cs), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("comm is NULL"), std::string::npos);
  auto errors = runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    auto expect = [&](ncclResult_t rc, const char* words) -> std::string {
      if (rc != ncclInvalidArgument) return std::string("no argument error for ") + words;
      const std::string text = ncclGetLastError(comm);
      if (text.find(words) == std::string::npos)
        return "error without '" + std::string(words) + "': " + text;
      return "";
    };
    for (auto e : {expect(braidCommGetStats(comm, nullptr), "stats is NULL"),
                   expect(braidCommGetPeerStats(comm, 1 - rank, nullptr), "stats is NULL"),
                   expect(braidCommGetPeerStats(comm, -1, &ps), "peer -1 is not a rank"),
                   expect(braidCommGetPeerStats(comm, 2, &ps), "peer 2 is not a rank"),
                   expect(braidCommGetPeerStats(comm, rank, &ps), "own rank")})
      if (!e.empty()) return e;
    return "";
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

// A per-call config's userProfilerTag (NCCL 2.32) reaches the telemetry: calls counted per tag,
// with their data and, for calls of 64 KiB or more, their time; untagged calls under no tag.
TEST(Telemetry, CallsAreCountedPerProfilerTag) {
  std::vector<std::vector<braidTagStats_t>> got(2);
  auto errors = runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    std::vector<float> small(1000, 1.0f), large(1 << 16, 1.0f);  // 4000 B and 256 KiB
    ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
    auto call = [&](std::vector<float>& buf, uint64_t tag) -> std::string {
      cfg.userProfilerTag = tag;
      if (ncclAllReduceConfig(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm,
                              nullptr, &cfg) != ncclSuccess)
        return ncclGetLastError(comm);
      return "";
    };
    for (int i = 0; i < 3; ++i)
      if (auto e = call(small, 7); !e.empty()) return e;
    if (auto e = call(large, 0xfeedull << 40); !e.empty()) return e;
    if (auto e = call(small, 0); !e.empty()) return e;  // no tag
    if (ncclAllReduce(small.data(), small.data(), small.size(), ncclFloat, ncclSum, comm,
                      nullptr) != ncclSuccess)
      return ncclGetLastError(comm);
    int count = 0;
    uint64_t untracked = 99;
    if (braidCommGetTagStats(comm, nullptr, &count, &untracked) != ncclSuccess)
      return std::string("braidCommGetTagStats (count): ") + ncclGetLastError(comm);
    if (count != 2 || untracked != 0)
      return "count " + std::to_string(count) + ", untracked " + std::to_string(untracked);
    got[rank].resize(3);
    count = 3;
    if (braidCommGetTagStats(comm, got[rank].data(), &count, nullptr) != ncclSuccess)
      return std::string("braidCommGetTagStats: ") + ncclGetLastError(comm);
    got[rank].resize(count);
    return "";
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  for (const auto& tags : got) {
    ASSERT_EQ(tags.size(), 2u);
    EXPECT_EQ(tags[0].tag, 7u);
    EXPECT_EQ(tags[0].calls, 3u);
    EXPECT_EQ(tags[0].bytes, 3u * 4000);
    EXPECT_EQ(tags[0].timedCalls, 0u);  // 4000 B: counted, not timed
    EXPECT_EQ(tags[0].failedCalls, 0u);
    EXPECT_EQ(tags[1].tag, 0xfeedull << 40);
    EXPECT_EQ(tags[1].calls, 1u);
    EXPECT_EQ(tags[1].bytes, 4u << 16);
    EXPECT_EQ(tags[1].timedCalls, 1u);
    EXPECT_GT(tags[1].callNs, 0u);
  }
}

// Past 64 distinct tags, calls are counted as untracked; the arguments are checked by name.
TEST(Telemetry, TagsPastTheTablesRoomAreCountedAsUntracked) {
  auto errors = runThreads(1, [&](int, ncclComm_t comm) -> std::string {
    float x = 1.0f;
    ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
    for (uint64_t tag = 1; tag <= 70; ++tag) {
      cfg.userProfilerTag = tag;
      if (ncclAllReduceConfig(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr, &cfg) != ncclSuccess)
        return ncclGetLastError(comm);
    }
    std::vector<braidTagStats_t> tags(100);
    int count = 100;
    uint64_t untracked = 0;
    if (braidCommGetTagStats(comm, tags.data(), &count, &untracked) != ncclSuccess)
      return ncclGetLastError(comm);
    if (count != 64 || untracked != 6 || tags[63].tag != 64)
      return "count " + std::to_string(count) + ", untracked " + std::to_string(untracked);
    int none = 0;
    if (braidCommGetTagStats(comm, nullptr, nullptr, nullptr) != ncclInvalidArgument ||
        std::string(ncclGetLastError(comm)).find("count is NULL") == std::string::npos)
      return "a NULL count was not refused by name";
    none = 2;
    if (braidCommGetTagStats(comm, nullptr, &none, nullptr) != ncclInvalidArgument ||
        std::string(ncclGetLastError(comm)).find("stats is NULL") == std::string::npos)
      return "NULL stats with room was not refused by name";
    none = -1;
    if (braidCommGetTagStats(comm, tags.data(), &none, nullptr) != ncclInvalidArgument)
      return "a negative count was not refused";
    return "";
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

// NCCL_DEBUG=INFO: each communicator says at destroy what it did.
TEST(Telemetry, DestroyLogsTheSummary) {
  braid::testing::LogFile log("INIT");
  auto errors = runThreads(2, [&](int, ncclComm_t comm) -> std::string {
    std::vector<float> buf(1000, 1.0f);
    ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
    cfg.userProfilerTag = 5;
    for (int i = 0; i < 3; ++i)
      if (ncclAllReduceConfig(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm,
                              nullptr, i == 0 ? &cfg : nullptr) != ncclSuccess)
        return ncclGetLastError(comm);
    return "";
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  const std::string text = log.read();
  // 4000-byte calls: counted, not timed.
  for (const char* rank :
       {"rank 0/2: 3 calls (0 failed; 0 timed, 0.000 s)", "rank 1/2: 3 calls (0 failed; 0 timed"})
    EXPECT_NE(text.find(rank), std::string::npos) << text;
  EXPECT_NE(text.find("most with rank"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0/2: profiler tag 5: 1 calls (0 failed; 0 timed, 0.000 s), 4000 bytes"),
            std::string::npos)
      << text;
}

}  // namespace
