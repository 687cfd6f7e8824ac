// The shared-memory transport between two processes (the endpoint contract itself is checked in
// one process by tests/inproc/endpoint_contract_test.cc): the test forks a child, the two
// exchange their handles over a socketpair, and both run the same body. Covers FIFO order
// around the ring's capacity and sinks across processes, the process_vm_readv path and the copy
// path, a size mismatch, a SIGKILLed peer, and that nothing is left in /dev/shm afterwards.
#include "transport/shm/shm_transport.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "transport_test_util.h"

namespace braid::transport {
namespace {

using braid::testing::drive;
using braid::testing::exchange;
using Body = std::function<Status(Endpoint&, int rank)>;

constexpr int kIoTimeoutMs = 10000;

bool ioAll(int fd, void* buf, size_t n, bool writing) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    pollfd pfd{fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0};
    if (poll(&pfd, 1, kIoTimeoutMs) <= 0) return false;
    ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

PeerInfo info(int rank) {
  return PeerInfo{rank, 0, /*hostHash=*/0xabc, /*processHash=*/static_cast<uint64_t>(100 + rank)};
}

// The three connection phases, with the socket standing in for the bootstrap.
Status connectOverSocket(int sock, int rank, Transport& t, std::unique_ptr<Endpoint>* ep) {
  Blob mine, theirs;
  BRAID_TRY(t.listen(info(rank), info(1 - rank), &mine));
  uint64_t n = mine.size();
  if (!ioAll(sock, &n, sizeof n, true) || !ioAll(sock, mine.data(), mine.size(), true) ||
      !ioAll(sock, &n, sizeof n, false) || n > 4096)
    return {ncclSystemError, "handle exchange failed"};
  theirs.resize(n);
  if (!ioAll(sock, theirs.data(), n, false)) return {ncclSystemError, "handle exchange failed"};
  BRAID_TRY(t.connect(info(rank), info(1 - rank), theirs, Waiter(10000, nullptr), ep));
  char token = 'b';
  if (!ioAll(sock, &token, 1, true) || !ioAll(sock, &token, 1, false))
    return {ncclSystemError, "barrier failed"};
  return t.finishConnect();
}

// Names this test's processes created and did not remove.
int leftoverSegments(pid_t a, pid_t b) {
  int count = 0;
  const std::string pa = "braid-shm-" + std::to_string(a) + "-",
                    pb = "braid-shm-" + std::to_string(b) + "-";
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind(pa, 0) == 0 || name.rfind(pb, 0) == 0) ++count;
    }
    closedir(d);
  }
  return count;
}

struct RunResult {
  Status parent;
  int childStatus = -1;  // from waitpid
  int leftovers = -1;
};

// Forks; the child runs childBody (exit 0 when it returns Ok), the parent runs parentBody.
// The child is reaped within a bound (killed if it overstays), then /dev/shm is checked.
RunResult runPair(const Body& parentBody, const Body& childBody, int childTimeoutMs = 60000) {
  RunResult result;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    result.parent = {ncclSystemError, "socketpair failed"};
    return result;
  }
  std::fflush(nullptr);
  pid_t child = fork();
  if (child == 0) {
    close(sv[0]);
    auto t = makeShmTransport();
    std::unique_ptr<Endpoint> ep;
    Status st = connectOverSocket(sv[1], 1, *t, &ep);
    if (st.ok()) st = childBody(*ep, 1);
    if (!st.ok()) std::fprintf(stderr, "child: %s\n", st.message().c_str());
    ep.reset();
    t.reset();
    _exit(st.ok() ? 0 : 1);
  }
  close(sv[1]);
  {
    auto t = makeShmTransport();
    std::unique_ptr<Endpoint> ep;
    result.parent = connectOverSocket(sv[0], 0, *t, &ep);
    if (result.parent.ok()) result.parent = parentBody(*ep, 0);
  }
  close(sv[0]);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(childTimeoutMs);
  while (waitpid(child, &result.childStatus, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &result.childStatus, 0);
      result.childStatus = -2;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  result.leftovers = leftoverSegments(getpid(), child);
  return result;
}

void expectClean(const RunResult& r) {
  EXPECT_TRUE(r.parent.ok()) << "parent: " << r.parent.message();
  EXPECT_TRUE(WIFEXITED(r.childStatus) && WEXITSTATUS(r.childStatus) == 0)
      << "child status " << r.childStatus;
  EXPECT_EQ(r.leftovers, 0) << "segments left in /dev/shm";
}

struct Config {
  size_t ring;
  size_t cmaMin;  // 0: always through the ring
};
void PrintTo(const Config& c, std::ostream* os) {
  *os << "ring " << c.ring << ", cmaMin " << c.cmaMin;
}

void setKnobs(const Config& c) {
  setenv("BRAID_SHM_BUFFSIZE", std::to_string(c.ring).c_str(), 1);
  setenv("BRAID_SHM_CMA_MIN_BYTES", std::to_string(c.cmaMin).c_str(), 1);
}

class ShmSizes : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override { setKnobs(GetParam()); }
};

TEST_P(ShmSizes, FifoAcrossRingBoundaries) {
  const size_t ring = GetParam().ring;
  const std::vector<size_t> sizes = {0, 1, 7, 4096, ring + 1, 0, 3, size_t{64} << 20, 5};
  Body body = [&](Endpoint& ep, int rank) { return exchange(ep, rank, sizes); };
  expectClean(runPair(body, body));
}

TEST_P(ShmSizes, SinkSeesEveryByteOnceInOrder) {
  const std::vector<size_t> sizes = {0, 100, 3 * GetParam().ring + 5, size_t{9} << 20};
  Body body = [&](Endpoint& ep, int rank) { return exchange(ep, rank, sizes, true, true); };
  expectClean(runPair(body, body));
}

INSTANTIATE_TEST_SUITE_P(Rings, ShmSizes,
                         ::testing::Values(Config{4 << 20, 0}, Config{4 << 20, 262144},
                                           Config{4096, 0}, Config{4096, 1024}),
                         [](const auto& info) {
                           return "ring" + std::to_string(info.param.ring) + "_cma" +
                                  std::to_string(info.param.cmaMin);
                         });

TEST(Shm, CanConnectOnlyToOtherProcessesOfThisHost) {
  auto t = makeShmTransport();
  EXPECT_TRUE(t->canConnect(info(0), info(1)));
  EXPECT_FALSE(t->canConnect(info(0), info(0)));
  PeerInfo remote = info(1);
  remote.hostHash = 0xdef;
  EXPECT_FALSE(t->canConnect(info(0), remote));
  setenv("NCCL_SHM_DISABLE", "1", 1);
  EXPECT_FALSE(t->canConnect(info(0), info(1)));
  unsetenv("NCCL_SHM_DISABLE");
}

TEST(Shm, SizeMismatchIsAnError) {
  for (size_t bytes : {size_t{16}, size_t{1} << 20}) {  // through the ring, and process_vm_readv
    setKnobs({4 << 20, 262144});
    std::vector<uint8_t> out(bytes, 1);
    Body sender = [&](Endpoint& ep, int) {
      BRAID_TRY(ep.postSend(out.data(), out.size()));
      // A copied send completes; a direct one waits for an acknowledgement that never comes,
      // until the child exits and the endpoint notices.
      Status st = drive(ep, 1, 0, 10000);
      return st.ok() || st.code() == ncclRemoteError ? Status::Ok() : st;
    };
    Body receiver = [&](Endpoint& ep, int) -> Status {
      std::vector<uint8_t> in(bytes + 1);
      BRAID_TRY(ep.postRecv(in.data(), in.size(), nullptr));
      Status st = drive(ep, 0, 1, 10000);
      if (st.code() != ncclInvalidUsage || st.message().find("mismatch") == std::string::npos)
        return {ncclInternalError, "expected a size mismatch, got: " + st.message()};
      return Status::Ok();
    };
    expectClean(runPair(sender, receiver));
  }
}

TEST(Shm, KilledPeerGivesRemoteErrorQuickly) {
  for (size_t cmaMin : {size_t{0}, size_t{262144}}) {
    setKnobs({1 << 20, cmaMin});
    std::vector<uint8_t> out(size_t{16} << 20, 3), in(64);
    double seconds = -1;
    Body parent = [&](Endpoint& ep, int) -> Status {
      BRAID_TRY(ep.postRecv(in.data(), in.size(), nullptr));
      BRAID_TRY(ep.postSend(out.data(), out.size()));  // fills the ring, or waits for an ack
      auto start = std::chrono::steady_clock::now();
      Status st = drive(ep, 1, 1, 20000);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (st.code() != ncclRemoteError)
        return {ncclInternalError, "expected a remote error, got: " + st.message()};
      return Status::Ok();
    };
    Body child = [&](Endpoint&, int) -> Status {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      raise(SIGKILL);
      return Status::Ok();
    };
    RunResult r = runPair(parent, child);
    EXPECT_TRUE(r.parent.ok()) << r.parent.message();
    EXPECT_TRUE(WIFSIGNALED(r.childStatus) && WTERMSIG(r.childStatus) == SIGKILL);
    EXPECT_EQ(r.leftovers, 0);
    EXPECT_GE(seconds, 0.0);
    EXPECT_LT(seconds, 5.0) << "peer death noticed too late";
    std::printf("cma_min %zu: peer death noticed after %.3f s\n", cmaMin, seconds);
  }
}

TEST(Shm, PeerThatClosesEarlyIsARemoteError) {
  setKnobs({4 << 20, 262144});
  std::vector<uint8_t> in(64);
  Body parent = [&](Endpoint& ep, int) -> Status {
    BRAID_TRY(ep.postRecv(in.data(), in.size(), nullptr));
    Status st = drive(ep, 0, 1, 10000);
    if (st.code() != ncclRemoteError)
      return {ncclInternalError, "expected a remote error, got: " + st.message()};
    return Status::Ok();
  };
  Body child = [&](Endpoint&, int) {
    // Keep the process alive: only the closed flag can tell the parent.
    return Status::Ok();
  };
  expectClean(runPair(parent, child));
}

TEST(Shm, BadHandlesAreRejected) {
  auto t = makeShmTransport();
  Blob mine;
  ASSERT_TRUE(t->listen(info(0), info(1), &mine).ok());
  std::unique_ptr<Endpoint> ep;
  EXPECT_EQ(t->connect(info(0), info(1), Blob(7, 0), Waiter(), &ep).code(), ncclInvalidArgument);
  Blob forged = mine;
  forged[0] ^= 1;
  EXPECT_EQ(t->connect(info(0), info(1), forged, Waiter(), &ep).code(), ncclInvalidArgument);
  // A path escape in the name is refused before anything is opened.
  forged = mine;
  const size_t nameAt = forged.size() - 96;
  std::snprintf(reinterpret_cast<char*>(forged.data() + nameAt), 96, "braid-../../etc/passwd");
  EXPECT_EQ(t->connect(info(0), info(1), forged, Waiter(), &ep).code(), ncclInvalidArgument);
  EXPECT_FALSE(ep);
  t.reset();
  EXPECT_EQ(leftoverSegments(getpid(), getpid()), 0) << "an unconnected listen left its segment";
}

}  // namespace
}  // namespace braid::transport
