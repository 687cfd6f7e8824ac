// What NCCL 2.32 added to the host API, on threads as ranks: the per-call configs' algorithm
// selection, ncclTimeout for 2.32 clients only, the parameter API, suspend and resume, the
// properties query and growing a communicator. (tests/abi runs a client built against NVIDIA's
// 2.32 header through LD_PRELOAD; these check Braid's side in detail.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/log_file.h"
#include "common/ranks.h"
#include "nccl.h"

// NCCL_COMM_PROPERTIES_INITIALIZER names only its first three fields, and the log is re-read
// through ncclResetDebugInit, which NCCL deprecates for applications.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

using braid::testing::LogFile;
using braid::testing::runThreads;

std::string last(ncclComm_t comm = nullptr) { return ncclGetLastError(comm); }

ncclCollConfig_t selecting(const char* algorithms, int force) {
  ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
  cfg.algSelection = algorithms;
  cfg.forceAlgSelection = force;
  return cfg;
}

// An AllReduce of n floats (rank r contributes r + 1) through the Config form; "" or a failure.
std::string allReduceWith(ncclComm_t comm, int nranks, size_t n, const ncclCollConfig_t* cfg) {
  int rank = 0;
  ncclCommUserRank(comm, &rank);
  std::vector<float> buf(n, static_cast<float>(rank + 1));
  if (ncclAllReduceConfig(buf.data(), buf.data(), n, ncclFloat, ncclSum, comm, nullptr, cfg) !=
      ncclSuccess)
    return "ncclAllReduceConfig: " + last(comm);
  const float want = static_cast<float>(nranks * (nranks + 1) / 2);
  for (size_t i = 0; i < n; ++i)
    if (buf[i] != want) return "element " + std::to_string(i) + " is " + std::to_string(buf[i]);
  return "";
}

TEST(CollConfig, TheSelectionChoosesTheAlgorithm) {
  LogFile log("TUNING");
  auto results = runThreads(3, [](int, ncclComm_t comm) -> std::string {
    // Alternating selections of the same call: each keeps its own choice.
    for (int round = 0; round < 2; ++round) {
      for (const char* algo : {"ring", "rhd", "tree"}) {
        const ncclCollConfig_t cfg = selecting(algo, 1);
        if (std::string e = allReduceWith(comm, 3, 1 << 16, &cfg); !e.empty()) return algo + e;
      }
    }
    // The plain call is unaffected: it chooses as before (and is correct).
    return allReduceWith(comm, 3, 1 << 16, nullptr);
  });
  for (const auto& r : results) EXPECT_EQ(r, "");
  const std::string text = log.read();
  for (const char* algo : {"ring", "rhd", "tree"}) {
    const std::string line = std::string("ranks: ") + algo + " (algSelection \"" + algo + "\"";
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  }
}

TEST(CollConfig, NcclNamesAndExclusions) {
  LogFile log("TUNING");
  auto results = runThreads(2, [](int, ncclComm_t comm) -> std::string {
    // "^" excludes; a per-collective rule for another collective does not apply.
    const ncclCollConfig_t notRing = selecting("^ring,direct,hierdirect", 1);
    if (std::string e = allReduceWith(comm, 2, 4096, &notRing); !e.empty()) return e;
    const ncclCollConfig_t upper = selecting("Ring", 1);
    return allReduceWith(comm, 2, 4096, &upper);
  });
  for (const auto& r : results) EXPECT_EQ(r, "");
  const std::string text = log.read();
  EXPECT_EQ(text.find("ranks: ring (algSelection \"^ring"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks: ring (algSelection \"Ring\""), std::string::npos) << text;
}

TEST(CollConfig, ASelectionNothingMeetsFailsOnlyWhenForced) {
  auto results = runThreads(2, [](int, ncclComm_t comm) -> std::string {
    std::vector<float> buf(64, 1.0f);
    const ncclCollConfig_t forced = selecting("nvls,collnetdirect", 1);
    if (ncclAllReduceConfig(buf.data(), buf.data(), 64, ncclFloat, ncclSum, comm, nullptr,
                            &forced) != ncclInvalidArgument)
      return "a forced unmet selection did not fail";
    const std::string why = last(comm);
    if (why.find("config->algSelection \"nvls,collnetdirect\" allows none of the algorithms that "
                 "implement ncclAllReduce here") == std::string::npos ||
        why.find("forceAlgSelection") == std::string::npos)
      return "unclear error: " + why;
    // Both ranks failed the same call alike, so the communicator is still usable.
    const ncclCollConfig_t loose = selecting("nvls", 0);
    return allReduceWith(comm, 2, 64, &loose);
  });
  for (const auto& r : results) EXPECT_EQ(r, "");
}

TEST(CollConfig, BadConfigsAreNamed) {
  auto results = runThreads(1, [](int, ncclComm_t comm) -> std::string {
    float x = 1;
    auto fails = [&](const ncclCollConfig_t& cfg, const char* text) -> std::string {
      if (ncclAllReduceConfig(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr, &cfg) !=
          ncclInvalidArgument)
        return std::string("accepted a config that should say: ") + text;
      if (last(comm).find(text) == std::string::npos) return "\"" + last(comm) + "\" lacks " + text;
      return "";
    };
    ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
    cfg.magic = 0x1234;
    if (auto e = fails(cfg, "config->magic 0x1234"); !e.empty()) return e;
    cfg = NCCL_COLLCONFIG_INITIALIZER;
    cfg.version = 22809;
    if (auto e = fails(cfg, "predates ncclCollConfig_t"); !e.empty()) return e;
    cfg = NCCL_COLLCONFIG_INITIALIZER;
    cfg.forceAlgSelection = 2;
    if (auto e = fails(cfg, "forceAlgSelection 2"); !e.empty()) return e;
    cfg = selecting("ring,warpdrive", 1);
    if (auto e = fails(cfg, "no algorithm is called \"warpdrive\""); !e.empty()) return e;
    cfg = selecting("allreduce:", 1);
    if (auto e = fails(cfg, "NCCL_ALGO: empty list"); !e.empty()) return e;
    // The CTA fields tune NCCL's kernels: accepted, and the call is the plain one.
    cfg = NCCL_COLLCONFIG_INITIALIZER;
    cfg.minCTAs = 4;
    cfg.maxCTAs = 8;
    cfg.CTAPolicy = NCCL_CTA_POLICY_ZERO;
    cfg.userProfilerTag = 42;
    if (ncclAllReduceConfig(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr, &cfg) != ncclSuccess)
      return "CTA fields refused: " + last(comm);
    // Without CUDA there is no event to record: said at once.
    cfg.launchCompletionEvent = reinterpret_cast<cudaEvent_t>(0x1000);
    if (auto e = fails(cfg, "launchCompletionEvent"); !e.empty()) return e;
    return "";
  });
  EXPECT_EQ(results[0], "");
}

TEST(CollConfig, EveryCollectiveHasItsConfigForm) {
  auto results = runThreads(2, [](int rank, ncclComm_t comm) -> std::string {
    const ncclCollConfig_t cfg = selecting("ring,direct,pairwise,p2p,chain,tree,rhd", 0);
    std::vector<int32_t> send(8, rank + 1), recv(16, 0);
    if (ncclBroadcastConfig(send.data(), recv.data(), 8, ncclInt32, 1, comm, nullptr, &cfg) ||
        recv[7] != 2)
      return "Broadcast " + last(comm);
    if (ncclReduceConfig(send.data(), recv.data(), 8, ncclInt32, ncclSum, 0, comm, nullptr, &cfg) ||
        (rank == 0 && recv[7] != 3))
      return "Reduce " + last(comm);
    if (ncclAllGatherConfig(send.data(), recv.data(), 8, ncclInt32, comm, nullptr, &cfg) ||
        recv[0] != 1 || recv[15] != 2)
      return "AllGather " + last(comm);
    std::vector<int32_t> big(16, rank + 1);
    if (ncclReduceScatterConfig(big.data(), recv.data(), 8, ncclInt32, ncclSum, comm, nullptr,
                                &cfg) ||
        recv[0] != 3)
      return "ReduceScatter " + last(comm);
    if (ncclAlltoAllConfig(big.data(), recv.data(), 8, ncclInt32, comm, nullptr, &cfg) ||
        recv[0] != 1 || recv[8] != 2)
      return "AlltoAll " + last(comm);
    if (ncclGatherConfig(send.data(), recv.data(), 8, ncclInt32, 0, comm, nullptr, &cfg) ||
        (rank == 0 && (recv[0] != 1 || recv[8] != 2)))
      return "Gather " + last(comm);
    if (ncclScatterConfig(big.data(), recv.data(), 8, ncclInt32, 1, comm, nullptr, &cfg) ||
        recv[0] != 2)
      return "Scatter " + last(comm);
    return "";
  });
  for (const auto& r : results) EXPECT_EQ(r, "");
}

// A rank that waits for a peer that never calls: the code depends on the client's NCCL.
ncclResult_t timeoutCode() {
  setenv("BRAID_TIMEOUT_MS", "300", 1);
  ncclResult_t got = ncclSuccess;
  auto results = runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    if (rank == 1) return "";
    float x = 1;
    got = ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr);
    return "";
  });
  unsetenv("BRAID_TIMEOUT_MS");
  return got;
}

TEST(Timeout, IsASystemErrorForClientsOfOlderNccl) {
  // In a process of its own: what other tests called there must not count.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const ncclResult_t code = timeoutCode();
        std::exit(code == ncclSystemError && last().find("(timeout)") != std::string::npos
                      ? 0
                      : 10 + code);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Timeout, IsNcclTimeoutForClientsOf2_32) {
  ncclParamHandle_t h = nullptr;  // any function 2.32 added marks the client as 2.32's
  ASSERT_EQ(ncclParamBind(&h, "BRAID_TIMEOUT_MS"), ncclSuccess) << last();
  EXPECT_EQ(timeoutCode(), ncclTimeout);
  EXPECT_NE(last().find("(timeout)"), std::string::npos) << last();
  EXPECT_STREQ(ncclGetErrorString(ncclTimeout),
               "operation timed out (run with NCCL_DEBUG=WARN for details)");
}

TEST(Params, TypedReadsOfTheEnvironmentTable) {
  setenv("BRAID_TIMEOUT_MS", "300", 1);
  ncclParamHandle_t h = nullptr;
  ASSERT_EQ(ncclParamBind(&h, "BRAID_TIMEOUT_MS"), ncclSuccess) << last();
  int16_t i16 = 0;
  EXPECT_EQ(ncclParamGetI16(h, &i16), ncclSuccess) << last();
  EXPECT_EQ(i16, 300);
  uint8_t u8 = 0;
  EXPECT_EQ(ncclParamGetU8(h, &u8), ncclInvalidArgument);
  EXPECT_NE(last().find("BRAID_TIMEOUT_MS = 300 does not fit"), std::string::npos) << last();
  setenv("BRAID_TIMEOUT_MS", "-5", 1);
  uint64_t u64 = 0;
  EXPECT_EQ(ncclParamGetU64(h, &u64), ncclInvalidArgument);
  int64_t i64 = 0;
  EXPECT_EQ(ncclParamGetI64(h, &i64), ncclSuccess);
  EXPECT_EQ(i64, -5);
  setenv("BRAID_TIMEOUT_MS", "soon", 1);
  EXPECT_EQ(ncclParamGetI64(h, &i64), ncclInvalidArgument);
  EXPECT_NE(last().find("\"soon\" is not an integer"), std::string::npos) << last();
  const char* text = nullptr;
  EXPECT_EQ(ncclParamGetStr(h, &text), ncclSuccess);
  EXPECT_STREQ(text, "soon");
  unsetenv("BRAID_TIMEOUT_MS");

  // An unset variable without a default reads as "" and has no integer value.
  ASSERT_EQ(ncclParamBind(&h, "BRAID_ALGO"), ncclSuccess);
  EXPECT_EQ(ncclParamGetStr(h, &text), ncclSuccess);
  EXPECT_STREQ(text, "");
  int32_t i32 = 0;
  EXPECT_EQ(ncclParamGetI32(h, &i32), ncclInvalidUsage);
  EXPECT_NE(last().find("BRAID_ALGO is unset and has no default"), std::string::npos) << last();

  // Raw bytes: a buffer too small gets nothing and learns the size.
  ASSERT_EQ(ncclParamBind(&h, "BRAID_CHUNK_BYTES"), ncclSuccess);
  char raw[4] = {'x', 'x', 'x', 'x'};
  int len = 0;
  EXPECT_EQ(ncclParamGet(h, raw, sizeof raw, &len), ncclInvalidArgument);
  EXPECT_EQ(len, 6);
  EXPECT_EQ(raw[0], 'x');
  EXPECT_NE(last().find("maxLen 4 is too small for BRAID_CHUNK_BYTES's value (6 bytes)"),
            std::string::npos)
      << last();

  EXPECT_EQ(ncclParamGetI32(reinterpret_cast<ncclParamHandle_t>(&len), &i32), ncclInvalidArgument);
  EXPECT_NE(last().find("did not come from ncclParamBind"), std::string::npos) << last();
  EXPECT_EQ(ncclParamBind(&h, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclParamBind(nullptr, "NCCL_ALGO"), ncclInvalidArgument);
}

TEST(Params, KeysAndDump) {
  const char** keys = nullptr;
  int n = 0;
  ASSERT_EQ(ncclParamGetAllParameterKeys(&keys, &n), ncclSuccess);
  std::vector<std::string> names(keys, keys + n);
  EXPECT_GT(n, 20);
  for (const char* want : {"NCCL_ALGO", "NCCL_COMM_ID", "BRAID_TIMEOUT_MS", "BRAID_CHUNK_BYTES"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  // Every key reads, but the TLS key, which is listed and never handed out.
  const char* kKey = "a-pre-shared-key-of-more-than-32-bytes";
  setenv("BRAID_TLS_PSK", kKey, 1);
  for (const std::string& k : names) {
    const char* value = nullptr;
    int valueLen = -1;
    if (k == "BRAID_TLS_PSK") {
      EXPECT_EQ(ncclParamGetParameter(k.c_str(), &value, &valueLen), ncclInvalidUsage);
      EXPECT_NE(last().find("BRAID_TLS_PSK is a secret"), std::string::npos) << last();
      ncclParamHandle_t h = nullptr;
      ASSERT_EQ(ncclParamBind(&h, k.c_str()), ncclSuccess);
      EXPECT_EQ(ncclParamGetStr(h, &value), ncclInvalidUsage);
      char raw[64];
      EXPECT_EQ(ncclParamGet(h, raw, sizeof raw, &valueLen), ncclInvalidUsage);
      continue;
    }
    EXPECT_EQ(ncclParamGetParameter(k.c_str(), &value, &valueLen), ncclSuccess) << k;
    EXPECT_EQ(static_cast<size_t>(valueLen), std::string(value).size()) << k;
  }
  LogFile log("ENV");
  ncclParamDumpAll();
  const std::string dump = log.read();
  unsetenv("BRAID_TLS_PSK");
  EXPECT_NE(dump.find("BRAID_CHUNK_BYTES = 524288 (default 524288)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("BRAID_TLS_PSK = (set, not shown)"), std::string::npos) << dump;
  EXPECT_EQ(dump.find(kKey), std::string::npos) << dump;
}

TEST(Suspend, RefusesCallsUntilResumed) {
  auto results = runThreads(2, [](int, ncclComm_t comm) -> std::string {
    if (std::string e = allReduceWith(comm, 2, 1024, nullptr); !e.empty()) return e;
    uint64_t v = 9;
    if (ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v) || v != 0) return "suspended at start";
    if (ncclCommSuspend(comm, 0x6) != ncclInvalidArgument) return "bad flags accepted";
    if (ncclCommSuspend(comm, NCCL_SUSPEND_MEM) != ncclSuccess) return "suspend: " + last(comm);
    if (ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v) || v != 1) return "not suspended";
    if (ncclCommMemStats(comm, ncclStatGpuMemTotal, &v) || v != 0) return "GPU memory counted";
    float x = 1;
    if (ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr) != ncclInvalidUsage ||
        last(comm).find("is suspended (ncclCommSuspend): ncclCommResume it first") ==
            std::string::npos)
      return "a suspended communicator took a call: " + last(comm);
    if (ncclCommResume(comm) != ncclSuccess) return "resume: " + last(comm);
    if (ncclCommResume(comm) != ncclInvalidUsage) return "resumed twice";
    if (ncclCommMemStats(comm, static_cast<ncclCommMemStat_t>(9), &v) != ncclInvalidArgument)
      return "stat 9 accepted";
    // The released schedules are rebuilt.
    return allReduceWith(comm, 2, 1024, nullptr);
  });
  for (const auto& r : results) EXPECT_EQ(r, "");
}

TEST(Properties, IdentityAndNoDeviceApi) {
  std::vector<uint64_t> hashes(2);
  auto results = runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    ncclCommProperties_t p = NCCL_COMM_PROPERTIES_INITIALIZER;
    if (ncclCommQueryProperties(comm, &p) != ncclSuccess) return last(comm);
    if (p.rank != rank || p.nRanks != 2 || p.deviceApiSupport || p.multimemSupport ||
        p.ginType != NCCL_GIN_TYPE_NONE || p.cftSupport)
      return "wrong properties";
    hashes[rank] = p.commHash;
    // An older client's smaller struct gets only the fields it has.
    ncclCommProperties_t small = NCCL_COMM_PROPERTIES_INITIALIZER;
    small.size = offsetof(ncclCommProperties_t, cudaDev);
    small.nvmlDev = 1234;
    if (ncclCommQueryProperties(comm, &small) != ncclSuccess || small.nRanks != 2 ||
        small.nvmlDev != 1234)
      return "a small struct was overrun";
    p.magic = 0;
    if (ncclCommQueryProperties(comm, &p) != ncclInvalidArgument) return "bad magic accepted";
    return "";
  });
  for (const auto& r : results) EXPECT_EQ(r, "");
  EXPECT_EQ(hashes[0], hashes[1]);
  EXPECT_NE(hashes[0], 0u);
}

// Two ranks grow to three: rank 0 makes the id, a thread that had no communicator joins.
TEST(Grow, ExistingAndNewRanksFormALargerCommunicator) {
  std::vector<ncclComm_t> comms(2, nullptr), grown(3, nullptr);
  ASSERT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclSuccess) << last();
  ncclUniqueId id;
  ASSERT_EQ(ncclCommGetUniqueId(comms[0], &id), ncclSuccess) << last();
  ncclUniqueId again;
  EXPECT_EQ(ncclCommGetUniqueId(comms[0], &again), ncclInvalidUsage);
  EXPECT_NE(last(comms[0]).find("has not been used by ncclCommGrow"), std::string::npos);
  std::vector<ncclResult_t> res(3, ncclInternalError);
  std::vector<std::thread> threads;
  threads.emplace_back([&] { res[0] = ncclCommGrow(comms[0], 3, &id, -1, &grown[0], nullptr); });
  threads.emplace_back(
      [&] { res[1] = ncclCommGrow(comms[1], 3, nullptr, -1, &grown[1], nullptr); });
  threads.emplace_back([&] { res[2] = ncclCommGrow(nullptr, 3, &id, 2, &grown[2], nullptr); });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) ASSERT_EQ(res[r], ncclSuccess) << r << ": " << last();
  threads.clear();
  std::vector<std::string> out(3);
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      int rank = -1, n = 0;
      ncclCommUserRank(grown[r], &rank);
      ncclCommCount(grown[r], &n);
      out[r] =
          rank != r || n != 3 ? "wrong rank or size" : allReduceWith(grown[r], 3, 5000, nullptr);
    });
  for (auto& t : threads) t.join();
  for (const auto& o : out) EXPECT_EQ(o, "");
  // The old communicator still works.
  threads.clear();
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] { out[r] = allReduceWith(comms[r], 2, 100, nullptr); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(out[0], "");
  EXPECT_EQ(out[1], "");
  for (auto c : grown) ncclCommDestroy(c);
  for (auto c : comms) ncclCommDestroy(c);
}

TEST(Grow, MistakesAreNamed) {
  std::vector<ncclComm_t> comms(2, nullptr);
  ASSERT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclSuccess) << last();
  ncclComm_t out = nullptr;
  ncclUniqueId id;
  ASSERT_EQ(ncclCommGetUniqueId(comms[0], &id), ncclSuccess) << last();
  EXPECT_EQ(ncclCommGrow(comms[0], 2, &id, -1, &out, nullptr), ncclInvalidArgument);
  EXPECT_NE(last(comms[0]).find("nRanks 2 does not grow a communicator of 2 ranks"),
            std::string::npos)
      << last(comms[0]);
  EXPECT_EQ(ncclCommGrow(comms[0], 3, &id, 0, &out, nullptr), ncclInvalidArgument);
  EXPECT_NE(last(comms[0]).find("an existing rank passes -1"), std::string::npos);
  ncclUniqueId other = id;
  other.internal[100] ^= 1;
  EXPECT_EQ(ncclCommGrow(comms[1], 3, &other, -1, &out, nullptr), ncclInvalidArgument);
  EXPECT_NE(last(comms[1]).find("not the id ncclCommGetUniqueId made"), std::string::npos);
  EXPECT_EQ(ncclCommGrow(nullptr, 3, nullptr, 2, &out, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommGrow(nullptr, 3, &id, 3, &out, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("rank 3 is out of range [0, 3)"), std::string::npos) << last();
  // No rank passes the id: both existing ranks are told, nobody hangs.
  setenv("BRAID_TIMEOUT_MS", "5000", 1);
  std::vector<ncclResult_t> res(2);
  std::vector<std::string> why(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      ncclComm_t g = nullptr;
      res[r] = ncclCommGrow(comms[r], 3, nullptr, -1, &g, nullptr);
      why[r] = last(comms[r]);
    });
  for (auto& t : threads) t.join();
  unsetenv("BRAID_TIMEOUT_MS");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(res[r], ncclInvalidUsage) << why[r];
    EXPECT_NE(why[r].find("no existing rank passed the id"), std::string::npos) << why[r];
  }
  for (auto c : comms) ncclCommDestroy(c);
}

TEST(Windows, UserPointer) {
  auto results = runThreads(1, [](int, ncclComm_t comm) -> std::string {
    std::vector<char> mem(8192);
    ncclWindow_t win = nullptr;
    if (ncclCommWindowRegister(comm, mem.data(), mem.size(), &win, NCCL_WIN_DEFAULT))
      return last(comm);
    void* p = nullptr;
    if (ncclWinGetUserPtr(comm, win, &p) || p != mem.data()) return "wrong user pointer";
    if (ncclWinGetUserPtr(comm, win, nullptr) != ncclInvalidArgument) return "NULL out accepted";
    ncclCommWindowDeregister(comm, win);
    if (ncclWinGetUserPtr(comm, win, &p) != ncclInvalidArgument) return "stale window accepted";
    return "";
  });
  EXPECT_EQ(results[0], "");
}

}  // namespace
