// Encryption (base/net/tls.h) with real processes over TCP (NCCL_SHM_DISABLE=1): collectives
// with every connection under TLS, the key from BRAID_TLS_PSK or from setEncryption; and ranks
// that disagree (another key, or none) all fail with an error that says so, none hanging.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/net/tls.h"
#include "common/allreduce_check.h"
#include "common/ranks.h"
#include "core/comm/comm.h"
#include "nccl.h"

namespace braid {
namespace {

constexpr const char* kKey = "mp-test-key-0123456789abcdef-0123456789";
constexpr const char* kOtherKey = "mp-test-key-9876543210fedcba-9876543210";

struct Outcome {
  int exitCode = -1;  // 0: passed, 1: the body failed, 2: init failed, <0: killed
  std::string text;   // what failed
};

// Forks n ranks over TCP. Child r calls setup(r) (its environment, its encryption), then
// initialises through NCCL_COMM_ID (rank 0 hosts the root), runs body (a failure's text, or
// "") and reports through a pipe.
std::vector<Outcome> runRanks(int n, const std::function<void(int)>& setup,
                              const std::function<std::string(int, ncclComm_t)>& body,
                              int timeoutSec = 120) {
  const std::string commId = "127.0.0.1:" + std::to_string(testing::freeTcpPort());
  std::vector<pid_t> pids(n, -1);
  std::vector<int> pipes(n, -1);
  for (int r = 0; r < n; ++r) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      setenv("NCCL_COMM_ID", commId.c_str(), 1);
      setenv("NCCL_SHM_DISABLE", "1", 1);
      setenv("NCCL_SOCKET_IFNAME", "lo", 1);
      setup(r);
      ncclUniqueId id;
      ncclComm_t comm = nullptr;
      int code = 2;
      std::string text;
      if (ncclGetUniqueId(&id) == ncclSuccess && ncclCommInitRank(&comm, n, id, r) == ncclSuccess) {
        text = body(r, comm);
        code = text.empty() ? 0 : 1;
        ncclCommDestroy(comm);
      } else {
        text = ncclGetLastError(nullptr);
      }
      (void)!write(fds[1], text.data(), text.size());
      close(fds[1]);
      _exit(code);
    }
    close(fds[1]);
    pids[r] = pid;
    pipes[r] = fds[0];
  }
  std::vector<Outcome> out(n);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSec);
  for (int left = n; left > 0;) {
    for (int r = 0; r < n; ++r) {
      int status = 0;
      if (pids[r] < 0 || waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      out[r].exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      char buf[4096];
      for (ssize_t k; (k = read(pipes[r], buf, sizeof(buf))) > 0;) out[r].text.append(buf, k);
      close(pipes[r]);
      pids[r] = -1;
      --left;
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline)
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGKILL);
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return out;
}

// Every connection of the communicator is TCP under TLS, and collectives give exact results.
std::string collectivesOverTls(int rank, ncclComm_t comm) {
  const int n = comm->nranks;
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    const std::string d = comm->channels[p].endpoint->describe();
    if (d.find("TCP/") != 0 || d.find("(TLS)") == std::string::npos)
      return "rank " + std::to_string(p) + " is reached by " + d + ", not TCP under TLS";
  }
  // AllReduce over types, ops and sizes from 0 to 1M+3 elements, in and out of place.
  const auto cases = testing::sweepCases(n, true);
  for (size_t k = 0; k < cases.size(); k += 7) {
    std::string e = testing::runAllReduce(comm, rank, n, cases[k]);
    if (!e.empty()) return e;
  }
  const size_t count = (size_t{3} << 20) + 5;  // several 512 KiB slices over every stream
  std::vector<float> in(count), out(count * n);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(rank * 1000 + i % 997);
  if (ncclAllGather(in.data(), out.data(), count, ncclFloat, comm, nullptr) != ncclSuccess)
    return std::string("AllGather: ") + ncclGetLastError(comm);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      if (out[r * count + i] != static_cast<float>(r * 1000 + i % 997))
        return "AllGather: wrong element " + std::to_string(i) + " from rank " + std::to_string(r);
  std::vector<float> b(count, rank == 1 ? 3.5f : 0.0f);
  if (ncclBroadcast(b.data(), b.data(), count, ncclFloat, 1, comm, nullptr) != ncclSuccess)
    return std::string("Broadcast: ") + ncclGetLastError(comm);
  for (float v : b)
    if (v != 3.5f) return "Broadcast: wrong element";
  std::vector<float> rs(count);
  if (ncclReduceScatter(out.data(), rs.data(), count, ncclFloat, ncclSum, comm, nullptr) !=
      ncclSuccess)
    return std::string("ReduceScatter: ") + ncclGetLastError(comm);
  for (size_t i = 0; i < count; ++i) {
    // Block `rank` of every rank's input (the AllGather's output, the same on all ranks).
    const float want = static_cast<float>(n) * out[rank * count + i];
    if (rs[i] != want) return "ReduceScatter: wrong element " + std::to_string(i);
  }
  return "";
}

void expectAllPassed(const std::vector<Outcome>& out) {
  for (size_t r = 0; r < out.size(); ++r)
    EXPECT_EQ(out[r].exitCode, 0) << "rank " << r << ": " << out[r].text;
}

TEST(TlsProcesses, CollectivesWithTheKeyFromTheEnvironment) {
  auto out = runRanks(
      3, [](int) { setenv("BRAID_TLS_PSK", kKey, 1); }, collectivesOverTls, 600);
  expectAllPassed(out);
}

TEST(TlsProcesses, CollectivesWithTheKeyFromSetEncryption) {
  auto out = runRanks(
      2,
      [](int) {
        unsetenv("BRAID_TLS_PSK");
        if (!net::setEncryption(net::kEncryptionPsk, kKey).ok()) _exit(3);
      },
      collectivesOverTls, 600);
  expectAllPassed(out);
}

// The ranks of a rendezvous wait for the missing one only until the root gives up, here 3 s.
void setTimeouts() {
  setenv("BRAID_BOOTSTRAP_ROOT_TIMEOUT_MS", "3000", 1);
  setenv("BRAID_INIT_TIMEOUT_MS", "60000", 1);
}

std::string noCollective(int, ncclComm_t) { return "init should have failed"; }

void expectAllFailedInInit(const std::vector<Outcome>& out, const std::vector<std::string>& want) {
  for (size_t r = 0; r < out.size(); ++r) {
    EXPECT_EQ(out[r].exitCode, 2) << "rank " << r << ": " << out[r].text;
    EXPECT_NE(out[r].text.find(want[r]), std::string::npos)
        << "rank " << r << " said: " << out[r].text;
  }
}

TEST(TlsProcesses, RanksWithAnotherKeyAllFailSayingSo) {
  auto out = runRanks(
      3,
      [](int r) {
        setTimeouts();
        setenv("BRAID_TLS_PSK", r == 2 ? kOtherKey : kKey, 1);
      },
      noCollective);
  // Rank 2 is refused by the root (rank 0's process); the others hear why when it gives up.
  expectAllFailedInInit(out, {"wrong pre-shared key?", "wrong pre-shared key?",
                              "TLS handshake failed: wrong pre-shared key?"});
  EXPECT_NE(out[2].text.find("root 127.0.0.1:"), std::string::npos) << out[2].text;
  EXPECT_NE(out[0].text.find("missing: rank 2"), std::string::npos) << out[0].text;
}

TEST(TlsProcesses, PlaintextRankAtAnEncryptedRootFailsSayingSo) {
  auto out = runRanks(
      3,
      [](int r) {
        setTimeouts();
        if (r == 2)
          unsetenv("BRAID_TLS_PSK");
        else
          setenv("BRAID_TLS_PSK", kKey, 1);
      },
      noCollective);
  expectAllFailedInInit(out, {"peer sent plaintext", "peer sent plaintext",
                              "this rendezvous is encrypted (TLS with a pre-shared key) and this "
                              "rank is not"});
}

TEST(TlsProcesses, EncryptedRanksAtAPlaintextRootFailSayingSo) {
  auto out = runRanks(
      3,
      [](int r) {
        setTimeouts();
        if (r == 0)
          unsetenv("BRAID_TLS_PSK");
        else
          setenv("BRAID_TLS_PSK", kKey, 1);
      },
      noCollective);
  // The ranks read the root's plaintext refusal, or find the connection reset under it.
  expectAllFailedInInit(out, {"spoke TLS and this root does not encrypt",
                              "is encryption off there?", "is encryption off there?"});
}

}  // namespace
}  // namespace braid
