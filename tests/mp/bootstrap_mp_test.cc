// Real processes as ranks: NCCL_COMM_ID rendezvous, and a rank killed mid-run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "base/net/socket.h"
#include "common/loopback_only.h"
#include "core/bootstrap/bootstrap.h"

namespace braid {
namespace {

using Clock = std::chrono::steady_clock;

std::string freeLoopbackPort() {
  net::Fd probe;
  net::SocketAddress any, bound;
  EXPECT_TRUE(net::SocketAddress::parse("127.0.0.1:0", &any).ok());
  EXPECT_TRUE(net::listenOn(any, &probe, &bound).ok());
  return bound.toString();
}

// Runs body(rank) in one child per rank; returns each child's exit code, or -signal, or -999
// for a child still running after the deadline (then killed).
std::vector<int> forkRanks(int nranks, const std::function<int(int)>& body, int deadlineSec) {
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) _exit(body(r));
    pids.push_back(pid);
  }
  std::vector<int> codes(nranks, -999);
  auto start = Clock::now();
  size_t left = pids.size();
  while (left > 0 && Clock::now() - start < std::chrono::seconds(deadlineSec)) {
    for (int r = 0; r < nranks; ++r) {
      int status = 0;
      if (pids[r] > 0 && waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        pids[r] = -1;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t pid : pids)
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  return codes;
}

TEST(BootstrapMp, CommIdRendezvousAcrossProcesses) {
  std::string commId = freeLoopbackPort();
  ncclUniqueId id;
  ASSERT_TRUE(uniqueIdFromCommId(commId.c_str(), &id).ok());
  const int n = 4;
  auto codes = forkRanks(
      n,
      [&](int r) {
        std::unique_ptr<Bootstrap> b;
        if (!Bootstrap::create(id, r, n, r == 0, Waiter(20000, nullptr), &b).ok()) return 10;
        std::vector<int64_t> pids(n, 0);
        pids[r] = getpid();
        if (!b->allGather(pids.data(), sizeof(int64_t)).ok()) return 11;
        for (int i = 0; i < n; ++i)
          if (pids[i] <= 0 || (i == r) != (pids[i] == getpid())) return 12;
        if (!b->barrier().ok()) return 13;
        int64_t token = pids[r];
        if (!b->send((r + 1) % n, 5, &token, sizeof(token)).ok()) return 14;
        if (!b->recv((r + n - 1) % n, 5, &token, sizeof(token)).ok()) return 15;
        if (token != pids[(r + n - 1) % n]) return 16;
        return b->barrier().ok() ? 0 : 17;
      },
      60);
  EXPECT_EQ(codes, std::vector<int>(n, 0));
}

TEST(BootstrapMp, KilledRankIsAnErrorForTheOthersNotAHang) {
  ncclUniqueId id;
  std::string commId = freeLoopbackPort();
  ASSERT_TRUE(uniqueIdFromCommId(commId.c_str(), &id).ok());
  const int n = 3;
  auto codes = forkRanks(
      n,
      [&](int r) {
        std::unique_ptr<Bootstrap> b;
        if (!Bootstrap::create(id, r, n, r == 0, Waiter(20000, nullptr), &b).ok()) return 10;
        if (!b->barrier().ok()) return 11;
        if (r == 2) raise(SIGKILL);
        Status st = b->barrier();
        // Ranks next to the dead one see the closed socket; the rest see the ring close behind it.
        return st.code() == ncclRemoteError ? 0 : 20 + int(st.code());
      },
      60);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
  EXPECT_EQ(codes[2], -SIGKILL);
}

}  // namespace
}  // namespace braid
