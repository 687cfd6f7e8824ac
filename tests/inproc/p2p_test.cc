// Point-to-point corner cases: send/recv to self (inside a group, as NCCL requires), over the
// loopback transport and over TCP, small and large.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <vector>

#include "common/ranks.h"

namespace {

void selfExchange(const char* transports) {
  setenv("BRAID_TRANSPORTS", transports, 1);
  auto errors = braid::testing::runThreads(2, [](int rank, ncclComm_t comm) -> std::string {
    for (size_t count : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
      std::vector<int> out(count), in(count, -1);
      std::iota(out.begin(), out.end(), rank * 1000);
      if (ncclGroupStart() != ncclSuccess) return "group start";
      ncclSend(out.data(), count, ncclInt32, rank, comm, nullptr);
      ncclRecv(in.data(), count, ncclInt32, rank, comm, nullptr);
      if (ncclGroupEnd() != ncclSuccess) return ncclGetLastError(comm);
      if (in != out) return "self exchange of " + std::to_string(count) + " elements is wrong";
    }
    return "";
  });
  unsetenv("BRAID_TRANSPORTS");
  for (auto& e : errors) EXPECT_EQ(e, "");
}

TEST(PointToPoint, SendToSelfOverLoopback) { selfExchange("loopback"); }
TEST(PointToPoint, SendToSelfOverTcp) { selfExchange("tcp"); }

}  // namespace
