// The bootstrap root and the unique id. The root is one thread that polls every open connection
// at once, so a silent, slow or hostile connection never holds up the real ranks: each gets a
// short deadline for its hello and is dropped (with a warning) when it misbehaves.
#include "core/bootstrap/bootstrap_root.h"

#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "base/env.h"
#include "base/log.h"
#include "core/bootstrap/bootstrap.h"
#include "core/variables.h"

namespace braid::bootstrap {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kIdAddressOffset = 8;
constexpr size_t kIdUsedBytes = kIdAddressOffset + net::SocketAddress::kWireBytes;
// Connections waiting for their hello beyond this are refused: a flood must not exhaust fds.
constexpr size_t kMaxPending = 256;

std::atomic<int> gLiveRoots{0};

struct PendingConn {
  net::Fd fd;
  uint8_t hello[kRootHelloBytes] = {};
  size_t got = 0;
  Clock::time_point deadline;
};

class Root {
 public:
  Root(net::Fd listener, uint64_t magic, int64_t idleTimeoutMs)
      : listener_(std::move(listener)), magic_(magic), idleTimeoutMs_(idleTimeoutMs) {}

  void run() {
    auto lastProgress = Clock::now();
    while (!done()) {
      std::vector<pollfd> fds;
      fds.push_back({listener_.get(), POLLIN, 0});
      for (PendingConn& c : pending_) fds.push_back({c.fd.get(), POLLIN, 0});
      ::poll(fds.data(), fds.size(), 100);
      if (fds[0].revents & POLLIN) acceptAll();
      size_t before = arrived_;
      readHellos();
      dropExpired();
      if (arrived_ != before) lastProgress = Clock::now();
      if (Clock::now() - lastProgress > std::chrono::milliseconds(idleTimeoutMs_)) {
        BRAID_WARN("bootstrap root: %zu of %d ranks arrived, none for %lld ms; giving up", arrived_,
                   expected_, static_cast<long long>(idleTimeoutMs_));
        return;
      }
    }
    sendTables();
  }

 private:
  bool done() const { return expected_ > 0 && arrived_ == static_cast<size_t>(expected_); }

  void acceptAll() {
    for (;;) {
      int s = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (s < 0) return;
      net::Fd fd(s);
      if (pending_.size() >= kMaxPending) {
        BRAID_WARN("bootstrap root: %zu connections without a hello; refusing another",
                   pending_.size());
        continue;
      }
      PendingConn c;
      c.fd = std::move(fd);
      c.deadline = Clock::now() + std::chrono::milliseconds(kHelloDeadlineMs);
      pending_.push_back(std::move(c));
    }
  }

  void readHellos() {
    for (size_t i = 0; i < pending_.size();) {
      PendingConn& c = pending_[i];
      ssize_t n = ::recv(c.fd.get(), c.hello + c.got, kRootHelloBytes - c.got, MSG_DONTWAIT);
      bool keep = true;
      if (n == 0) {
        BRAID_WARN("bootstrap root: connection closed after %zu of %zu hello bytes; dropped", c.got,
                   kRootHelloBytes);
        keep = false;
      } else if (n < 0) {
        keep = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        if (!keep) BRAID_WARN("bootstrap root: connection error %s; dropped", std::strerror(errno));
      } else {
        c.got += static_cast<size_t>(n);
        // Check the magic as soon as it is in, so strangers are cut off early.
        if (c.got >= 8 && net::getU64(c.hello) != magic_) {
          BRAID_WARN("bootstrap root: connection with wrong magic 0x%016llx; dropped",
                     static_cast<unsigned long long>(net::getU64(c.hello)));
          keep = false;
        } else if (c.got == kRootHelloBytes) {
          admit(c);
          keep = false;  // admitted or rejected: either way it leaves the pending list
        }
      }
      if (keep) {
        ++i;
      } else {
        pending_.erase(pending_.begin() + static_cast<long>(i));
      }
    }
  }

  void admit(PendingConn& c) {
    uint32_t rank = net::getU32(c.hello + 8);
    uint32_t nranks = net::getU32(c.hello + 12);
    net::SocketAddress addr;
    Status st = net::SocketAddress::fromWire(c.hello + 16, &addr);
    if (!st.ok() || addr.port() == 0) {
      BRAID_WARN("bootstrap root: hello from rank %u with a bad address; dropped", rank);
      return;
    }
    if (nranks == 0 || nranks > kMaxRanks || rank >= nranks) {
      BRAID_WARN("bootstrap root: hello with rank %u of nranks %u is out of range; dropped", rank,
                 nranks);
      return;
    }
    if (expected_ > 0 && nranks != static_cast<uint32_t>(expected_)) {
      BRAID_WARN("bootstrap root: rank %u says nranks %u, earlier ranks said %d; dropped", rank,
                 nranks, expected_);
      return;
    }
    if (expected_ < 0) {
      expected_ = static_cast<int>(nranks);
      ranks_.resize(nranks);
      addrs_.assign(nranks * net::SocketAddress::kWireBytes, 0);
    }
    if (ranks_[rank].valid()) {
      BRAID_WARN("bootstrap root: rank %u arrived twice; the second connection is dropped", rank);
      return;
    }
    ranks_[rank] = std::move(c.fd);
    std::memcpy(addrs_.data() + rank * net::SocketAddress::kWireBytes, c.hello + 16,
                net::SocketAddress::kWireBytes);
    ++arrived_;
    BRAID_INFO(kBootstrap, "bootstrap root: rank %u/%u arrived from %s", rank, nranks,
               addr.toString().c_str());
  }

  void dropExpired() {
    auto now = Clock::now();
    for (size_t i = 0; i < pending_.size();) {
      if (now >= pending_[i].deadline) {
        BRAID_WARN("bootstrap root: no complete hello within %lld ms (%zu bytes); dropped",
                   static_cast<long long>(kHelloDeadlineMs), pending_[i].got);
        pending_.erase(pending_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }

  void sendTables() {
    std::vector<uint8_t> reply(kRootReplyHeaderBytes + addrs_.size());
    net::putU64(reply.data(), magic_);
    net::putU32(reply.data() + 8, static_cast<uint32_t>(expected_));
    std::memcpy(reply.data() + kRootReplyHeaderBytes, addrs_.data(), addrs_.size());
    for (int r = 0; r < expected_; ++r) {
      Status st = net::sendAll(ranks_[r].get(), reply.data(), reply.size(),
                               Waiter(kHelloDeadlineMs, nullptr));
      if (!st.ok()) BRAID_WARN("bootstrap root: rank %d: %s", r, st.message().c_str());
    }
    BRAID_INFO(kBootstrap, "bootstrap root: rendezvous of %d ranks done", expected_);
  }

  net::Fd listener_;
  uint64_t magic_;
  int64_t idleTimeoutMs_;
  std::vector<PendingConn> pending_;
  std::vector<net::Fd> ranks_;
  std::vector<uint8_t> addrs_;
  int expected_ = -1;
  size_t arrived_ = 0;
};

uint64_t randomMagic() {
  uint64_t magic = 0;
  while (magic == 0) {
    if (getrandom(&magic, sizeof(magic), 0) != sizeof(magic)) {
      std::random_device rd;
      magic = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    }
  }
  return magic;
}

// FNV-1a: every process derives the same magic from the same NCCL_COMM_ID text.
uint64_t hashString(const char* s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; ++s) h = (h ^ static_cast<uint8_t>(*s)) * 0x100000001b3ull;
  return h ? h : 1;
}

}  // namespace

Status decodeUniqueId(const ncclUniqueId& id, IdContents* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(id.internal);
  out->magic = net::getU64(p);
  if (out->magic == 0) return invalidArgument("%s", "unique id has no magic (all zero?)");
  BRAID_TRY(net::SocketAddress::fromWire(p + kIdAddressOffset, &out->root)
                .withContext("unique id root address"));
  if (out->root.port() == 0) return invalidArgument("%s", "unique id root address has port 0");
  for (size_t i = kIdUsedBytes; i < NCCL_UNIQUE_ID_BYTES; ++i)
    if (p[i]) return invalidArgument("unique id has non-zero padding at byte %zu", i);
  return Status::Ok();
}

void encodeUniqueId(const IdContents& in, ncclUniqueId* id) {
  std::memset(id, 0, sizeof(*id));
  auto* p = reinterpret_cast<uint8_t*>(id->internal);
  net::putU64(p, in.magic);
  in.root.toWire(p + kIdAddressOffset);
}

Status startRoot(const net::SocketAddress& addr, uint64_t magic, int64_t idleTimeoutMs,
                 net::SocketAddress* bound) {
  net::Fd listener;
  BRAID_TRY(net::listenOn(addr, &listener, bound).withContext("bootstrap root"));
  auto root = std::make_shared<Root>(std::move(listener), magic, idleTimeoutMs);
  gLiveRoots.fetch_add(1);
  try {
    std::thread([root] {
      root->run();
      gLiveRoots.fetch_sub(1);
    }).detach();
  } catch (const std::exception& e) {
    gLiveRoots.fetch_sub(1);
    return systemError("bootstrap root: cannot start thread: %s", e.what());
  }
  BRAID_INFO(kBootstrap, "bootstrap root listening on %s", bound->toString().c_str());
  return Status::Ok();
}

int liveRoots() { return gLiveRoots.load(); }

}  // namespace braid::bootstrap

namespace braid {

Status createUniqueId(ncclUniqueId* id) {
  if (!id) return invalidArgument("%s", "createUniqueId: id is null");
  net::Interface itf;
  BRAID_TRY(net::chooseInterface(&itf).withContext("ncclGetUniqueId"));
  bootstrap::IdContents contents;
  contents.magic = bootstrap::randomMagic();
  BRAID_TRY(bootstrap::startRoot(itf.address, contents.magic,
                                 env::getInt(env::kBraidBootstrapRootTimeoutMs), &contents.root));
  bootstrap::encodeUniqueId(contents, id);
  return Status::Ok();
}

Status uniqueIdFromCommId(const char* hostPort, ncclUniqueId* id) {
  if (!hostPort || !id) return invalidArgument("%s", "NCCL_COMM_ID: null argument");
  bootstrap::IdContents contents;
  BRAID_TRY(net::SocketAddress::parse(hostPort, &contents.root).withContext("NCCL_COMM_ID"));
  if (contents.root.port() == 0) return invalidArgument("NCCL_COMM_ID=%s: port 0", hostPort);
  contents.magic = bootstrap::hashString(hostPort);
  bootstrap::encodeUniqueId(contents, id);
  return Status::Ok();
}

Status validateUniqueId(const ncclUniqueId& id) {
  bootstrap::IdContents contents;
  return bootstrap::decodeUniqueId(id, &contents).withContext("invalid ncclUniqueId");
}

std::string describeUniqueId(const ncclUniqueId& id) {
  bootstrap::IdContents contents;
  Status st = bootstrap::decodeUniqueId(id, &contents);
  if (!st.ok()) return "invalid id (" + st.message() + ")";
  return strfmt("magic 0x%016llx root %s", static_cast<unsigned long long>(contents.magic),
                contents.root.toString().c_str());
}

}  // namespace braid
