// Two (or three) ranks as threads over the TCP transport, on loopback only.
#include "transport/tcp/tcp_transport.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/net/socket.h"
#include "common/loopback_only.h"
#include "transport/tcp/tcp_endpoint.h"

namespace braid::transport {
namespace {

using Clock = std::chrono::steady_clock;

PeerInfo info(int rank) {
  PeerInfo p;
  p.rank = rank;
  return p;
}

// Connects every pair among `n` ranks (one transport each), each rank on its own thread and
// in its own order, so sockets for later pairs arrive before their connect() call.
std::vector<std::vector<std::unique_ptr<Endpoint>>> connectAll(int n, const TcpOptions& options) {
  std::vector<std::unique_ptr<Transport>> transports;
  std::vector<Blob> blobs(n);
  for (int r = 0; r < n; ++r) {
    transports.push_back(makeTcpTransport(options));
    EXPECT_TRUE(transports[r]->listen(info(r), info((r + 1) % n), &blobs[r]).ok());
  }
  std::vector<std::vector<std::unique_ptr<Endpoint>>> eps(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    eps[r].resize(n);
    threads.emplace_back([&, r] {
      for (int k = n - 1; k >= 0; --k) {
        int peer = (r + k) % n;
        if (peer == r) continue;
        Status st = transports[r]->connect(info(r), info(peer), blobs[peer], Waiter(20000, nullptr),
                                           &eps[r][peer]);
        EXPECT_TRUE(st.ok()) << st.message();
      }
    });
  }
  for (auto& t : threads) t.join();
  return eps;
}

struct Pair {
  std::unique_ptr<Endpoint> a, b;  // a is rank 0's endpoint to rank 1, b the reverse
};

Pair connectPair(const TcpOptions& options) {
  auto eps = connectAll(2, options);
  return {std::move(eps[0][1]), std::move(eps[1][0])};
}

// Drives an endpoint until it has completed the given counts; false on error or after 60 s.
Status drive(Endpoint& ep, uint64_t sends, uint64_t recvs) {
  static const bool spin = std::getenv("TCP_BENCH_SPIN") != nullptr;
  auto start = Clock::now();
  while (ep.sendsCompleted() < sends || ep.recvsCompleted() < recvs) {
    BRAID_TRY(ep.progress());
    // Yielding when the sockets are full is what a sane driver does; spinning flat out (set
    // TCP_BENCH_SPIN to see it) halves loopback throughput on a busy two-core machine.
    if (!spin) std::this_thread::yield();
    if (Clock::now() - start > std::chrono::seconds(60)) return systemError("%s", "test timeout");
  }
  return Status::Ok();
}

uint8_t pattern(int rank, size_t msg, size_t i) {
  return uint8_t(rank * 31 + msg * 7 + i * 13 + (i >> 12));
}

// Both directions of `sizes` at once over a connected pair, every byte checked.
void exchange(Pair pair, const std::vector<size_t>& sizes) {
  ASSERT_TRUE(pair.a && pair.b);
  auto side = [&](Endpoint& ep, int rank) {
    std::vector<std::vector<uint8_t>> out(sizes.size()), in(sizes.size());
    for (size_t m = 0; m < sizes.size(); ++m) {
      out[m].resize(sizes[m]);
      in[m].assign(sizes[m], 0xee);
      for (size_t i = 0; i < sizes[m]; ++i) out[m][i] = pattern(rank, m, i);
      ASSERT_TRUE(ep.postSend(out[m].data(), sizes[m]).ok());
      ASSERT_TRUE(ep.postRecv(in[m].data(), sizes[m], nullptr).ok());
    }
    Status st = drive(ep, sizes.size(), sizes.size());
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_FALSE(ep.busy());
    for (size_t m = 0; m < sizes.size(); ++m)
      for (size_t i = 0; i < sizes[m]; ++i)
        if (in[m][i] != pattern(1 - rank, m, i)) {
          ADD_FAILURE() << "rank " << rank << " message " << m << " byte " << i;
          return;
        }
  };
  std::thread t([&] { side(*pair.b, 1); });
  side(*pair.a, 0);
  t.join();
}

void exchange(const TcpOptions& options, const std::vector<size_t>& sizes) {
  exchange(connectPair(options), sizes);
}

// The endpoint's wire over Unix socket pairs instead of TCP connections, `streams` of them with
// `bufferBytes` of send buffer: writes and reads stop at whatever byte the buffer allows. Tiny
// TCP buffers cannot stand in: on Linux a receive window below the sender's segment size leaves
// the rest to the zero-window probe, seconds apart (seen on loopback with 4 KiB buffers).
Pair socketPairEndpoints(size_t streams, size_t sliceBytes, int bufferBytes) {
  std::vector<TcpEndpoint::StreamSockets> a(streams), b(streams);
  for (size_t j = 0; j < streams; ++j) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0) {
      ADD_FAILURE() << "socketpair: " << std::strerror(errno);
      return {};
    }
    for (int fd : fds) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof(bufferBytes));
    a[j].send = net::Socket(net::Fd(fds[0]));
    b[j].send = net::Socket(net::Fd(fds[1]));
  }
  return {std::make_unique<TcpEndpoint>(std::move(a), sliceBytes, 1),
          std::make_unique<TcpEndpoint>(std::move(b), sliceBytes, 0)};
}

TEST(TcpTransport, StripingWithSmallSlicesAndOddStreams) {
  exchange({3, 4096, 0}, {0, 4095, 4096, 4097, 3 * 4096, 3 * 4096 + 1, 100000, 1 << 20, 5});
}
TEST(TcpTransport, Ipv6Loopback) {
  setenv("NCCL_SOCKET_FAMILY", "AF_INET6", 1);
  exchange({2, 4096, 0}, {0, 10, 50000});
  auto transport = makeTcpTransport({2, 4096, 0});
  Blob blob;
  ASSERT_TRUE(transport->listen(info(0), info(1), &blob).ok());
  setenv("NCCL_SOCKET_FAMILY", "AF_INET", 1);
  net::SocketAddress addr;
  ASSERT_TRUE(net::SocketAddress::fromWire(blob.data() + 16, &addr).ok());
  EXPECT_EQ(addr.family(), AF_INET6);
  EXPECT_TRUE(addr.isLoopback());
}
TEST(TcpTransport, AutotunedSocketBuffers) { exchange({2, 65536, 0}, {1, 300000, 4 << 20}); }

// Small messages posted together leave and arrive several to a system call; with small socket
// buffers the batches break off mid-header and mid-payload, and must resume there.
TEST(TcpTransport, BatchedSmallMessagesSurvivePartialTransfers) {
  std::vector<size_t> sizes;
  for (size_t m = 0; m < 3000; ++m) sizes.push_back((m * 2654435761u) % 4097);  // 0..4096
  exchange(socketPairEndpoints(1, 512 * 1024, 4096), sizes);
  exchange(socketPairEndpoints(3, 1024, 4096), sizes);  // messages above a slice leave the batch
}

TEST(TcpTransport, SizeMismatchInsideABatchIsAnError) {
  Pair pair = connectPair({1, 4096, 0});
  std::vector<uint8_t> out(64, 1), in(64);
  ASSERT_TRUE(pair.a->postSend(out.data(), 8).ok());
  ASSERT_TRUE(pair.a->postSend(out.data(), 8).ok());
  ASSERT_TRUE(pair.b->postRecv(in.data(), 8, nullptr).ok());
  ASSERT_TRUE(pair.b->postRecv(in.data() + 8, 16, nullptr).ok());
  std::thread t([&] { (void)drive(*pair.a, 2, 0); });
  Status st = drive(*pair.b, 0, 2);
  t.join();
  EXPECT_EQ(st.code(), ncclInvalidUsage) << st.message();
  EXPECT_NE(st.message().find("peer sent 8 bytes"), std::string::npos) << st.message();
}

class CollectingSink : public RecvSink {
 public:
  void consume(size_t offset, const void* data, size_t bytes) override {
    if (offset != got.size()) ++outOfOrder;
    const auto* p = static_cast<const uint8_t*>(data);
    got.insert(got.end(), p, p + bytes);
    ++calls;
  }
  std::vector<uint8_t> got;
  int outOfOrder = 0, calls = 0;
};

TEST(TcpTransport, SinkDeliveryIsInOrderAndComplete) {
  Pair pair = connectPair({3, 4096, 0});
  const std::vector<size_t> sizes = {100000, 0, 17, 4096 * 7 + 3, 2 << 20};
  std::vector<std::vector<uint8_t>> out(sizes.size());
  for (size_t m = 0; m < sizes.size(); ++m) {
    out[m].resize(sizes[m]);
    for (size_t i = 0; i < sizes[m]; ++i) out[m][i] = pattern(0, m, i);
    ASSERT_TRUE(pair.a->postSend(out[m].data(), sizes[m]).ok());
  }
  std::vector<CollectingSink> sinks(sizes.size());
  std::vector<uint8_t> plain(sizes[2]);
  for (size_t m = 0; m < sizes.size(); ++m)  // message 2 goes to a plain buffer in between
    ASSERT_TRUE(
        pair.b->postRecv(m == 2 ? plain.data() : nullptr, sizes[m], m == 2 ? nullptr : &sinks[m])
            .ok());
  std::thread t([&] { EXPECT_TRUE(drive(*pair.a, sizes.size(), 0).ok()); });
  Status st = drive(*pair.b, 0, sizes.size());
  t.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(plain, out[2]);
  for (size_t m = 0; m < sizes.size(); ++m) {
    if (m == 2) continue;
    EXPECT_EQ(sinks[m].outOfOrder, 0) << m;
    EXPECT_TRUE(sinks[m].got == out[m]) << m;
    if (sizes[m] == 0) {
      EXPECT_EQ(sinks[m].calls, 0);
    }
  }
}

// A sender whose peer closes mid-message (a receiver's view of a close: the endpoint contract).
TEST(TcpTransport, ASenderSeesAClosedPeerAsARemoteError) {
  Pair pair = connectPair({4, 65536, 0});
  std::vector<uint8_t> big(32 << 20, 3);
  ASSERT_TRUE(pair.a->postSend(big.data(), big.size()).ok());
  pair.b.reset();
  Status st = drive(*pair.a, 1, 0);
  EXPECT_EQ(st.code(), ncclRemoteError) << st.message();
}

size_t openFds() {
  size_t n = 0;
  for (int fd = 0; fd < 4096; ++fd)
    if (fcntl(fd, F_GETFD) >= 0) ++n;
  return n;
}

TEST(TcpTransport, NoDescriptorLeaks) {
  size_t before = openFds();
  for (int i = 0; i < 3; ++i) exchange({4, 4096, 0}, {1, 100000});
  {
    Pair pair = connectPair({3, 4096, 0});
    uint64_t v = 0;
    ASSERT_TRUE(pair.a->postRecv(&v, sizeof(v), nullptr).ok());
    pair.b.reset();
    EXPECT_FALSE(drive(*pair.a, 0, 1).ok());
  }
  EXPECT_EQ(openFds(), before);
}

TEST(TcpTransport, ThreeRanksAndConnectionToSelf) {
  auto eps = connectAll(3, {2, 4096, 0});
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      std::vector<uint32_t> out(3000), in0(3000), in1(3000);
      for (size_t i = 0; i < out.size(); ++i) out[i] = uint32_t(r * 100000 + i);
      int p0 = (r + 1) % 3, p1 = (r + 2) % 3;
      for (int p : {p0, p1}) ASSERT_TRUE(eps[r][p]->postSend(out.data(), out.size() * 4).ok());
      ASSERT_TRUE(eps[r][p0]->postRecv(in0.data(), in0.size() * 4, nullptr).ok());
      ASSERT_TRUE(eps[r][p1]->postRecv(in1.data(), in1.size() * 4, nullptr).ok());
      // Both endpoints progress together: a peer's data only moves while it is driven.
      auto start = Clock::now();
      while (eps[r][p0]->busy() || eps[r][p1]->busy()) {
        ASSERT_TRUE(eps[r][p0]->progress().ok());
        ASSERT_TRUE(eps[r][p1]->progress().ok());
        ASSERT_LT(Clock::now() - start, std::chrono::seconds(60));
      }
      EXPECT_EQ(in0[5], uint32_t(p0 * 100000 + 5));
      EXPECT_EQ(in1[2999], uint32_t(p1 * 100000 + 2999));
    });
  for (auto& t : threads) t.join();

  auto transport = makeTcpTransport({3, 4096, 0});
  Blob blob;
  ASSERT_TRUE(transport->listen(info(0), info(0), &blob).ok());
  std::unique_ptr<Endpoint> self;
  ASSERT_TRUE(transport->connect(info(0), info(0), blob, Waiter(5000, nullptr), &self).ok());
  std::vector<uint8_t> out(50000), in(50000);
  for (size_t i = 0; i < out.size(); ++i) out[i] = pattern(0, 0, i);
  ASSERT_TRUE(self->postSend(out.data(), out.size()).ok());
  ASSERT_TRUE(self->postRecv(in.data(), in.size(), nullptr).ok());
  ASSERT_TRUE(drive(*self, 1, 1).ok());
  EXPECT_EQ(in, out);
}

TEST(TcpTransport, StrangersAtTheListenerAreDroppedAndAcceptIsBounded) {
  auto transport = makeTcpTransport({2, 4096, 0});
  Blob blob;
  ASSERT_TRUE(transport->listen(info(0), info(1), &blob).ok());
  net::SocketAddress addr;
  ASSERT_TRUE(net::SocketAddress::fromWire(blob.data() + 16, &addr).ok());
  net::Fd junk;
  ASSERT_TRUE(net::connectTo(addr, Waiter(5000, nullptr), &junk).ok());
  std::vector<uint8_t> noise(24, 0x5a);
  ASSERT_TRUE(net::sendAll(junk.get(), noise.data(), noise.size(), Waiter(5000, nullptr)).ok());
  // Rank 1 never dials: connect() gives up when the waiter says so.
  std::atomic<bool> abortFlag{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    abortFlag = true;
  });
  auto start = Clock::now();
  std::unique_ptr<Endpoint> ep;
  Status st = transport->connect(info(0), info(1), blob, Waiter(0, &abortFlag), &ep);
  aborter.join();
  EXPECT_FALSE(st.ok());
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 1.5);
  st = transport->connect(info(0), info(1), blob, Waiter(200, nullptr), &ep);
  EXPECT_FALSE(st.ok()) << "timeout expected";
}

TEST(TcpTransport, OptionsFromEnvironmentAreValidated) {
  auto with = [](const char* threads, const char* socks, const char* slice, TcpOptions* o) {
    setenv("NCCL_SOCKET_NTHREADS", threads, 1);
    setenv("NCCL_NSOCKS_PERTHREAD", socks, 1);
    setenv("BRAID_TCP_SLICE_BYTES", slice, 1);
    Status st = tcpOptionsFromEnv(o);
    unsetenv("NCCL_SOCKET_NTHREADS");
    unsetenv("NCCL_NSOCKS_PERTHREAD");
    unsetenv("BRAID_TCP_SLICE_BYTES");
    return st;
  };
  TcpOptions o;
  ASSERT_TRUE(with("4", "2", "65536", &o).ok());
  EXPECT_EQ(o.streams, 8);
  EXPECT_EQ(o.sliceBytes, 65536u);
  EXPECT_FALSE(with("17", "1", "65536", &o).ok());
  EXPECT_FALSE(with("0", "1", "65536", &o).ok());
  EXPECT_FALSE(with("8", "9", "65536", &o).ok());
  EXPECT_FALSE(with("1", "0", "65536", &o).ok());
  EXPECT_FALSE(with("1", "1", "12", &o).ok());
  ASSERT_TRUE(tcpOptionsFromEnv(&o).ok());  // defaults
  std::unique_ptr<Transport> t;
  ASSERT_TRUE(createTcpTransport(&t).ok());
  EXPECT_EQ(t->name(), "TCP");
  EXPECT_TRUE(t->canConnect(info(0), info(1)));
}

// Not a correctness test: prints loopback bandwidth for 1, 2 and 4 streams.
// Run with --gtest_also_run_disabled_tests --gtest_filter='*Bandwidth*'.
TEST(TcpTransport, DISABLED_Bandwidth) {
  const char* sizeEnv = std::getenv("TCP_BENCH_BYTES");
  const size_t bytes = sizeEnv ? std::strtoull(sizeEnv, nullptr, 0) : (64u << 20);
  const int iters = 20;
  for (int streams : {1, 4}) {
    Pair pair = connectPair({streams, 512 << 10, 4 << 20});
    const int rounds = 2000;
    uint64_t ping = 0, pong = 0;
    auto start = Clock::now();
    std::thread t([&] {
      for (int i = 0; i < rounds; ++i) {
        ASSERT_TRUE(pair.b->postRecv(&pong, 8, nullptr).ok());
        ASSERT_TRUE(drive(*pair.b, i, i + 1).ok());
        ASSERT_TRUE(pair.b->postSend(&pong, 8).ok());
      }
      ASSERT_TRUE(drive(*pair.b, rounds, rounds).ok());
    });
    for (int i = 0; i < rounds; ++i) {
      ASSERT_TRUE(pair.a->postSend(&ping, 8).ok());
      ASSERT_TRUE(pair.a->postRecv(&ping, 8, nullptr).ok());
      ASSERT_TRUE(drive(*pair.a, i + 1, i + 1).ok());
    }
    t.join();
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("streams %d: 8-byte round trip %.1f us\n", streams, s / rounds * 1e6);
  }
  for (int bufferBytes : {0, 4 << 20})
    for (size_t slice : {size_t(128) << 10, size_t(512) << 10, size_t(2) << 20})
      for (int streams : {1, 2, 4}) {
        Pair pair = connectPair({streams, slice, bufferBytes});
        std::vector<uint8_t> src(bytes, 1), dst(bytes);
        auto start = Clock::now();
        std::thread t([&] {
          for (int i = 0; i < iters; ++i)
            ASSERT_TRUE(pair.b->postRecv(dst.data(), bytes, nullptr).ok());
          ASSERT_TRUE(drive(*pair.b, 0, iters).ok());
        });
        for (int i = 0; i < iters; ++i) ASSERT_TRUE(pair.a->postSend(src.data(), bytes).ok());
        ASSERT_TRUE(drive(*pair.a, iters, 0).ok());
        t.join();
        double s = std::chrono::duration<double>(Clock::now() - start).count();
        std::printf("streams %d slice %4zu KiB sockbuf %7d: %6.2f GB/s (%zu MiB x %d)\n", streams,
                    slice >> 10, bufferBytes, double(bytes) * iters / s / 1e9, bytes >> 20, iters);
      }
}

}  // namespace
}  // namespace braid::transport
