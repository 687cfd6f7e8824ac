#include "transport/loopback/loopback_transport.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "base/env.h"
#include "base/log.h"
#include "transport/shm/ring_endpoint.h"
#include "transport/shm/shm_transport.h"

namespace braid::env {
const Var kBraidLoopbackDirectMinBytes = {
    "BRAID_LOOPBACK_DIRECT_MIN_BYTES", "16384",
    "between threads, messages from this size are copied once, sender buffer to receiver buffer; "
    "smaller ones go through the ring (0: always the ring)"};
}  // namespace braid::env

namespace braid::transport {
namespace {

constexpr uint64_t kBlobMagic = 0x62726169644f4f50ull;

struct LoopbackBlob {
  uint64_t magic;
  uint64_t token;  // key in the registry
  int64_t pid;     // a blob from another process cannot name our memory
};

// One direction: the ring and the lock that keeps a closing sender's buffers alive while the
// receiver copies from them.
struct Channel {
  Segment memory;
  std::mutex directLock;
};

// Process-wide: listen() registers the ring it will consume from, the peer's connect() takes it.
class Registry {
 public:
  static Registry& get() {
    static Registry* r = new Registry();  // never destroyed: threads may outlive static teardown
    return *r;
  }
  uint64_t add(std::shared_ptr<Channel> ch) {
    std::lock_guard<std::mutex> g(mu_);
    uint64_t token = (next_++ << 16) ^ salt_;
    map_[token] = std::move(ch);
    return token;
  }
  std::shared_ptr<Channel> take(uint64_t token) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(token);
    if (it == map_.end()) return nullptr;
    auto ch = std::move(it->second);
    map_.erase(it);
    return ch;
  }

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Channel>> map_;
  uint64_t next_ = 1;
  const uint64_t salt_ = reinterpret_cast<uint64_t>(this);
};

class ThreadPeer final : public PeerAccess {
 public:
  Status read(uint64_t addr, void* dst, size_t n) override {
    std::memcpy(dst, reinterpret_cast<const void*>(addr), n);
    return Status::Ok();
  }
  const void* local(uint64_t addr) override { return reinterpret_cast<const void*>(addr); }
  std::string describe() const override { return "a thread of this process"; }
};

class LoopbackTransport final : public Transport {
 public:
  ~LoopbackTransport() override {
    // Listens no peer claimed (an aborted setup) must not stay in the registry.
    for (auto& [rank, pending] : listens_) Registry::get().take(pending.token);
  }

  std::string_view name() const override { return "LOOPBACK"; }

  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return self.processHash == peer.processHash;
  }

  // The rings of shared memory between threads: priced as shared memory.
  LinkCost linkCost() const override { return kShmLinkCost; }

  Status listen(const PeerInfo& self, const PeerInfo& peer, Blob* handle) override {
    return noThrow("LOOPBACK listen", [&] { return listenImpl(self, peer, handle); });
  }
  Status connect(const PeerInfo& self, const PeerInfo& peer, const Blob& peerHandle,
                 const Waiter& waiter, std::unique_ptr<Endpoint>* endpoint) override {
    return noThrow("LOOPBACK connect",
                   [&] { return connectImpl(self, peer, peerHandle, endpoint); });
  }

 private:
  Status listenImpl(const PeerInfo& self, const PeerInfo& peer, Blob* handle) {
    if (listens_.count(peer.rank))
      return invalidUsage("LOOPBACK listen: rank %d already has a pending listen for rank %d",
                          self.rank, peer.rank);
    const size_t capacity = Ring::roundCapacity(
        static_cast<size_t>(std::max<int64_t>(0, env::getInt(env::kBraidShmBuffsize))));
    auto ch = std::make_shared<Channel>();
    BRAID_TRY(
        Segment::anonymous(Ring::bytesFor(capacity), &ch->memory).withContext("LOOPBACK listen"));
    Ring ring;
    BRAID_TRY(Ring::init(ch->memory.data(), ch->memory.size(), capacity, &ring));
    ring.ctl()->directOk.store(Ring::kDirectYes, std::memory_order_relaxed);
    LoopbackBlob blob{kBlobMagic, Registry::get().add(ch), static_cast<int64_t>(getpid())};
    handle->assign(reinterpret_cast<const uint8_t*>(&blob),
                   reinterpret_cast<const uint8_t*>(&blob) + sizeof blob);
    listens_[peer.rank] = Pending{ch, blob.token};
    return Status::Ok();
  }

  // Needs nothing from the peer beyond its handle, so it never waits.
  Status connectImpl(const PeerInfo& self, const PeerInfo& peer, const Blob& peerHandle,
                     std::unique_ptr<Endpoint>* endpoint) {
    LoopbackBlob blob;
    if (peerHandle.size() != sizeof blob)
      return invalidArgument("LOOPBACK connect: rank %d's handle has %zu bytes, expected %zu",
                             peer.rank, peerHandle.size(), sizeof blob);
    std::memcpy(&blob, peerHandle.data(), sizeof blob);
    if (blob.magic != kBlobMagic || blob.pid != static_cast<int64_t>(getpid()))
      return invalidArgument(
          "LOOPBACK connect: rank %d's handle is not a loopback handle of this process", peer.rank);
    auto it = listens_.find(peer.rank);
    if (it == listens_.end())
      return invalidUsage("LOOPBACK connect: rank %d connects to rank %d without listening first",
                          self.rank, peer.rank);
    std::shared_ptr<Channel> tx = Registry::get().take(blob.token);
    if (!tx)
      return invalidUsage(
          "LOOPBACK connect: rank %d's ring is unknown (already connected, or its transport is "
          "gone)",
          peer.rank);
    std::shared_ptr<Channel> rx = it->second.channel;

    RingEndpointConfig config;
    // Aliasing pointers: the endpoint holds each channel alive through its parts.
    config.txMemory = std::shared_ptr<Segment>(tx, &tx->memory);
    config.rxMemory = std::shared_ptr<Segment>(rx, &rx->memory);
    config.txDirectLock = std::shared_ptr<std::mutex>(tx, &tx->directLock);
    config.rxDirectLock = std::shared_ptr<std::mutex>(rx, &rx->directLock);
    config.peer = std::make_unique<ThreadPeer>();
    const int64_t directMin = env::getInt(env::kBraidLoopbackDirectMinBytes);
    config.directMinBytes = directMin > 0 ? static_cast<size_t>(directMin) : 0;
    config.name = "LOOPBACK";
    BRAID_TRY(RingEndpoint::create(std::move(config), endpoint).withContext("LOOPBACK connect"));
    listens_.erase(it);
    BRAID_INFO(kInit, "LOOPBACK: rank %d connected to rank %d: %s", self.rank, peer.rank,
               (*endpoint)->describe().c_str());
    return Status::Ok();
  }

 private:
  struct Pending {
    std::shared_ptr<Channel> channel;
    uint64_t token;
  };
  std::map<int, Pending> listens_;  // by peer rank, until connect
};

}  // namespace

std::unique_ptr<Transport> makeLoopbackTransport() { return std::make_unique<LoopbackTransport>(); }

namespace {
const env::Var* const kLoopbackVariables[] = {&env::kBraidShmBuffsize,
                                              &env::kBraidLoopbackDirectMinBytes};
}  // namespace

const TransportEntry kLoopbackTransport = {"loopback",
                                           [](std::unique_ptr<Transport>* out) {
                                             *out = makeLoopbackTransport();
                                             return Status::Ok();
                                           },
                                           kLoopbackVariables};

}  // namespace braid::transport
