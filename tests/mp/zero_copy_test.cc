// Buffers from ncclMemAlloc cross shared memory by reference: the receiver maps the sender's
// pages and copies or reduces straight out of them. Results stay exact, in place and out of
// place, and the log shows the mapping happened (so the path is really taken).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/ranks.h"

namespace {

TEST(ZeroCopy, MemAllocBuffersAreMappedAndResultsExact) {
  constexpr int kRanks = 3;
  const std::string logPattern = "/tmp/braid-zero-copy-test.%p.log";
  auto results = braid::testing::runProcesses(
      kRanks,
      [&](int rank, ncclComm_t comm) {
        const size_t count = (1u << 20) + 5;  // several chunks, an odd tail
        float *send = nullptr, *recv = nullptr;
        if (ncclMemAlloc(reinterpret_cast<void**>(&send), count * sizeof(float)) != ncclSuccess ||
            ncclMemAlloc(reinterpret_cast<void**>(&recv), count * kRanks * sizeof(float)) !=
                ncclSuccess)
          return 2;
        for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>((rank + 1) * (i % 1000));
        if (ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, nullptr) != ncclSuccess)
          return 3;
        for (size_t i = 0; i < count; ++i)
          if (recv[i] != static_cast<float>(6 * (i % 1000))) return 4;
        if (ncclAllReduce(send, send, count, ncclFloat, ncclMax, comm, nullptr) != ncclSuccess)
          return 5;
        for (size_t i = 0; i < count; ++i)
          if (send[i] != static_cast<float>(3 * (i % 1000))) return 6;
        if (ncclAllGather(send, recv, count, ncclFloat, comm, nullptr) != ncclSuccess) return 7;
        for (int r = 0; r < kRanks; ++r)
          for (size_t i = 0; i < count; i += 997)
            if (recv[r * count + i] != static_cast<float>(3 * (i % 1000))) return 8;
        ncclMemFree(send);
        ncclMemFree(recv);
        return 0;
      },
      {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "SHM"}, {"NCCL_DEBUG_FILE", logPattern}});
  std::string logs;
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
  // Each child wrote its own log (pid in the name); any of them mapping a peer's allocation
  // shows the path was used.
  FILE* ls = popen(
      "cat /tmp/braid-zero-copy-test.*.log 2>/dev/null; rm -f /tmp/braid-zero-copy-test.*.log",
      "r");
  char buf[4096];
  size_t n;
  while (ls && (n = fread(buf, 1, sizeof buf, ls)) > 0) logs.append(buf, n);
  if (ls) pclose(ls);
  EXPECT_NE(logs.find("for single-copy receives"), std::string::npos) << logs;
}

}  // namespace
