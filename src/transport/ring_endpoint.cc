#include "transport/ring_endpoint.h"

#include <algorithm>
#include <exception>

#include "core/log.h"

namespace braid::transport {
namespace {

// Every message starts with a record header at a 16-byte aligned ring position. A data record's
// payload follows it (wrapping at the ring's end); a direct record carries a descriptor instead.
enum : uint32_t { kData = 0x44415441, kDirect = 0x44495245 };  // "DATA", "DIRE"
struct RecordHeader {
  uint32_t kind;
  uint32_t reserved;
  uint64_t bytes;
};
struct DirectDescriptor {
  uint64_t addr;  // in the sender's address space
  uint64_t seq;   // 1, 2, ...: the consumer acknowledges by publishing it in directDone
};
static_assert(sizeof(RecordHeader) == Ring::kAlign && sizeof(DirectDescriptor) == Ring::kAlign);

// Bytes copied before publishing them, so that a large message streams through the ring in
// pieces the consumer can start on while the producer copies the next one.
constexpr size_t kPublishSlice = 256 << 10;
// At most this much direct copying per progress() call, so that one large message cannot starve
// the caller's other endpoints.
constexpr size_t kDirectBudget = 4 << 20;
// Direct data bound for a sink in another process lands here first; small enough to stay in L2.
constexpr size_t kBounceBytes = 256 << 10;
// How often a waiting endpoint asks whether the peer is still there.
constexpr auto kPeerCheckInterval = std::chrono::milliseconds(50);

}  // namespace

RingEndpoint::RingEndpoint(RingEndpointConfig config) : config_(std::move(config)) {}

Status RingEndpoint::create(RingEndpointConfig config, std::unique_ptr<Endpoint>* out) {
  if (!config.txMemory || !config.rxMemory || !config.peer)
    return {ncclInternalError, "ring endpoint needs two rings and a peer"};
  Ring tx, rx;
  BRAID_TRY(Ring::attach(config.txMemory->data(), config.txMemory->size(), &tx));
  BRAID_TRY(Ring::attach(config.rxMemory->data(), config.rxMemory->size(), &rx));
  std::unique_ptr<RingEndpoint> ep(new (std::nothrow) RingEndpoint(std::move(config)));
  if (!ep) return {ncclSystemError, "out of memory creating a ring endpoint"};
  ep->tx_ = RingWriter(tx);
  ep->rx_ = RingReader(rx);
  ep->lastCheck_ = std::chrono::steady_clock::now();
  *out = std::move(ep);
  return Status::Ok();
}

RingEndpoint::~RingEndpoint() {
  {
    std::unique_lock<std::mutex> lock;
    if (config_.txDirectLock) lock = std::unique_lock<std::mutex>(*config_.txDirectLock);
    tx_.ring().ctl()->producerClosed.store(1, std::memory_order_release);
  }
  rx_.ring().ctl()->consumerClosed.store(1, std::memory_order_release);
}

std::string RingEndpoint::describe() const {
  std::string s = strfmt("%s/ring %llu KiB to %s", config_.name.c_str(),
                         static_cast<unsigned long long>(tx_.ring().capacity() >> 10),
                         config_.peer->describe().c_str());
  if (config_.directMinBytes)
    s += strfmt(", direct from %zu bytes%s", config_.directMinBytes,
                tx_.ring().ctl()->directOk.load(std::memory_order_relaxed) == Ring::kDirectYes
                    ? "" : " (not available)");
  return s;
}

Status RingEndpoint::fail(Status st) {
  if (error_.ok()) {
    error_ = st.withContext(config_.name);
    BRAID_INFO(kShm, "%s", error_.message().c_str());
  }
  return error_;
}

Status RingEndpoint::postSend(const void* data, size_t bytes) {
  if (!error_.ok()) return error_;
  if (!data && bytes) return invalidArgument("%s postSend: null buffer for %zu bytes", config_.name.c_str(), bytes);
  sends_.push_back(SendOp{static_cast<const char*>(data), bytes});
  return Status::Ok();
}

Status RingEndpoint::postRecv(void* data, size_t bytes, RecvSink* sink) {
  if (!error_.ok()) return error_;
  if (!data && !sink && bytes)
    return invalidArgument("%s postRecv: null buffer and no sink for %zu bytes", config_.name.c_str(), bytes);
  recvs_.push_back(RecvOp{static_cast<char*>(data), bytes, sink});
  return Status::Ok();
}

Status RingEndpoint::progress() {
  if (!error_.ok()) return error_;
  if (!busy()) return Status::Ok();
  try {
    // Loaded before moving data: whatever the peer published before closing is then seen below.
    const bool peerClosed = rx_.ring().ctl()->producerClosed.load(std::memory_order_acquire) ||
                            tx_.ring().ctl()->consumerClosed.load(std::memory_order_acquire);
    bool moved = pumpSends();
    BRAID_TRY(pumpRecvs(&moved));
    if (moved) {
      idleSpins_ = 0;
      return Status::Ok();
    }
    return busy() ? idle(peerClosed) : Status::Ok();
  } catch (const std::exception& e) {
    return fail(internalError("progress: %s", e.what()));
  } catch (...) {
    return fail({ncclInternalError, "progress: unknown exception"});
  }
}

Status RingEndpoint::idle(bool peerClosed) {
  if (peerClosed)
    return fail(remoteError("peer closed the connection with %zu sends and %zu receives pending",
                            sends_.size(), recvs_.size()));
  // Reading the clock on every idle spin would slow the spinning caller; every 256th is enough.
  if ((++idleSpins_ & 255) != 0) return Status::Ok();
  auto now = std::chrono::steady_clock::now();
  if (now - lastCheck_ < kPeerCheckInterval) return Status::Ok();
  lastCheck_ = now;
  if (config_.peer->gone())
    return fail(remoteError("peer %s is gone with %zu sends and %zu receives pending",
                            config_.peer->describe().c_str(), sends_.size(), recvs_.size()));
  return Status::Ok();
}

bool RingEndpoint::pumpSends() {
  bool moved = false;
  RingControl* ctl = tx_.ring().ctl();
  while (sendCursor_ < sends_.size()) {
    SendOp& op = sends_[sendCursor_];
    if (!op.headerDone) {
      const uint64_t start = alignUp(tx_.position());
      const bool direct = config_.directMinBytes && op.bytes >= config_.directMinBytes &&
                          ctl->directOk.load(std::memory_order_relaxed) == Ring::kDirectYes;
      const size_t need = (start - tx_.position()) + sizeof(RecordHeader) +
                          (direct ? sizeof(DirectDescriptor) : 0);
      if (tx_.writable() < need) break;
      tx_.skipTo(start);
      RecordHeader h{direct ? kDirect : kData, 0, op.bytes};
      tx_.write(&h, sizeof h);
      op.headerDone = true;
      moved = true;
      if (direct) {
        DirectDescriptor d{reinterpret_cast<uint64_t>(op.data), ++directPosted_};
        tx_.write(&d, sizeof d);
        op.directSeq = d.seq;
        op.written = op.bytes;
      }
    }
    while (op.written < op.bytes) {
      size_t n = std::min({tx_.writable(), op.bytes - op.written, kPublishSlice});
      if (n == 0) break;
      tx_.write(op.data + op.written, n);
      op.written += n;
      if (op.written < op.bytes) tx_.publish();
    }
    tx_.publish();
    if (op.written < op.bytes) break;
    ++sendCursor_;
  }
  // Sends complete in order: a copied one at once, a direct one when the consumer acknowledged it.
  if (directAckSeen_ < directPosted_) directAckSeen_ = ctl->directDone.load(std::memory_order_acquire);
  while (sendCursor_ > 0) {
    const SendOp& op = sends_.front();
    if (op.directSeq > directAckSeen_) break;
    sends_.pop_front();
    --sendCursor_;
    ++sendsDone_;
    moved = true;
  }
  return moved;
}

Status RingEndpoint::pumpRecvs(bool* moved) {
  while (!recvs_.empty()) {
    RecvOp& op = recvs_.front();
    if (!op.headerDone) {
      const uint64_t start = alignUp(rx_.position());
      const size_t pad = start - rx_.position();
      size_t avail = rx_.readable();
      if (avail < pad + sizeof(RecordHeader) && (avail = rx_.refresh()) < pad + sizeof(RecordHeader)) break;
      RecordHeader h;
      rx_.ring().copyOut(start, &h, sizeof h);
      if (h.kind != kData && h.kind != kDirect)
        return fail(systemError("corrupt ring: record kind %#x at position %llu", h.kind,
                                static_cast<unsigned long long>(start)));
      if (h.bytes != op.bytes)
        return fail(invalidUsage("size mismatch: the peer sent %llu bytes to a receive of %zu bytes",
                                 static_cast<unsigned long long>(h.bytes), op.bytes));
      size_t recordBytes = sizeof h;
      if (h.kind == kDirect) {
        DirectDescriptor d;
        if (avail < pad + sizeof h + sizeof d) return fail({ncclSystemError, "corrupt ring: truncated direct record"});
        rx_.ring().copyOut(start + sizeof h, &d, sizeof d);
        if (d.seq != directAcked_ + 1)
          return fail(systemError("corrupt ring: direct transfer %llu, expected %llu",
                                  static_cast<unsigned long long>(d.seq),
                                  static_cast<unsigned long long>(directAcked_ + 1)));
        op.direct = true;
        op.directAddr = d.addr;
        recordBytes += sizeof d;
      }
      rx_.skipTo(start + recordBytes);
      // A payload's release covers its header too: one store less per small message.
      if (h.kind == kDirect || h.bytes == 0) rx_.release();
      op.headerDone = true;
      *moved = true;
    }
    if (op.direct) {
      BRAID_TRY(directRecv(op, moved));
      if (op.received < op.bytes) break;
      rx_.ring().ctl()->directDone.store(++directAcked_, std::memory_order_release);
    } else {
      while (op.received < op.bytes) {
        size_t n = std::min(rx_.readable(), op.bytes - op.received);
        if (n == 0) break;
        if (op.sink) {
          rx_.visit(n, [&](const void* p, size_t len) {
            op.sink->consume(op.received, p, len);
            op.received += len;
          });
          rx_.skip(n);
        } else {
          rx_.read(op.data + op.received, n);
          op.received += n;
        }
        rx_.release();
        *moved = true;
      }
      if (op.received < op.bytes) break;
    }
    recvs_.pop_front();
    ++recvsDone_;
    *moved = true;
  }
  return Status::Ok();
}

Status RingEndpoint::directRecv(RecvOp& op, bool* moved) {
  std::unique_lock<std::mutex> lock;
  if (config_.rxDirectLock) lock = std::unique_lock<std::mutex>(*config_.rxDirectLock);
  RingControl* ctl = rx_.ring().ctl();
  // A closed producer may have reused the buffer: no read from it may be trusted any more.
  auto producerLeft = [&] { return ctl->producerClosed.load(std::memory_order_acquire) != 0; };
  const Status left{ncclRemoteError, "peer closed the connection during a direct transfer"};
  if (producerLeft()) return fail(left);
  size_t budget = kDirectBudget;
  while (op.received < op.bytes && budget) {
    size_t n = std::min(op.bytes - op.received, budget);
    const uint64_t addr = op.directAddr + op.received;
    if (!op.sink) {
      Status st = config_.peer->read(addr, op.data + op.received, n);
      if (!st.ok()) return fail(st);
    } else if (const void* p = config_.peer->local(addr)) {
      op.sink->consume(op.received, p, n);
    } else {
      if (bounce_.empty()) bounce_.resize(kBounceBytes);
      n = std::min(n, kBounceBytes);
      Status st = config_.peer->read(addr, bounce_.data(), n);
      if (!st.ok()) return fail(st);
      if (producerLeft()) return fail(left);
      op.sink->consume(op.received, bounce_.data(), n);
    }
    op.received += n;
    budget -= n;
    *moved = true;
  }
  if (producerLeft()) return fail(left);
  return Status::Ok();
}

}  // namespace braid::transport
