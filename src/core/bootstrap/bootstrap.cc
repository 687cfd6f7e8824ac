// Ranks after the rendezvous: a ring (one dialed connection to the next rank, one accepted from
// the previous) carries allGather and barrier; send/recv use one direct connection per ordered
// pair, dialed lazily by the sender. Every connection opens with magic + rank + kind, so a
// stray connection to a rank's listener is recognised and dropped; hellos are read without
// blocking, all pending connections at once, so strangers hold up no rank.
#include "core/bootstrap/bootstrap.h"

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "base/env.h"
#include "base/log.h"
#include "base/net/socket.h"
#include "base/net/tls.h"
#include "core/bootstrap/bootstrap_root.h"
#include "core/bootstrap/wire.h"
#include "core/variables.h"

namespace braid {
namespace {

using bootstrap::ConnKind;
using bootstrap::kMsgHeaderBytes;
using bootstrap::kPeerHelloBytes;
constexpr int kPollMs = 50;

// Connections waiting for their hello beyond this are refused: a flood must not exhaust fds.
constexpr size_t kMaxIncoming = 256;
// How long a rank that hears its rendezvous failed waits for a root in its own process to have
// told the other ranks (a few small sends; the bound only guards against a stuck root).
constexpr int64_t kNoticeWaitMs = 2000;
using Clock = std::chrono::steady_clock;

// An accepted connection whose hello is still arriving.
struct Incoming {
  net::Socket fd;
  uint8_t hello[kPeerHelloBytes] = {};
  size_t got = 0;
  Clock::time_point deadline;
};

struct Unexpected {
  uint64_t tag;
  std::vector<uint8_t> data;
};

class BootstrapImpl final : public Bootstrap {
 public:
  BootstrapImpl(int rank, int nranks, uint64_t magic, int64_t timeoutMs, net::Fd listener,
                std::vector<net::SocketAddress> peers)
      : rank_(rank),
        nranks_(nranks),
        magic_(magic),
        timeoutMs_(timeoutMs),
        listener_(std::move(listener)),
        peers_(std::move(peers)),
        sendConns_(nranks),
        recvConns_(nranks),
        unexpected_(nranks) {}

  ~BootstrapImpl() override {
    stopAcceptor_.store(true);
    if (acceptor_.joinable()) acceptor_.join();
  }

  // With encryption a connection's hello comes after a TLS handshake, which needs this
  // process to answer it, whatever this rank is doing: a thread then takes in connections and
  // their hellos (what the kernel's backlog does for plaintext), so that a peer's dial never
  // waits for this rank's next bootstrap call.
  Status startAcceptor() {
    bool tls = false;
    BRAID_TRY(net::encryptionEnabled(&tls));
    if (!tls) return Status::Ok();
    try {
      acceptor_ = std::thread([this] { acceptLoop(); });
    } catch (const std::exception& e) {
      return systemError("bootstrap: cannot start the accepting thread: %s", e.what());
    }
    return Status::Ok();
  }

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  Status connectRing(const Waiter& waiter) {
    if (nranks_ == 1) return Status::Ok();
    int next = (rank_ + 1) % nranks_, prev = (rank_ + nranks_ - 1) % nranks_;
    // Dialing completes in the peer's backlog, so dial first and accept second: no rank waits
    // on another's progress and the ring closes whatever order ranks get here in.
    BRAID_TRY(dial(next, ConnKind::Ring, waiter, &ringNext_));
    return acceptFrom(prev, ConnKind::Ring, waiter, &ringPrev_);
  }

  Status allGather(void* data, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    return finish(allGatherLocked(data, bytes));
  }

  Status barrier() override {
    std::vector<uint8_t> tokens(nranks_, 1);
    return allGather(tokens.data(), 1).withContext("bootstrap barrier");
  }

  Status send(int peer, uint64_t tag, const void* data, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    return finish(sendLocked(peer, tag, data, bytes));
  }

  Status recv(int peer, uint64_t tag, void* data, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    return finish(recvLocked(peer, tag, data, bytes, opWaiter()));
  }

  Status recvUnless(int peer, uint64_t tag, void* data, size_t bytes, int64_t timeoutMs,
                    uint64_t stopTag, int* stopFrom, std::vector<uint8_t>* stop) override {
    *stopFrom = -1;
    std::lock_guard<std::mutex> lock(mu_);
    return finish(recvUnlessLocked(peer, tag, data, bytes, Waiter(timeoutMs, &aborted_), stopTag,
                                   stopFrom, stop));
  }

  Status poll(uint64_t tag, int* from, std::vector<uint8_t>* data) override {
    *from = -1;
    // Never waits for another operation: a blocking one (a priority class connecting its twin,
    // core/async/engine.h) may hold the bootstrap until other ranks get there, and those may
    // need this rank's executor, which polls, to move first. The next poll looks again.
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock() || aborted_.load()) return Status::Ok();
    if (takeQueued(tag, from, data)) return Status::Ok();
    // A connection that fails here is dropped; its failure shows elsewhere.
    bool took = false;
    BRAID_TRY(takeArrived(-1, &took));
    takeQueued(tag, from, data);
    return Status::Ok();
  }

  void abort() override {
    aborted_.store(true);
    // Closing every connection tells the peers at once. When an operation is running it does
    // this itself on its way out (see finish), as its sockets are in use.
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (lock.owns_lock()) closeAll();
  }

 private:
  Status finish(Status st) {
    if (aborted_.load()) closeAll();
    return st;
  }

  void closeAll() {
    ringNext_.reset();
    ringPrev_.reset();
    for (auto& fd : sendConns_) fd.reset();
    for (auto& fd : recvConns_) fd.reset();
    std::lock_guard<std::mutex> accepting(acceptMu_);
    stash_.clear();
    incoming_.clear();
  }

  Status allGatherLocked(void* data, size_t bytes) {
    if (bytes && !data) return invalidArgument("%s", "bootstrap allGather: null data");
    BRAID_TRY(opWaiter().check("bootstrap allGather"));
    if (nranks_ > 1 && (!ringNext_.valid() || !ringPrev_.valid()))
      return remoteError("bootstrap allGather (rank %d): the ring broke in an earlier call", rank_);
    auto* base = static_cast<uint8_t*>(data);
    for (int step = 0; step < nranks_ - 1; ++step) {
      int sendSlot = (rank_ - step + nranks_) % nranks_;
      int recvSlot = (rank_ - step - 1 + nranks_) % nranks_;
      Status st = exchange(base + sendSlot * bytes, base + recvSlot * bytes, bytes);
      if (!st.ok()) {
        // A half-done step leaves the ring out of step. Closing it also tells the neighbours
        // at once, so a failure spreads round the ring instead of leaving them waiting.
        ringNext_.reset();
        ringPrev_.reset();
        return st.withContext(strfmt("bootstrap allGather step %d (rank %d)", step, rank_));
      }
    }
    return Status::Ok();
  }

  Status sendLocked(int peer, uint64_t tag, const void* data, size_t bytes) {
    if (peer < 0 || peer >= nranks_)
      return invalidArgument("bootstrap send: peer %d of %d", peer, nranks_);
    if (bytes && !data) return invalidArgument("%s", "bootstrap send: null data");
    Waiter w = opWaiter();
    BRAID_TRY(w.check("bootstrap send"));
    if (peer == rank_) {
      const auto* p = static_cast<const uint8_t*>(data);
      unexpected_[peer].push_back({tag, std::vector<uint8_t>(p, p + bytes)});
      return Status::Ok();
    }
    if (!sendConns_[peer].valid()) BRAID_TRY(dial(peer, ConnKind::P2P, w, &sendConns_[peer]));
    uint8_t header[kMsgHeaderBytes];
    bootstrap::encodeMsgHeader(tag, bytes, header);
    Status st = net::sendAll(sendConns_[peer], header, sizeof(header), w);
    if (st.ok()) st = net::sendAll(sendConns_[peer], data, bytes, w);
    if (!st.ok()) sendConns_[peer].reset();  // half a message went out: the stream is unusable
    return st.withContext(
        strfmt("bootstrap send to rank %d tag %llu", peer, static_cast<unsigned long long>(tag)));
  }

  // The first queued message with `tag` from any rank, taken. mu_ held.
  bool takeQueued(uint64_t tag, int* from, std::vector<uint8_t>* data) {
    for (int p = 0; p < nranks_; ++p) {
      auto& queue = unexpected_[p];
      for (auto it = queue.begin(); it != queue.end(); ++it) {
        if (it->tag != tag) continue;
        *data = std::move(it->data);
        queue.erase(it);
        *from = p;
        return true;
      }
    }
    return false;
  }

  // Without waiting for any to arrive: takes in the connections dialed since the last look and
  // queues every whole message waiting on an open one (*took: at least one). A connection that
  // fails is dropped; the failure is returned only for `watched`'s (-1: none). mu_ held.
  Status takeArrived(int watched, bool* took) {
    Waiter w = opWaiter();
    {
      std::lock_guard<std::mutex> accepting(acceptMu_);
      BRAID_TRY(acceptWaiting(w));
      readHellos();
      for (auto it = stash_.begin(); it != stash_.end();) {
        if (it->first.second == ConnKind::P2P && !recvConns_[it->first.first].valid()) {
          recvConns_[it->first.first] = std::move(it->second);
          it = stash_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (int p = 0; p < nranks_; ++p) {
      if (!recvConns_[p].valid()) continue;
      net::Socket& conn = recvConns_[p];
      auto readable = [&conn] {
        if (conn.pending()) return true;
        pollfd pfd{conn.fd(), conn.pollEvents(POLLIN), 0};
        return ::poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLIN | POLLOUT | POLLHUP | POLLERR));
      };
      while (readable()) {
        uint8_t header[kMsgHeaderBytes];
        uint64_t gotTag = 0, gotBytes = 0;
        std::vector<uint8_t> body;
        Status st = net::recvAll(conn, header, sizeof(header), w);
        if (st.ok()) st = bootstrap::decodeMsgHeader(header, &gotTag, &gotBytes);
        if (st.ok()) {
          body.resize(gotBytes);
          st = net::recvAll(conn, body.data(), body.size(), w);
        }
        if (!st.ok()) {
          recvConns_[p].reset();
          if (p == watched) return st.withContext(strfmt("bootstrap recv from rank %d", p));
          break;
        }
        unexpected_[p].push_back({gotTag, std::move(body)});
        *took = true;
      }
    }
    return Status::Ok();
  }

  // Sleeps until a connection or the listener has something, or kPollMs (a connection the
  // accepting thread takes in wakes nobody). mu_ held.
  void awaitArrivals() {
    std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
    for (net::Socket& conn : recvConns_) {
      if (!conn.valid()) continue;
      if (conn.pending()) return;
      fds.push_back({conn.fd(), conn.pollEvents(POLLIN), 0});
    }
    {
      std::lock_guard<std::mutex> accepting(acceptMu_);
      for (const Incoming& c : incoming_) fds.push_back({c.fd.fd(), c.fd.pollEvents(POLLIN), 0});
    }
    ::poll(fds.data(), fds.size(), kPollMs);
  }

  Status recvUnlessLocked(int peer, uint64_t tag, void* data, size_t bytes, Waiter w,
                          uint64_t stopTag, int* stopFrom, std::vector<uint8_t>* stop) {
    BRAID_TRY(checkRecv(peer, data, bytes));
    const std::string what =
        strfmt("bootstrap recv from rank %d tag %llu", peer, static_cast<unsigned long long>(tag));
    for (;;) {
      if (Status st; takeExpected(peer, tag, data, bytes, what, &st)) return st;
      if (takeQueued(stopTag, stopFrom, stop)) return Status::Ok();
      BRAID_TRY(w.check(what.c_str()));
      if (peer == rank_)
        return invalidUsage("%s: nothing was sent to self with that tag", what.c_str());
      bool took = false;
      BRAID_TRY(takeArrived(peer, &took).withContext(what));
      if (!took) awaitArrivals();
    }
  }

  Status checkRecv(int peer, const void* data, size_t bytes) const {
    if (peer < 0 || peer >= nranks_)
      return invalidArgument("bootstrap recv: peer %d of %d", peer, nranks_);
    if (bytes && !data) return invalidArgument("%s", "bootstrap recv: null data");
    return Status::Ok();
  }

  // A queued message from `peer` with `tag`, taken into data (*st: whether its size was the
  // one expected); false where none is queued. mu_ held.
  bool takeExpected(int peer, uint64_t tag, void* data, size_t bytes, const std::string& what,
                    Status* st) {
    auto& queue = unexpected_[peer];
    for (auto it = queue.begin(); it != queue.end(); ++it) {
      if (it->tag != tag) continue;
      *st = sizeCheck(it->data.size(), bytes, what);
      if (st->ok() && bytes) std::memcpy(data, it->data.data(), bytes);
      queue.erase(it);
      return true;
    }
    return false;
  }

  Status recvLocked(int peer, uint64_t tag, void* data, size_t bytes, Waiter w) {
    BRAID_TRY(checkRecv(peer, data, bytes));
    auto what =
        strfmt("bootstrap recv from rank %d tag %llu", peer, static_cast<unsigned long long>(tag));
    BRAID_TRY(w.check(what.c_str()));
    if (Status st; takeExpected(peer, tag, data, bytes, what, &st)) return st;
    if (peer == rank_)
      return invalidUsage("%s: nothing was sent to self with that tag", what.c_str());
    if (!recvConns_[peer].valid())
      BRAID_TRY(acceptFrom(peer, ConnKind::P2P, w, &recvConns_[peer]).withContext(what));
    for (;;) {
      uint8_t header[kMsgHeaderBytes];
      net::Socket& fd = recvConns_[peer];
      uint64_t gotTag = 0, gotBytes = 0;
      Status st = net::recvAll(fd, header, sizeof(header), w);
      if (st.ok()) st = bootstrap::decodeMsgHeader(header, &gotTag, &gotBytes);
      if (st.ok() && gotTag == tag && gotBytes == bytes) st = net::recvAll(fd, data, bytes, w);
      if (st.ok() && gotTag == tag && gotBytes == bytes) return Status::Ok();
      std::vector<uint8_t> body;
      if (st.ok()) {
        body.resize(gotBytes);  // keep the stream in step even when the size is wrong
        st = net::recvAll(fd, body.data(), body.size(), w);
      }
      if (!st.ok()) {
        recvConns_[peer].reset();
        return st.withContext(what);
      }
      if (gotTag == tag) return sizeCheck(gotBytes, bytes, what);
      unexpected_[peer].push_back({gotTag, std::move(body)});
    }
  }

  Waiter opWaiter() const { return Waiter(timeoutMs_, &aborted_); }

  static Status sizeCheck(size_t got, size_t want, const std::string& what) {
    if (got == want) return Status::Ok();
    return internalError("%s: peer sent %zu bytes, receiver expects %zu", what.c_str(), got, want);
  }

  Status dial(int peer, ConnKind kind, const Waiter& waiter, net::Socket* out) {
    net::Socket fd;
    BRAID_TRY(net::connectTo(peers_[peer], waiter, &fd)
                  .withContext(strfmt("bootstrap: rank %d connecting to rank %d (%s)", rank_, peer,
                                      peers_[peer].toString().c_str())));
    uint8_t hello[kPeerHelloBytes];
    bootstrap::encodePeerHello(magic_, static_cast<uint32_t>(rank_), kind, hello);
    BRAID_TRY(net::sendAll(fd, hello, sizeof(hello), waiter));
    *out = std::move(fd);
    return Status::Ok();
  }

  // Accepts until the connection of `kind` from `peer` is in; others are kept for later calls.
  Status acceptFrom(int peer, ConnKind kind, const Waiter& waiter, net::Socket* out) {
    auto key = std::make_pair(peer, kind);
    for (;;) {
      std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
      {
        std::lock_guard<std::mutex> accepting(acceptMu_);
        if (auto it = stash_.find(key); it != stash_.end()) {
          *out = std::move(it->second);
          stash_.erase(it);
          return Status::Ok();
        }
        Status st =
            waiter.check(strfmt("bootstrap: rank %d waiting for rank %d", rank_, peer).c_str());
        if (!st.ok()) {
          if (lastRefusal_.empty()) return st;
          return Status(st.code(), strfmt("%s; meanwhile this rank refused a connection: %s",
                                          st.message().c_str(), lastRefusal_.c_str()));
        }
        for (const Incoming& c : incoming_) fds.push_back({c.fd.fd(), c.fd.pollEvents(POLLIN), 0});
      }
      ::poll(fds.data(), fds.size(), kPollMs);
      std::lock_guard<std::mutex> accepting(acceptMu_);
      BRAID_TRY(acceptWaiting(waiter));
      readHellos();
    }
  }

  // The accepting thread (startAcceptor): what acceptFrom does, for as long as the bootstrap
  // lives.
  void acceptLoop() {
    while (!stopAcceptor_.load()) {
      std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
      {
        std::lock_guard<std::mutex> accepting(acceptMu_);
        for (const Incoming& c : incoming_) fds.push_back({c.fd.fd(), c.fd.pollEvents(POLLIN), 0});
      }
      ::poll(fds.data(), fds.size(), kPollMs);
      if (stopAcceptor_.load() || aborted_.load()) return;
      std::lock_guard<std::mutex> accepting(acceptMu_);
      if (!acceptWaiting(Waiter()).ok()) return;
      readHellos();
    }
  }

  // Takes in every connection waiting in the listener's backlog; its hello is read by
  // readHellos, which never blocks, so a silent or slow stranger holds up nothing.
  // acceptMu_ held.
  Status acceptWaiting(const Waiter& waiter) {
    for (;;) {
      net::Fd fd;
      BRAID_TRY(net::acceptOne(listener_.get(), waiter, 0, &fd));
      if (!fd.valid()) return Status::Ok();
      if (incoming_.size() >= kMaxIncoming) {
        BRAID_WARN("bootstrap: rank %d has %zu connections without a hello; refusing another",
                   rank_, incoming_.size());
        continue;
      }
      Incoming c;
      Status st = net::Socket::open(std::move(fd), net::Socket::Role::Server, &c.fd);
      if (!st.ok()) {
        BRAID_WARN("bootstrap: rank %d dropped a connection: %s", rank_, st.message().c_str());
        continue;
      }
      c.deadline = Clock::now() + std::chrono::milliseconds(bootstrap::kHelloDeadlineMs);
      incoming_.push_back(std::move(c));
    }
  }

  // Reads what has arrived of each new connection's hello without waiting; a whole, valid one
  // moves the connection to the stash. A stray, malformed, closed, refused (TLS) or (after
  // 5 s) silent connection is dropped with a warning. acceptMu_ held.
  void readHellos() {
    const auto now = Clock::now();
    for (size_t i = 0; i < incoming_.size();) {
      Incoming& c = incoming_[i];
      const ssize_t n = c.fd.recv(c.hello + c.got, kPeerHelloBytes - c.got);
      const int err = errno;
      bool keep = true;
      if (n > 0) {
        c.got += static_cast<size_t>(n);
        if (c.got == kPeerHelloBytes) {
          stashHello(c);
          keep = false;
        }
      } else if (n < 0 && err == EPROTO) {
        lastRefusal_ = c.fd.errorText(err);
        BRAID_WARN("bootstrap: rank %d refused a connection: %s", rank_, lastRefusal_.c_str());
        keep = false;
      } else if (n == 0 || (err != EAGAIN && err != EWOULDBLOCK && err != EINTR)) {
        BRAID_WARN("bootstrap: rank %d dropped a connection closed after %zu hello bytes", rank_,
                   c.got);
        keep = false;
      } else if (now >= c.deadline) {
        BRAID_WARN("bootstrap: rank %d dropped a connection without a hello within %lld ms", rank_,
                   static_cast<long long>(bootstrap::kHelloDeadlineMs));
        keep = false;
      }
      if (keep) {
        ++i;
      } else {
        incoming_.erase(incoming_.begin() + static_cast<long>(i));
      }
    }
  }

  void stashHello(Incoming& c) {
    uint32_t from = 0;
    ConnKind k{};
    Status st =
        bootstrap::decodePeerHello(c.hello, magic_, static_cast<uint32_t>(nranks_), &from, &k);
    if (!st.ok()) {
      BRAID_WARN("bootstrap: rank %d dropped a connection with a bad hello: %s", rank_,
                 st.message().c_str());
      return;
    }
    auto fromKey = std::make_pair(static_cast<int>(from), k);
    if (stash_.count(fromKey)) {
      BRAID_WARN("bootstrap: rank %d got a second connection from rank %u; dropped", rank_, from);
      return;
    }
    stash_.emplace(fromKey, std::move(c.fd));
  }

  // One ring step: sends to the next rank while receiving from the previous, so neither side
  // blocks on a full socket buffer. Each message carries its size, checked on arrival.
  Status exchange(const uint8_t* sendBuf, uint8_t* recvBuf, size_t bytes) {
    uint8_t sendHeader[bootstrap::kRingHeaderBytes], recvHeader[bootstrap::kRingHeaderBytes];
    net::putU64(sendHeader, bytes);
    size_t sent = 0, got = 0;
    const size_t total = sizeof(sendHeader) + bytes;
    Waiter w = opWaiter();
    while (sent < total || got < total) {
      bool moved = false;
      if (sent < total) {
        const uint8_t* p = sent < 8 ? sendHeader + sent : sendBuf + (sent - 8);
        size_t len = sent < 8 ? 8 - sent : total - sent;
        ssize_t n = ringNext_.send(p, len);
        if (n > 0) {
          sent += static_cast<size_t>(n);
          moved = true;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
          return remoteError("send to rank %d: %s", (rank_ + 1) % nranks_,
                             ringNext_.errorText(errno).c_str());
      }
      if (got < total) {
        uint8_t* p = got < 8 ? recvHeader + got : recvBuf + (got - 8);
        size_t len = got < 8 ? 8 - got : total - got;
        ssize_t n = ringPrev_.recv(p, len);
        if (n == 0)
          return remoteError("rank %d closed the connection", (rank_ + nranks_ - 1) % nranks_);
        if (n > 0) {
          got += static_cast<size_t>(n);
          moved = true;
          if (got == 8) BRAID_TRY(bootstrap::checkRingHeader(recvHeader, bytes));
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          return remoteError("recv from rank %d: %s", (rank_ + nranks_ - 1) % nranks_,
                             ringPrev_.errorText(errno).c_str());
        }
      }
      if (moved) {
        w.restart();
        continue;
      }
      // A timeout names the neighbour it waits on (silent, or the link to it is).
      if (Status st = w.check("bootstrap ring"); !st.ok())
        return st.withContext(
            got < total
                ? strfmt("awaiting rank %d's part", (rank_ + nranks_ - 1) % nranks_)
                : strfmt("awaiting rank %d to take this rank's part", (rank_ + 1) % nranks_));
      pollfd fds[2] = {{ringNext_.fd(), sent < total ? ringNext_.pollEvents(POLLOUT) : short{0}, 0},
                       {ringPrev_.fd(), got < total ? ringPrev_.pollEvents(POLLIN) : short{0}, 0}};
      ::poll(fds, 2, kPollMs);
    }
    return Status::Ok();
  }

  const int rank_, nranks_;
  const uint64_t magic_;
  const int64_t timeoutMs_;
  std::atomic<bool> aborted_{false};
  std::mutex mu_;  // one operation at a time; abort() is the only call that may overlap
  net::Fd listener_;
  std::vector<net::SocketAddress> peers_;
  net::Socket ringNext_, ringPrev_;
  std::vector<net::Socket> sendConns_, recvConns_;
  std::vector<std::deque<Unexpected>> unexpected_;
  // Connections coming in: taken by operations and, with encryption, by the accepting thread.
  std::mutex acceptMu_;
  std::map<std::pair<int, ConnKind>, net::Socket> stash_;
  std::vector<Incoming> incoming_;  // accepted, hello not yet complete
  std::string lastRefusal_;         // the last connection TLS refused
  std::thread acceptor_;
  std::atomic<bool> stopAcceptor_{false};
};

// Hello to the root, then the table of every rank's listener address, or the root's refusal
// (which names what the root saw: world sizes, a duplicate rank, another build...).
Status rendezvous(const bootstrap::IdContents& id, int rank, int nranks,
                  const net::SocketAddress& self, const Waiter& waiter,
                  std::vector<net::SocketAddress>* peers) {
  net::Socket root;
  BRAID_TRY(net::connectTo(id.root, waiter, &root));
  bootstrap::RootHello ours;
  ours.magic = id.magic;
  ours.rank = static_cast<uint32_t>(rank);
  ours.nranks = static_cast<uint32_t>(nranks);
  ours.address = self;
  uint8_t hello[bootstrap::kRootHelloBytes];
  bootstrap::encodeRootHello(ours, hello);
  BRAID_TRY(net::sendAll(root, hello, sizeof(hello), waiter));
  uint8_t header[bootstrap::kRootReplyHeaderBytes];
  BRAID_TRY(net::recvAll(root, header, sizeof(header), waiter)
                .withContext("waiting for the other ranks"));
  bootstrap::ReplyHeader reply;
  BRAID_TRY(bootstrap::decodeReplyHeader(header, id.magic, ours.nranks, &reply));
  std::vector<uint8_t> body(reply.bodyBytes);
  BRAID_TRY(
      net::recvAll(root, body.data(), body.size(), waiter).withContext("reading the root's reply"));
  if (reply.kind == bootstrap::kReplyRefusal) {
    bootstrap::awaitFailureNotices(kNoticeWaitMs);
    return bootstrap::decodeRefusal(body.data(), body.size());
  }
  return bootstrap::decodeTable(body.data(), body.size(), ours.nranks, peers);
}

}  // namespace

Status Bootstrap::create(const ncclUniqueId& id, int rank, int nranks, bool hostRoot,
                         const Waiter& waiter, std::unique_ptr<Bootstrap>* out) {
  if (!out) return invalidArgument("%s", "bootstrap: out is null");
  if (nranks < 1 || static_cast<uint32_t>(nranks) > bootstrap::kMaxRanks)
    return invalidArgument("bootstrap: nranks %d out of range", nranks);
  if (rank < 0 || rank >= nranks) return invalidArgument("bootstrap: rank %d of %d", rank, nranks);
  bootstrap::IdContents contents;
  BRAID_TRY(bootstrap::decodeUniqueId(id, &contents).withContext("bootstrap"));
  if (hostRoot) {
    net::SocketAddress bound;
    BRAID_TRY(bootstrap::startRoot(contents.root, contents.magic,
                                   env::getInt(env::kBraidBootstrapRootTimeoutMs), &bound));
  }
  net::Interface itf;
  BRAID_TRY(net::chooseInterface(&itf).withContext("bootstrap"));
  net::Fd listener;
  net::SocketAddress self;
  BRAID_TRY(net::listenOn(itf.address, &listener, &self).withContext("bootstrap"));
  BRAID_INFO(kBootstrap, "rank %d/%d: bootstrap listening on %s (%s), root %s", rank, nranks,
             self.toString().c_str(), itf.name.c_str(), contents.root.toString().c_str());
  std::vector<net::SocketAddress> peers;
  BRAID_TRY(rendezvous(contents, rank, nranks, self, waiter, &peers)
                .withContext(
                    strfmt("bootstrap rank %d: root %s", rank, contents.root.toString().c_str())));
  auto impl = std::make_unique<BootstrapImpl>(rank, nranks, contents.magic, waiter.timeoutMs(),
                                              std::move(listener), std::move(peers));
  BRAID_TRY(impl->startAcceptor().withContext(strfmt("bootstrap rank %d", rank)));
  BRAID_TRY(impl->connectRing(waiter).withContext(strfmt("bootstrap rank %d", rank)));
  *out = std::move(impl);
  return Status::Ok();
}

}  // namespace braid
