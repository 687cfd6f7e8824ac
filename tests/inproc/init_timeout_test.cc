// Init never waits forever: a rank whose bootstrap root never appears fails after
// BRAID_INIT_TIMEOUT_MS (default 10 minutes), naming the root's address and the variable, and a
// shorter BRAID_TIMEOUT_MS bounds init too.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "core/variables.h"
#include "nccl.h"

namespace {

// A loopback port nobody listens on: bound once, then closed.
int unusedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return -1;
  close(fd);
  return ntohs(addr.sin_port);
}

// Rank 1 of 2 with a root at `port` that never appears: the result, the seconds it took and
// the message.
struct Attempt {
  ncclResult_t result;
  double seconds;
  std::string message;
};

Attempt initWithoutRoot(int port) {
  const std::string address = "127.0.0.1:" + std::to_string(port);
  setenv("NCCL_COMM_ID", address.c_str(), 1);
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  unsetenv("NCCL_COMM_ID");
  ncclComm_t comm = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  Attempt a;
  a.result = ncclCommInitRank(&comm, 2, id, 1);
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  a.message = ncclGetLastError(nullptr);
  EXPECT_EQ(comm, nullptr);
  return a;
}

// With `variable` at `ms` and no root: ncclSystemError after at least the bound, naming the
// root's address and the bound init used. A time bound is the property under test; the upper
// margin allows for a loaded 2-core machine.
void expectGivesUp(const char* variable, int ms) {
  const int port = unusedPort();
  ASSERT_GT(port, 0);
  setenv(variable, std::to_string(ms).c_str(), 1);
  const Attempt a = initWithoutRoot(port);
  unsetenv(variable);
  EXPECT_EQ(a.result, ncclSystemError) << a.message;
  EXPECT_GE(a.seconds, 0.95 * ms / 1000);
  EXPECT_LT(a.seconds, 10.0);
  EXPECT_NE(a.message.find("root 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << a.message;
  EXPECT_NE(
      a.message.find("init waits at most " + std::to_string(ms) + " ms: BRAID_INIT_TIMEOUT_MS"),
      std::string::npos)
      << a.message;
}

TEST(InitTimeout, AnAbsentRootFailsAfterTheInitTimeout) {
  expectGivesUp("BRAID_INIT_TIMEOUT_MS", 1000);
}

TEST(InitTimeout, AShorterCollectiveTimeoutBoundsInit) { expectGivesUp("BRAID_TIMEOUT_MS", 500); }

// Without any setting init is bounded: the documented default, not "no limit".
TEST(InitTimeout, TheDefaultIsFinite) {
  ASSERT_NE(braid::env::kBraidInitTimeoutMs.defaultValue, nullptr);
  EXPECT_EQ(std::string(braid::env::kBraidInitTimeoutMs.defaultValue), "600000");
}

}  // namespace
