// Two processes over the SHM transport: 8-byte ping-pong latency, then bandwidth one way and
// both ways at once (what a 2-rank AllReduce does), next to plain memcpy of the same sizes.
// Usage: shm_pingpong [maxMiB] [threads]
//   threads: two threads over the loopback transport instead of two processes over SHM.
//   BRAID_SHM_CMA_MIN_BYTES / BRAID_LOOPBACK_DIRECT_MIN_BYTES choose the single-copy threshold.
// Latency is reported as the best and the median of 20 batches: on a shared machine the best
// batch shows what the transport can do, the median what the neighbours let it do.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "transport/loopback/loopback_transport.h"
#include "transport/shm/shm_transport.h"

using namespace braid;
using namespace braid::transport;
using Clock = std::chrono::steady_clock;

namespace {

bool ioAll(int fd, void* buf, size_t n, bool writing) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool gThreads = false;

Status connect(int sock, int rank, Transport& t, std::unique_ptr<Endpoint>* ep) {
  const uint64_t p0 = 1, p1 = gThreads ? 1 : 2;
  PeerInfo self{rank, 0, 1, rank ? p1 : p0}, peer{1 - rank, 0, 1, rank ? p0 : p1};
  Blob mine, theirs(4096);
  BRAID_TRY(t.listen(self, peer, &mine));
  uint64_t n = mine.size();
  if (!ioAll(sock, &n, 8, true) || !ioAll(sock, mine.data(), n, true) ||
      !ioAll(sock, &n, 8, false) || n > theirs.size() || !ioAll(sock, theirs.data(), n, false))
    return {ncclSystemError, "exchange failed"};
  theirs.resize(n);
  BRAID_TRY(t.connect(self, peer, theirs, Waiter(), ep));
  char c = 0;
  if (!ioAll(sock, &c, 1, true) || !ioAll(sock, &c, 1, false))
    return {ncclSystemError, "barrier failed"};
  return t.finishConnect();
}

void wait(Endpoint& ep, uint64_t sends, uint64_t recvs) {
  while (ep.sendsCompleted() < sends || ep.recvsCompleted() < recvs) {
    Status st = ep.progress();
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      std::exit(1);
    }
  }
}

void barrier(int sock) {
  char c = 0;
  ioAll(sock, &c, 1, true);
  ioAll(sock, &c, 1, false);
}

double seconds(Clock::time_point a) {
  return std::chrono::duration<double>(Clock::now() - a).count();
}

void run(int sock, int rank, size_t maxBytes) {
  auto t = gThreads ? makeLoopbackTransport() : makeShmTransport();
  std::unique_ptr<Endpoint> ep;
  Status st = connect(sock, rank, *t, &ep);
  if (!st.ok()) {
    std::fprintf(stderr, "connect: %s\n", st.message().c_str());
    std::exit(1);
  }
  if (rank == 0) std::printf("# %s\n", ep->describe().c_str());
  uint64_t s = 0, r = 0;

  // Latency: rank 0 sends, rank 1 echoes. Batch 0 warms up.
  char ping[8] = {}, pong[8] = {};
  constexpr int kBatches = 21, kIters = 10000;
  std::vector<double> perBatch;
  for (int batch = 0; batch < kBatches; ++batch) {
    const int iters = kIters;
    barrier(sock);
    auto start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      if (rank == 0) {
        (void)ep->postSend(ping, 8);
        (void)ep->postRecv(pong, 8, nullptr);
        wait(*ep, ++s, ++r);
      } else {
        (void)ep->postRecv(pong, 8, nullptr);
        wait(*ep, s, ++r);
        (void)ep->postSend(ping, 8);
        wait(*ep, ++s, r);
      }
    }
    if (batch > 0) perBatch.push_back(seconds(start) / iters / 2 * 1e6);
  }
  std::sort(perBatch.begin(), perBatch.end());
  if (rank == 0)
    std::printf(
        "8-byte one-way latency: best %.3f us, median %.3f us (%d batches of %d round trips)\n",
        perBatch.front(), perBatch[perBatch.size() / 2], kBatches - 1, kIters);

  std::vector<char> a(maxBytes, 1), b(maxBytes, 2), c(maxBytes, 3);
  // What a reduce step does with a sink: add the incoming floats into the local buffer, straight
  // out of the ring. Pieces are whole 16-byte blocks but for the last (see ring_endpoint.cc).
  struct SumSink final : RecvSink {
    float* dst = nullptr;
    void consume(size_t offset, const void* data, size_t bytes) override {
      float* d = dst + offset / sizeof(float);
      const auto* x = static_cast<const float*>(data);
      for (size_t i = 0; i < bytes / sizeof(float); ++i) d[i] += x[i];
    }
  } sink;
  sink.dst = reinterpret_cast<float*>(b.data());
  if (rank == 0)
    std::printf("%12s %12s %14s %14s %16s %12s\n", "bytes", "memcpy GB/s", "one-way GB/s",
                "bidir GB/s/dir", "bidir+sum GB/s/dir", "bidir/memcpy");
  enum class Kind { kMemcpy, kOneWay, kBidir, kBidirSum };
  for (size_t bytes = 4096; bytes <= maxBytes; bytes *= 4) {
    const int iters = static_cast<int>(std::max<size_t>(4, (size_t{2} << 30) / bytes / 8));
    // Best of three: neighbours on a shared machine only ever make a run slower.
    auto measure = [&](Kind kind) {
      double best = 0;
      for (int trial = 0; trial < 3; ++trial) {
        barrier(sock);
        auto start = Clock::now();
        for (int i = 0; i < iters; ++i) {
          switch (kind) {
            case Kind::kMemcpy:  // rank 0 alone, so that the two do not share the bandwidth
              if (rank == 0) std::memcpy(c.data(), a.data(), bytes);
              break;
            case Kind::kOneWay:  // rank 0 -> rank 1, then a 0-byte ack so both time the same span
              (void)ep->postSend(rank == 0 ? a.data() : nullptr, rank == 0 ? bytes : 0);
              (void)ep->postRecv(rank == 0 ? nullptr : b.data(), rank == 0 ? 0 : bytes, nullptr);
              wait(*ep, ++s, ++r);
              break;
            case Kind::kBidir:
            case Kind::kBidirSum:
              (void)ep->postSend(a.data(), bytes);
              (void)ep->postRecv(b.data(), bytes, kind == Kind::kBidirSum ? &sink : nullptr);
              wait(*ep, ++s, ++r);
              break;
          }
        }
        best = std::max(best, static_cast<double>(bytes) * iters / seconds(start) / 1e9);
      }
      return best;
    };
    const double memcpyRate = measure(Kind::kMemcpy), oneWay = measure(Kind::kOneWay),
                 bidir = measure(Kind::kBidir), bidirSum = measure(Kind::kBidirSum);
    if (rank == 0)
      std::printf("%12zu %12.2f %14.2f %14.2f %16.2f %11.0f%%\n", bytes, memcpyRate, oneWay, bidir,
                  bidirSum, 100 * bidir / memcpyRate);
  }
  ep.reset();
}

}  // namespace

int main(int argc, char** argv) {
  const size_t maxBytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 0) : 256) << 20;
  gThreads = argc > 2 && !std::strcmp(argv[2], "threads");
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
  if (gThreads) {
    std::thread peer([&] { run(sv[1], 1, maxBytes); });
    run(sv[0], 0, maxBytes);
    peer.join();
    return 0;
  }
  std::fflush(nullptr);
  pid_t child = fork();
  if (child == 0) {
    run(sv[1], 1, maxBytes);
    _exit(0);
  }
  run(sv[0], 0, maxBytes);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
