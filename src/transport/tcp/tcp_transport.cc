// Connection setup. One listener per transport instance serves every peer. For a pair, the
// higher rank dials all streams and the lower rank accepts them: dialing completes in the
// peer's listen backlog, so no rank ever waits on another rank's connect() call. Every socket
// opens with a hello naming the listener's token, the dialer's rank and the stream index;
// sockets accepted for other peers are kept until their connect() call.
#include "transport/tcp/tcp_transport.h"

#include <sys/random.h>

#include <algorithm>
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

    std::vector<TcpEndpoint::StreamFds> streams(options_.streams);
    if (self.rank >= peer.rank) {
      for (int j = 0; j < options_.streams; ++j)
        BRAID_TRY(
            dial(peerAddress, peerToken, self.rank, j, waiter, &streams[j].send).withContext(what));
    }
    if (self.rank <= peer.rank) {
      std::vector<net::Fd> accepted;
      BRAID_TRY(acceptFrom(peer.rank, waiter, &accepted).withContext(what));
      // A connection to self sends on the dialed sockets and receives on the accepted ones.
      for (int j = 0; j < options_.streams; ++j)
        (self.rank == peer.rank ? streams[j].recv : streams[j].send) = std::move(accepted[j]);
    }
    auto ep = std::make_unique<TcpEndpoint>(std::move(streams), options_.sliceBytes, peer.rank);
    BRAID_INFO(kNet, "rank %d: connected to rank %d via %s", self.rank, peer.rank,
               ep->describe().c_str());
    *endpoint = std::move(ep);
    return Status::Ok();
  }

 private:
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
              const Waiter& waiter, net::Fd* out) {
    net::Fd fd;
    BRAID_TRY(net::connectTo(to, waiter, &fd, options_.socketBufferBytes));
    uint8_t hello[kHelloBytes];
    tcp::encodeHello({token, static_cast<uint32_t>(rank), static_cast<uint32_t>(stream),
                      static_cast<uint32_t>(options_.streams)},
                     hello);
    BRAID_TRY(net::sendAll(fd.get(), hello, sizeof(hello), waiter));
    *out = std::move(fd);
    return Status::Ok();
  }

  Status acceptFrom(int peer, const Waiter& waiter, std::vector<net::Fd>* out) {
    for (;;) {
      if (auto it = pending_.find(peer); it != pending_.end()) {
        bool complete = true;
        for (const net::Fd& fd : it->second) complete = complete && fd.valid();
        if (complete) {
          *out = std::move(it->second);
          pending_.erase(it);
          return Status::Ok();
        }
      }
      BRAID_TRY(waiter.check(strfmt("waiting for rank %d's TCP connections", peer).c_str()));
      net::Fd fd;
      BRAID_TRY(net::acceptOne(listener_.get(), waiter, kPollMs, &fd));
      if (!fd.valid()) continue;
      uint8_t hello[kHelloBytes];
      Status st = net::recvAll(fd.get(), hello, sizeof(hello),
                               Waiter(kHelloDeadlineMs, waiter.abortFlag()));
      if (!st.ok()) {
        if (waiter.aborted()) return waiter.check("TCP accept");
        BRAID_WARN("TCP transport: dropped a connection without a hello: %s", st.message().c_str());
        continue;
      }
      tcp::StreamHello h;
      st = tcp::decodeHello(hello, token_, static_cast<uint32_t>(options_.streams), &h);
      if (!st.ok()) {
        BRAID_WARN("TCP transport: dropped a connection with a bad hello: %s",
                   st.message().c_str());
        continue;
      }
      const uint32_t rank = h.rank, stream = h.stream;
      auto& slots = pending_[static_cast<int>(rank)];
      slots.resize(options_.streams);
      if (slots[stream].valid()) {
        BRAID_WARN("TCP transport: rank %u opened stream %u twice; dropped", rank, stream);
        continue;
      }
      net::tuneForThroughput(fd.get(), options_.socketBufferBytes);
      slots[stream] = std::move(fd);
    }
  }

  const TcpOptions options_;
  uint64_t token_ = 0;
  std::mutex mu_;
  net::Fd listener_;
  net::SocketAddress address_;
  std::map<int, std::vector<net::Fd>> pending_;  // accepted ahead of their connect() call
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
