// Test harnesses that run one function on every rank of a communicator:
//  - runThreads: threads as ranks in this process (ncclCommInitAll: the loopback transport);
//  - runProcesses: forked processes (shared memory, or TCP with NCCL_SHM_DISABLE=1), which
//    rendezvous through NCCL_COMM_ID so that no thread exists in the parent when it forks.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/comm/calls_in_flight.h"
#include "nccl.h"

namespace braid::testing {

// Calls fn(rank, comm) on n threads, each with its own communicator, then destroys them.
// Returns the failures reported by fn ("" = success), one per rank.
inline std::vector<std::string> runThreads(int n,
                                           const std::function<std::string(int, ncclComm_t)>& fn) {
  std::vector<ncclComm_t> comms(n, nullptr);
  std::vector<std::string> out(n);
  ncclResult_t res = ncclCommInitAll(comms.data(), n, nullptr);
  if (res != ncclSuccess) {
    for (auto& o : out) o = std::string("ncclCommInitAll: ") + ncclGetLastError(nullptr);
    return out;
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { out[r] = fn(r, comms[r]); });
  for (auto& t : threads) t.join();
  for (auto c : comms) ncclCommDestroy(c);
  return out;
}

inline int freeTcpPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

struct ProcessResult {
  int exitCode = -1;  // the child's exit code, or -signal
};

// Forks n children; child r sets `env` ("%r" in a value becomes r) and NCCL_COMM_ID, initialises
// its communicator, runs fn(rank, comm) (whose return value is its exit code) and exits. Children
// still running after timeoutSec are killed (reported as -SIGKILL).
inline std::vector<ProcessResult> runProcesses(
    int n, const std::function<int(int, ncclComm_t)>& fn,
    const std::vector<std::pair<std::string, std::string>>& env = {}, int timeoutSec = 120) {
  const std::string commId = "127.0.0.1:" + std::to_string(freeTcpPort());
  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      for (const auto& [k, v] : env) {
        std::string value;  // "%r" stands for the rank, for per-rank settings
        for (size_t i = 0; i < v.size(); ++i) {
          if (v.compare(i, 2, "%r") == 0) {
            value += std::to_string(r);
            ++i;
          } else {
            value += v[i];
          }
        }
        setenv(k.c_str(), value.c_str(), 1);
      }
      setenv("NCCL_COMM_ID", commId.c_str(), 1);
      ncclUniqueId id;
      ncclComm_t comm = nullptr;
      int code = 100;
      if (ncclGetUniqueId(&id) == ncclSuccess && ncclCommInitRank(&comm, n, id, r) == ncclSuccess) {
        code = fn(r, comm);
        ncclCommDestroy(comm);
      } else {
        fprintf(stderr, "rank %d: init failed: %s\n", r, ncclGetLastError(nullptr));
      }
      fflush(stdout);
      fflush(stderr);
      _exit(code);
    }
    pids[r] = pid;
  }
  std::vector<ProcessResult> results(n);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSec);
  int remaining = n;
  while (remaining > 0) {
    for (int r = 0; r < n; ++r) {
      if (pids[r] < 0) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        results[r].exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        pids[r] = -1;
        --remaining;
      }
    }
    if (remaining > 0 && std::chrono::steady_clock::now() > deadline) {
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGKILL);
    }
    if (remaining > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return results;
}

// A death test's body: a one-rank communicator's ncclCommCuDevice, as an exit code: 0 when it
// answers -1 (host memory only), 2 or 3 when init or the query fails, 4 for a device.
inline int hostOnlyExitCode() {
  ncclComm_t comm = nullptr;
  int dev = 0;
  if (ncclCommInitAll(&comm, 1, nullptr) != ncclSuccess) return 2;
  if (ncclCommCuDevice(comm, &dev) != ncclSuccess) return 3;
  ncclCommDestroy(comm);
  return dev == -1 ? 0 : 4;
}

// Returns once some thread is inside a call on `comm` (core/comm/calls_in_flight.h: what
// ncclCommAbort itself waits for); false after 60 s without.
inline bool waitUntilInCall(ncclComm_t comm) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (bool first = true; !calls::inFlight(comm, first); first = false) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Rank 0 of a clique waits in an AllReduce that its peers never join, on a thread of its own:
// what ncclCommAbort, ncclCommRevoke or a shrink must end. result is the call's once it returned,
// -1 before; the constructor returns once the thread is inside the call.
class StuckAllReduce {
 public:
  explicit StuckAllReduce(ncclComm_t comm)
      : thread_([this, comm] {
          float x[16] = {};
          result = ncclAllReduce(x, x, 16, ncclFloat, ncclSum, comm, nullptr);
        }) {
    if (!waitUntilInCall(comm)) ADD_FAILURE() << "the AllReduce thread never entered its call";
  }
  ~StuckAllReduce() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  std::atomic<int> result{-1};

 private:
  std::thread thread_;
};

}  // namespace braid::testing
