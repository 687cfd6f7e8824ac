// Connection setup. One listener per transport instance serves every peer. For a pair, the
// higher rank dials all streams and the lower rank accepts them: dialing completes in the
// peer's listen backlog, so no rank ever waits on another rank's connect() call. Every socket
// opens with a hello naming the listener's token, the dialer's rank and the stream index;
// sockets accepted for other peers are kept until their connect() call. With encryption each
// stream first does a TLS handshake (net::Socket), which needs the peer's code: a dialer moves
// its handshakes and serves its own listener while it waits, and the lower rank of a pair is in
// its connect() for the higher one until the higher one's streams have arrived.
#include "transport/tcp/tcp_transport.h"

#include <sys/random.h>

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>

#include "base/env.h"
#include "base/log.h"
#include "base/net/socket.h"
#include "transport/tcp/tcp_endpoint.h"
#include "transport/tcp/tcp_wire.h"

namespace braid::env {
const Var kNcclSocketNthreads = {"NCCL_SOCKET_NTHREADS", "1",
                                 "TCP streams per peer are NTHREADS x NSOCKS_PERTHREAD (1-16)"};
const Var kNcclNsocksPerthread = {
    "NCCL_NSOCKS_PERTHREAD", "4",
    "TCP streams per NCCL_SOCKET_NTHREADS to each peer (threads x socks <= 64); 4 measured fastest "
    "on loopback"};
const Var kBraidTcpSliceBytes = {
    "BRAID_TCP_SLICE_BYTES", "524288",
    "TCP transport: messages larger than this are striped in slices of this size over the streams"};
}  // namespace braid::env

namespace braid::transport {
namespace {

using tcp::kHelloBytes;
using tcp::kMaxStreams;
constexpr int64_t kHelloDeadlineMs = 5000;
constexpr int kPollMs = 50;
// Connections waiting for their hello beyond this are refused: a flood must not exhaust fds.
constexpr size_t kMaxIncoming = 256;

class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(const TcpOptions& options) : options_(options) {
    if (getrandom(&token_, sizeof(token_), 0) != sizeof(token_) || token_ == 0)
      token_ = 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(this);
  }

  std::string_view name() const override { return "TCP"; }
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return true; }
  LinkCost linkCost() const override { return kTcpLinkCost; }

  Status listen(const PeerInfo& self, const PeerInfo& peer, Blob* handle) override {
    std::lock_guard<std::mutex> lock(mu_);
    BRAID_TRY(ensureListener());
    *handle = tcp::encodeHandle({options_.streams, token_, address_});
    return Status::Ok();
  }

  Status connect(const PeerInfo& self, const PeerInfo& peer, const Blob& peerHandle,
                 const Waiter& waiter, std::unique_ptr<Endpoint>* endpoint) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto what = strfmt("TCP connect rank %d -> rank %d", self.rank, peer.rank);
    tcp::Handle handle;
    BRAID_TRY(tcp::decodeHandle(peerHandle, &handle).withContext(what));
    const int peerStreams = handle.streams;
    if (peerStreams != options_.streams)
      return invalidUsage(
          "%s: peer uses %d streams, this rank %d (NCCL_SOCKET_NTHREADS x "
          "NCCL_NSOCKS_PERTHREAD must match on all ranks)",
          what.c_str(), peerStreams, options_.streams);
    const uint64_t peerToken = handle.token;
    const net::SocketAddress peerAddress = handle.address;
    BRAID_TRY(ensureListener());

    std::vector<TcpEndpoint::StreamSockets> streams(options_.streams);
    std::vector<Outgoing> dialed;
    if (self.rank >= peer.rank) {
      for (int j = 0; j < options_.streams; ++j) {
        Outgoing d;
        BRAID_TRY(dial(peerAddress, peerToken, self.rank, j, waiter, &d).withContext(what));
        dialed.push_back(std::move(d));
      }
    }
    // The dialed streams' handshakes and hellos move together, and so does this rank's
    // listener meanwhile: the peer's streams arrive there, and so do a connection to self's.
    const bool accepting = self.rank <= peer.rank;
    std::vector<net::Socket> accepted;
    Waiter w = waiter;
    for (;;) {
      bool moved = false, dialedAll = true;
      for (size_t j = 0; j < dialed.size(); ++j) {
        BRAID_TRY(advance(dialed[j], &moved)
                      .withContext(strfmt("%s, stream %zu (%s)", what.c_str(), j,
                                          peerAddress.toString().c_str())));
        dialedAll = dialedAll && dialed[j].sent == kHelloBytes;
      }
      BRAID_TRY(serviceListener(waiter, &moved));
      const bool acceptedAll = !accepting || takeAccepted(peer.rank, &accepted);
      if (dialedAll && acceptedAll) break;
      if (moved) {
        w.restart();
        continue;
      }
      Status st = w.check(strfmt("%s: waiting for %s", what.c_str(),
                                 dialedAll ? "the peer's TCP connections" : "the TLS handshakes")
                              .c_str());
      if (!st.ok()) {
        if (lastRefusal_.empty()) return st;
        return Status(st.code(), strfmt("%s; meanwhile this rank refused a connection: %s",
                                        st.message().c_str(), lastRefusal_.c_str()));
      }
      waitForWork(dialed);
    }
    for (int j = 0; j < options_.streams && self.rank >= peer.rank; ++j)
      streams[j].send = std::move(dialed[j].socket);
    // A connection to self sends on the dialed sockets and receives on the accepted ones.
    for (int j = 0; j < options_.streams && accepting; ++j)
      (self.rank == peer.rank ? streams[j].recv : streams[j].send) = std::move(accepted[j]);
    auto ep = std::make_unique<TcpEndpoint>(std::move(streams), options_.sliceBytes, peer.rank);
    BRAID_INFO(kNet, "rank %d: connected to rank %d via %s", self.rank, peer.rank,
               ep->describe().c_str());
    *endpoint = std::move(ep);
    return Status::Ok();
  }

 private:
  // A dialed stream: its TLS handshake (if any), then its hello.
  struct Outgoing {
    net::Socket socket;
    uint8_t hello[kHelloBytes] = {};
    size_t sent = 0;
  };
  // An accepted stream whose hello is still arriving.
  struct Incoming {
    net::Socket socket;
    uint8_t hello[kHelloBytes] = {};
    size_t got = 0;
    std::chrono::steady_clock::time_point deadline;
  };

  Status ensureListener() {
    if (listener_.valid()) return Status::Ok();
    net::Interface itf;
    BRAID_TRY(net::chooseInterface(&itf).withContext("TCP transport"));
    // Accepted sockets inherit the listener's buffer sizes, which must be set before the
    // handshake to take effect on the window.
    net::Fd fd;
    BRAID_TRY(net::listenOn(itf.address, &fd, &address_).withContext("TCP transport"));
    net::tuneForThroughput(fd.get(), options_.socketBufferBytes);
    listener_ = std::move(fd);
    BRAID_INFO(kNet, "TCP transport listening on %s (%s), %d streams per peer",
               address_.toString().c_str(), itf.name.c_str(), options_.streams);
    return Status::Ok();
  }

  Status dial(const net::SocketAddress& to, uint64_t token, int rank, int stream,
              const Waiter& waiter, Outgoing* out) {
    net::Fd fd;
    BRAID_TRY(net::connectTo(to, waiter, &fd, options_.socketBufferBytes));
    BRAID_TRY(net::Socket::open(std::move(fd), net::Socket::Role::Client, &out->socket));
    tcp::encodeHello({token, static_cast<uint32_t>(rank), static_cast<uint32_t>(stream),
                      static_cast<uint32_t>(options_.streams)},
                     out->hello);
    return Status::Ok();
  }

  // Moves a dialed stream on without waiting: its handshake, then its hello.
  static Status advance(Outgoing& d, bool* moved) {
    if (d.sent == kHelloBytes) return Status::Ok();
    bool done = false;
    BRAID_TRY(d.socket.handshakeStep(&done));
    if (!done) return Status::Ok();
    const ssize_t n = d.socket.send(d.hello + d.sent, kHelloBytes - d.sent);
    if (n > 0) {
      d.sent += static_cast<size_t>(n);
      *moved = true;
      return Status::Ok();
    }
    const int err = errno;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)) return Status::Ok();
    if (err == EPIPE || err == ECONNRESET)
      return remoteError("%s", "the peer closed the connection before the hello");
    return systemError("hello: %s", d.socket.errorText(err).c_str());
  }

  // Sleeps until a dialed stream, the listener or an accepted stream can move, for a short
  // while at most.
  void waitForWork(const std::vector<Outgoing>& dialed) {
    std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
    for (const Outgoing& d : dialed)
      if (d.sent < kHelloBytes) fds.push_back({d.socket.fd(), d.socket.pollEvents(POLLOUT), 0});
    for (const Incoming& c : incoming_)
      fds.push_back({c.socket.fd(), c.socket.pollEvents(POLLIN), 0});
    ::poll(fds.data(), fds.size(), kPollMs);
  }

  // Takes in what waits at the listener and reads the hellos that arrived, without waiting: a
  // whole, valid hello files its stream under the dialer's rank; a bad, refused (TLS) or
  // silent connection is dropped with a warning.
  Status serviceListener(const Waiter& waiter, bool* moved) {
    for (;;) {
      net::Fd fd;
      BRAID_TRY(net::acceptOne(listener_.get(), waiter, 0, &fd));
      if (!fd.valid()) break;
      if (incoming_.size() >= kMaxIncoming) {
        BRAID_WARN("TCP transport: %zu connections without a hello; refusing another",
                   incoming_.size());
        continue;
      }
      Incoming c;
      BRAID_TRY(net::Socket::open(std::move(fd), net::Socket::Role::Server, &c.socket));
      c.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHelloDeadlineMs);
      incoming_.push_back(std::move(c));
      *moved = true;
    }
    const auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < incoming_.size();) {
      Incoming& c = incoming_[i];
      const ssize_t n = c.socket.recv(c.hello + c.got, kHelloBytes - c.got);
      const int err = errno;
      bool keep = true;
      if (n > 0) {
        *moved = true;
        c.got += static_cast<size_t>(n);
        if (c.got == kHelloBytes) {
          file(c);
          keep = false;
        }
      } else if (n == 0) {
        BRAID_WARN("TCP transport: dropped a connection closed after %zu hello bytes", c.got);
        keep = false;
      } else if (err == EPROTO) {
        lastRefusal_ = c.socket.errorText(err);
        BRAID_WARN("TCP transport: refused a connection: %s", lastRefusal_.c_str());
        keep = false;
      } else if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
        BRAID_WARN("TCP transport: dropped a connection: %s", c.socket.errorText(err).c_str());
        keep = false;
      } else if (now >= c.deadline) {
        BRAID_WARN("TCP transport: dropped a connection without a hello within %lld ms",
                   static_cast<long long>(kHelloDeadlineMs));
        keep = false;
      }
      if (keep) {
        ++i;
      } else {
        incoming_.erase(incoming_.begin() + static_cast<long>(i));
      }
    }
    return Status::Ok();
  }

  void file(Incoming& c) {
    tcp::StreamHello h;
    Status st = tcp::decodeHello(c.hello, token_, static_cast<uint32_t>(options_.streams), &h);
    if (!st.ok()) {
      BRAID_WARN("TCP transport: dropped a connection with a bad hello: %s", st.message().c_str());
      return;
    }
    auto& slots = pending_[static_cast<int>(h.rank)];
    slots.resize(options_.streams);
    if (slots[h.stream].valid()) {
      BRAID_WARN("TCP transport: rank %u opened stream %u twice; dropped", h.rank, h.stream);
      return;
    }
    net::tuneForThroughput(c.socket.fd(), options_.socketBufferBytes);
    slots[h.stream] = std::move(c.socket);
  }

  // The peer's streams, once every one of them has arrived.
  bool takeAccepted(int peer, std::vector<net::Socket>* out) {
    auto it = pending_.find(peer);
    if (it == pending_.end()) return false;
    for (const net::Socket& s : it->second)
      if (!s.valid()) return false;
    *out = std::move(it->second);
    pending_.erase(it);
    return true;
  }

  const TcpOptions options_;
  uint64_t token_ = 0;
  std::mutex mu_;
  net::Fd listener_;
  net::SocketAddress address_;
  std::vector<Incoming> incoming_;                   // accepted, hello not yet complete
  std::map<int, std::vector<net::Socket>> pending_;  // accepted ahead of their connect() call
  std::string lastRefusal_;                          // the last connection TLS refused
};

}  // namespace

Status tcpOptionsFromEnv(TcpOptions* out) {
  TcpOptions o;
  const int64_t threads = env::getInt(env::kNcclSocketNthreads);
  const int64_t socks = env::getInt(env::kNcclNsocksPerthread);
  if (threads < 1 || threads > 16)
    return invalidArgument("NCCL_SOCKET_NTHREADS=%lld: must be 1 to 16",
                           static_cast<long long>(threads));
  if (socks < 1 || socks > kMaxStreams)
    return invalidArgument("NCCL_NSOCKS_PERTHREAD=%lld: must be 1 to %d",
                           static_cast<long long>(socks), kMaxStreams);
  if (threads * socks > kMaxStreams)
    return invalidArgument("NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = %lld: at most %d",
                           static_cast<long long>(threads * socks), kMaxStreams);
  const int64_t slice = env::getInt(env::kBraidTcpSliceBytes);
  if (slice < 4096 || slice > (int64_t{1} << 30))
    return invalidArgument("BRAID_TCP_SLICE_BYTES=%lld: must be 4096 to 1 GiB",
                           static_cast<long long>(slice));
  o.streams = static_cast<int>(threads * socks);
  o.sliceBytes = static_cast<size_t>(slice);
  *out = o;
  return Status::Ok();
}

std::unique_ptr<Transport> makeTcpTransport(const TcpOptions& options) {
  TcpOptions o = options;
  o.streams = std::clamp(o.streams, 1, kMaxStreams);
  if (o.sliceBytes == 0) o.sliceBytes = 512 * 1024;
  return std::make_unique<TcpTransport>(o);
}

Status createTcpTransport(std::unique_ptr<Transport>* out) {
  TcpOptions options;
  BRAID_TRY(tcpOptionsFromEnv(&options));
  *out = makeTcpTransport(options);
  return Status::Ok();
}

namespace {
const env::Var* const kTcpVariables[] = {&env::kNcclSocketNthreads, &env::kNcclNsocksPerthread,
                                         &env::kBraidTcpSliceBytes};
}  // namespace

const TransportEntry kTcpTransport = {"tcp", createTcpTransport, kTcpVariables};

}  // namespace braid::transport
