// The bootstrap root and the unique id. The root is one thread that polls every open connection
// at once, so a silent, slow or hostile connection never holds up the real ranks: each gets a
// short deadline for its hello and is dropped (with a warning) when it misbehaves. What a hello
// means is decided by bootstrap::Rendezvous (wire.h); this file only moves bytes. A refused
// hello is answered with the reason before the connection closes, and a refusal that breaks the
// rendezvous (world sizes that disagree, a rank twice, another build) is sent to every rank.
#include "core/bootstrap/bootstrap_root.h"

#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <algorithm>
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
#include "core/bootstrap/wire.h"
#include "core/variables.h"

namespace braid::bootstrap {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kIdAddressOffset = 8;
constexpr size_t kIdUsedBytes = kIdAddressOffset + net::SocketAddress::kWireBytes;
// Connections waiting for their hello beyond this are refused: a flood must not exhaust fds.
constexpr size_t kMaxPending = 256;
// After a failed rendezvous the root stays this long (at most its idle timeout) to tell ranks
// that arrive late why, then exits.
constexpr int64_t kFailedLingerMs = 10000;

std::atomic<int> gLiveRoots{0};
std::atomic<int> gRootsTelling{0};  // roots in this process sending failure notices

struct PendingConn {
  net::Socket fd;
  uint8_t hello[kRootHelloBytes] = {};
  size_t got = 0;
  Clock::time_point deadline;
};

// One best-effort send: a reply is small enough for any socket buffer, and a connection that
// does not take it must not hold up the root.
void sendReply(net::Socket& s, const std::vector<uint8_t>& reply) {
  (void)s.send(reply.data(), reply.size());
}

class Root {
 public:
  Root(net::Fd listener, uint64_t magic, int64_t idleTimeoutMs)
      : listener_(std::move(listener)),
        magic_(magic),
        idleTimeoutMs_(idleTimeoutMs),
        rendezvous_(magic) {}

  void run() {
    auto lastProgress = Clock::now();
    while (!rendezvous_.complete()) {
      std::vector<pollfd> fds;
      fds.push_back({listener_.get(), POLLIN, 0});
      for (PendingConn& c : pending_) fds.push_back({c.fd.fd(), c.fd.pollEvents(POLLIN), 0});
      ::poll(fds.data(), fds.size(), 100);
      if (fds[0].revents & POLLIN) acceptAll();
      const uint32_t before = rendezvous_.arrived();
      const bool failedBefore = rendezvous_.failed();
      readHellos();
      dropExpired();
      if (rendezvous_.arrived() != before) lastProgress = Clock::now();
      if (rendezvous_.failed() && !failedBefore) {
        failAdmitted();
        lastProgress = Clock::now();
      }
      const int64_t limit =
          rendezvous_.failed() ? std::min(idleTimeoutMs_, kFailedLingerMs) : idleTimeoutMs_;
      if (Clock::now() - lastProgress > std::chrono::milliseconds(limit)) {
        if (rendezvous_.failed()) return;
        BRAID_WARN("bootstrap root: %u of %u ranks arrived, none for %lld ms; giving up",
                   rendezvous_.arrived(), rendezvous_.expected(),
                   static_cast<long long>(idleTimeoutMs_));
        if (rendezvous_.expected() > 0) {
          rendezvous_.timeOut(idleTimeoutMs_);
          failAdmitted();
        }
        return;
      }
    }
    sendTables();
  }

 private:
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
      Status st = net::Socket::open(std::move(fd), net::Socket::Role::Server, &c.fd);
      if (!st.ok()) {
        BRAID_WARN("bootstrap root: dropped a connection: %s", st.message().c_str());
        continue;
      }
      c.deadline = Clock::now() + std::chrono::milliseconds(kHelloDeadlineMs);
      pending_.push_back(std::move(c));
    }
  }

  void readHellos() {
    for (size_t i = 0; i < pending_.size();) {
      PendingConn& c = pending_[i];
      ssize_t n = c.fd.recv(c.hello + c.got, kRootHelloBytes - c.got);
      const int err = errno;
      bool keep = true;
      if (n == 0) {
        BRAID_WARN("bootstrap root: connection closed after %zu of %zu hello bytes; dropped", c.got,
                   kRootHelloBytes);
        keep = false;
      } else if (n < 0 && err == EPROTO) {
        // A stranger to the key is dropped like a stranger to the magic; should the ranks then
        // not all arrive, the root's notice names it.
        refusedTls_ = c.fd.errorText(err);
        BRAID_WARN("bootstrap root: refused a connection: %s", refusedTls_.c_str());
        if (c.fd.peerSentPlaintext()) tellPlaintextRank(c.fd.fd());
        keep = false;
      } else if (n < 0) {
        keep = err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
        if (!keep)
          BRAID_WARN("bootstrap root: connection error %s; dropped", c.fd.errorText(err).c_str());
      } else {
        c.got += static_cast<size_t>(n);
        keep = consider(c);
      }
      if (keep) {
        ++i;
      } else {
        pending_.erase(pending_.begin() + static_cast<long>(i));
      }
    }
  }

  // Decides on a connection's hello as far as it has arrived; false once it leaves the
  // pending list (admitted, or refused and answered). The magic is checked as soon as it is in,
  // so strangers are cut off early.
  bool consider(PendingConn& c) {
    RootHello hello;
    Refusal reason{};
    std::string text;
    switch (rendezvous_.inspect(c.hello, c.got, &hello, &reason, &text)) {
      case Rendezvous::Step::NeedMore: return true;
      case Rendezvous::Step::Refuse: refuse(c, reason, text); return false;
      case Rendezvous::Step::Complete: break;
    }
    if (!rendezvous_.admit(hello, &reason, &text)) {
      refuse(c, reason, text);
      return false;
    }
    if (ranks_.empty()) ranks_.resize(rendezvous_.expected());
    ranks_[hello.rank] = std::move(c.fd);
    BRAID_INFO(kBootstrap, "bootstrap root: rank %u/%u arrived from %s", hello.rank, hello.nranks,
               hello.address.toString().c_str());
    return false;
  }

  // A rank without encryption at this encrypted root: its hello is still unread, and it reads
  // plaintext, so it is told why in its own terms.
  void tellPlaintextRank(int fd) {
    uint8_t magic[8];
    if (::recv(fd, magic, sizeof(magic), MSG_DONTWAIT | MSG_PEEK) != sizeof(magic)) return;
    const auto reply = encodeRefusalReply(
        net::getU64(magic), Refusal::Encryption,
        "this rendezvous is encrypted (TLS with a pre-shared key) and this rank is not: set the "
        "same BRAID_TLS_PSK, or call ncclSetEncryption, on every process");
    (void)::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  void refuse(PendingConn& c, Refusal reason, const std::string& text) {
    // A TLS ClientHello (a handshake record, version 3.x) where a hello belongs: that rank
    // encrypts and this root does not. Named if the rendezvous then times out.
    if (reason == Refusal::WrongMagic && !c.fd.encrypted() && c.got >= 3 && c.hello[0] == 0x16 &&
        c.hello[1] == 3)
      refusedTls_ = strfmt("a connection from %s spoke TLS and this root does not encrypt "
                           "(BRAID_TLS_PSK or ncclSetEncryption set on some processes only?)",
                           c.fd.peerName().c_str());
    BRAID_WARN("bootstrap root: %s; refused", text.c_str());
    // The reply carries the sender's own magic, the one thing a rank checks it by.
    if (c.got >= 8) sendReply(c.fd, encodeRefusalReply(net::getU64(c.hello), reason, text));
  }

  // The rendezvous failed: every rank admitted so far hears why, and is let go.
  void failAdmitted() {
    std::string text = rendezvous_.failedNotice();
    if (!refusedTls_.empty() && rendezvous_.failure() == Refusal::Timeout)
      text += "; meanwhile the root refused a connection: " + refusedTls_;
    const Refusal reason =
        rendezvous_.failure() == Refusal::Timeout ? Refusal::Timeout : Refusal::RendezvousFailed;
    BRAID_WARN("bootstrap root: %s", text.c_str());
    const auto reply = encodeRefusalReply(magic_, reason, text);
    gRootsTelling.fetch_add(1);
    for (net::Socket& fd : ranks_)
      if (fd.valid()) sendReply(fd, reply);
    gRootsTelling.fetch_sub(1);
    for (net::Socket& fd : ranks_) fd.reset();
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
    const auto reply = encodeTableReply(magic_, rendezvous_.expected(), rendezvous_.addresses());
    for (uint32_t r = 0; r < rendezvous_.expected(); ++r) {
      Status st =
          net::sendAll(ranks_[r], reply.data(), reply.size(), Waiter(kHelloDeadlineMs, nullptr));
      if (!st.ok()) BRAID_WARN("bootstrap root: rank %u: %s", r, st.message().c_str());
    }
    BRAID_INFO(kBootstrap, "bootstrap root: rendezvous of %u ranks done", rendezvous_.expected());
  }

  net::Fd listener_;
  uint64_t magic_;
  int64_t idleTimeoutMs_;
  Rendezvous rendezvous_;
  std::vector<PendingConn> pending_;
  std::vector<net::Socket> ranks_;  // admitted ranks' connections, by rank
  std::string refusedTls_;          // the last connection TLS refused
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

void awaitFailureNotices(int64_t limitMs) {
  const auto until = Clock::now() + std::chrono::milliseconds(limitMs);
  while (gRootsTelling.load() > 0 && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

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
