// Real processes as ranks: NCCL_COMM_ID rendezvous, a rank killed mid-run, and inits the root
// refuses (world sizes that disagree, a rank twice, an id of another rendezvous, missing ranks).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "base/net/socket.h"
#include "common/loopback_only.h"
#include "core/bootstrap/bootstrap.h"
#include "core/bootstrap/bootstrap_root.h"
#include "nccl.h"

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

// In a child: ncclCommInitRank as rank r of n. 0 when it fails with `code` and its error text
// holds every one of `words`; the text goes to stderr for whoever reads the test's log.
int expectInitFailure(const ncclUniqueId& id, int r, int n, ncclResult_t code,
                      const std::vector<std::string>& words) {
  ncclComm_t comm = nullptr;
  const ncclResult_t res = ncclCommInitRank(&comm, n, id, r);
  const std::string text = ncclGetLastError(nullptr);
  std::fprintf(stderr, "rank %d of %d: %s: %s\n", r, n, ncclGetErrorString(res), text.c_str());
  if (res == ncclSuccess) return 2;
  if (res != code) return 3;
  for (const std::string& w : words)
    if (text.find(w) == std::string::npos) return 4;
  return 0;
}

int initAndDestroy(const ncclUniqueId& id, int r, int n) {
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, n, id, r) != ncclSuccess) return 5;
  return ncclCommDestroy(comm) == ncclSuccess ? 0 : 6;
}

// Two ranks of one id, one told the world has 2 ranks and one 3: both fail naming both sizes
// (the one the root refused, and the one whose rendezvous that broke).
TEST(BootstrapMp, WorldSizeDisagreementFailsEveryRankNamingBothSizes) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  auto codes = forkRanks(
      2,
      [&](int r) {
        return expectInitFailure(id, r, r == 0 ? 2 : 3, ncclInvalidUsage,
                                 {"nranks 2", "nranks 3", "disagree on the world size"});
      },
      60);
  EXPECT_EQ(codes, std::vector<int>(2, 0));
}

// Ranks 0, 1 and 1 of 3: every one fails naming the duplicate.
TEST(BootstrapMp, ARankUsedTwiceFailsEveryRankNamingIt) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  auto codes = forkRanks(
      3,
      [&](int r) {
        return expectInitFailure(id, r == 2 ? 1 : r, 3, ncclInvalidUsage,
                                 {"rank 1 of 3 arrived twice"});
      },
      60);
  EXPECT_EQ(codes, std::vector<int>(3, 0));
}

// A rank holding an id of another rendezvous (same root address, other magic) is refused with
// ncclInvalidArgument naming the magic; the real ranks are not disturbed.
TEST(BootstrapMp, AnIdOfAnotherRendezvousIsRefusedAndTheOthersInit) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  bootstrap::IdContents contents;
  ASSERT_TRUE(bootstrap::decodeUniqueId(id, &contents).ok());
  contents.magic ^= 0x5a5a;
  ncclUniqueId stale;
  bootstrap::encodeUniqueId(contents, &stale);
  // The stranger first, while the root still waits for its ranks (it exits once they are in).
  auto refused = forkRanks(
      1, [&](int) { return expectInitFailure(stale, 0, 2, ncclInvalidArgument, {"magic"}); }, 60);
  EXPECT_EQ(refused, std::vector<int>(1, 0));
  auto codes = forkRanks(
      2, [&](int r) { return initAndDestroy(id, r, 2); }, 60);
  EXPECT_EQ(codes, std::vector<int>(2, 0));
}

// Ranks 0 and 2 of 3 arrive, rank 1 never does: when the root gives up, both hear which rank
// is missing instead of waiting forever (BRAID_TIMEOUT_MS is 0: no timeout of their own).
TEST(BootstrapMp, MissingRanksAreNamedWhenTheRootGivesUp) {
  setenv("BRAID_BOOTSTRAP_ROOT_TIMEOUT_MS", "1500", 1);
  ncclUniqueId id;
  const ncclResult_t made = ncclGetUniqueId(&id);
  unsetenv("BRAID_BOOTSTRAP_ROOT_TIMEOUT_MS");
  ASSERT_EQ(made, ncclSuccess);
  auto codes = forkRanks(
      2,
      [&](int r) {
        return expectInitFailure(id, r == 0 ? 0 : 2, 3, ncclRemoteError,
                                 {"2 of 3 ranks arrived", "missing: rank 1"});
      },
      60);
  EXPECT_EQ(codes, std::vector<int>(2, 0));
}

}  // namespace
}  // namespace braid
