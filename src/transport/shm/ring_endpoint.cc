#include "transport/shm/ring_endpoint.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "base/log.h"
#include "kernels/reduce.h"
#include "transport/wait.h"

namespace braid::transport {
namespace {

// Every message starts with a record header at a 16-byte aligned ring position (see ring.h for
// the stamp that publishes it). Its word holds the kind, whether the payload was written before
// the stamp (so the consumer needs no head load for it), and the payload size. A data record's
// payload follows the header (wrapping at the ring's end); a direct record carries a descriptor.
enum : uint64_t { kData = 1, kDirect = 2 };
constexpr uint64_t kWhole = uint64_t{1} << 55;
constexpr uint64_t kBytesMask = (uint64_t{1} << 48) - 1;
uint64_t headerWord(uint64_t kind, bool whole, uint64_t bytes) {
  return kind << 56 | (whole ? kWhole : 0) | bytes;
}
struct DirectDescriptor {
  uint64_t addr;  // in the sender's address space
  uint64_t seq;   // 1, 2, ...: the consumer acknowledges by publishing it in directDone
  // The registered memory the buffer lies in (id 0: none): the consumer maps it instead of
  // reading through the kernel.
  uint64_t handleId, handleBase, handleSize;
  int64_t handleKey;
};
constexpr size_t kHeaderBytes = 16;
static_assert(sizeof(DirectDescriptor) % Ring::kAlign == 0);

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

// Messages this large, and those the caller marks `streamed`, are written to their destination
// with non-temporal stores: they cannot stay in the cache anyway, and skipping the
// read-for-ownership of every destination line takes a third off the memory traffic of the copy
// out of the ring (measured: +5-10% at 64-256 MiB, both one way and both ways at once).
constexpr size_t kStreamMinBytes = 8 << 20;

// Whole records with at most this much payload (direct descriptors too) are stamped in batches.
constexpr size_t kBatchMaxBytes = 256;

// Stamps of records written but not yet published, applied in reverse order.
class StampBatch {
 public:
  bool full() const { return n_ == kMax; }
  void add(uint64_t pos, uint64_t word) { pending_[n_++] = {pos, word}; }
  void flush(const Ring& ring) {
    while (n_ > 0) {
      --n_;
      ring.writeHeader(pending_[n_].pos, pending_[n_].word);
    }
  }

 private:
  static constexpr size_t kMax = 8;
  struct Stamp {
    uint64_t pos, word;
  };
  Stamp pending_[kMax];
  size_t n_ = 0;
};

}  // namespace

RingEndpoint::RingEndpoint(RingEndpointConfig config) : config_(std::move(config)) {}

Status RingEndpoint::create(RingEndpointConfig config, std::unique_ptr<Endpoint>* out) {
  if (!config.txMemory || !config.rxMemory || !config.peer)
    return {ncclInternalError, "ring endpoint needs two rings and a peer"};
  registerForBells();  // before this process rings its peers' doorbells (doorbell.h)
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

void RingEndpoint::addWakeups(WaitSet& set) {
  set.addDoorbell(&rx_.ring().ctl()->consumerDoorbell);
}

std::string RingEndpoint::describe() const {
  std::string s = strfmt("%s/ring %llu KiB to %s", config_.name.c_str(),
                         static_cast<unsigned long long>(tx_.ring().capacity() >> 10),
                         config_.peer->describe().c_str());
  if (config_.directMinBytes) {
    // The peer decides in its own connect(), which may not have run yet.
    const uint32_t ok = tx_.ring().ctl()->directOk.load(std::memory_order_relaxed);
    s += strfmt(", direct from %zu bytes%s", config_.directMinBytes,
                ok == Ring::kDirectYes  ? ""
                : ok == Ring::kDirectNo ? " (peer cannot)"
                                        : " (if the peer can)");
  }
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
  if (!data && bytes)
    return invalidArgument("%s postSend: null buffer for %zu bytes", config_.name.c_str(), bytes);
  if (bytes > kBytesMask)
    return invalidArgument("%s postSend: %zu bytes is more than one message can carry",
                           config_.name.c_str(), bytes);
  return noThrow("postSend", [&] {
    sends_.push_back(SendOp{static_cast<const char*>(data), bytes});
    return Status::Ok();
  });
}

Status RingEndpoint::postRecv(void* data, size_t bytes, RecvSink* sink, bool streamed) {
  if (!error_.ok()) return error_;
  if (!data && !sink && bytes)
    return invalidArgument("%s postRecv: null buffer and no sink for %zu bytes",
                           config_.name.c_str(), bytes);
  return noThrow("postRecv", [&] {
    RecvOp op{static_cast<char*>(data), bytes, sink};
    op.streamed = streamed || bytes >= kStreamMinBytes;
    recvs_.push_back(op);
    return Status::Ok();
  });
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
      tx_.ring().ctl()->consumerDoorbell.ringIfSleeping();  // the peer may be waiting for it
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
  // Records written whole in one call (say a mismatch signature and the small message after
  // it) are stamped together at the end, the last first: the consumer, polling the first
  // stamp, then finds them all in the one cache line it fetches, instead of the line bouncing
  // back to the producer for each record.
  StampBatch stamps;
  while (sendCursor_ < sends_.size()) {
    SendOp& op = sends_[sendCursor_];
    if (!op.headerDone) {
      const uint64_t start = alignUp(tx_.position());
      const size_t pad = start - tx_.position();
      MemoryHandle handle;
      const bool byReference = config_.zeroCopyMinBytes && op.bytes >= config_.zeroCopyMinBytes &&
                               ctl->mapOk.load(std::memory_order_relaxed) == 1 &&
                               config_.registered(op.data, op.bytes, &handle);
      const bool direct =
          byReference || (config_.directMinBytes && op.bytes >= config_.directMinBytes &&
                          ctl->directOk.load(std::memory_order_relaxed) == Ring::kDirectYes);
      // A message up to one slice goes in whole before its stamp; a larger one streams after it.
      // (At most half the ring, so that it never waits for the whole ring to drain.)
      const bool whole =
          !direct && op.bytes <= std::min<uint64_t>(kPublishSlice, tx_.ring().capacity() / 2);
      const size_t body = direct ? sizeof(DirectDescriptor) : whole ? op.bytes : 0;
      if (tx_.writable(pad + kHeaderBytes + body) < pad + kHeaderBytes + body) break;
      tx_.zero(pad);
      const Ring& ring = tx_.ring();
      if (direct) {
        DirectDescriptor d{reinterpret_cast<uint64_t>(op.data),
                           ++directPosted_,
                           handle.id,
                           handle.base,
                           handle.size,
                           handle.key};
        ring.copyIn(start + kHeaderBytes, &d, sizeof d);
        op.directSeq = d.seq;
      } else if (body) {
        ring.copyIn(start + kHeaderBytes, op.data, body);
      }
      const uint64_t word = headerWord(direct ? kDirect : kData, direct || whole, op.bytes);
      if ((direct || whole) && body <= kBatchMaxBytes) {
        if (stamps.full()) stamps.flush(ring);
        stamps.add(start, word);
      } else {
        // A streamed payload follows its stamp, and a large one should not wait for records
        // after it: both publish what came before, then themselves.
        stamps.flush(ring);
        ring.writeHeader(start, word);
      }
      tx_.skipTo(start + kHeaderBytes + body);
      if (direct || whole) op.written = op.bytes;
      op.headerDone = true;
      moved = true;
    }
    while (op.written < op.bytes) {
      const size_t want = std::min(op.bytes - op.written, kPublishSlice);
      size_t n = std::min(tx_.writable(want), want);
      // Pieces other than a message's last stay multiples of 16 bytes, so that every ring
      // position a payload reaches (wrap, head, tail) is 16-aligned and a receiver's sink sees
      // whole elements of any type in every piece but the last.
      if (op.written + n < op.bytes) n &= ~size_t{Ring::kAlign - 1};
      if (n == 0) break;
      tx_.write(op.data + op.written, n);
      op.written += n;
      moved = true;
      if (op.written < op.bytes) tx_.publish();
    }
    if (op.written < op.bytes) {
      tx_.publish();
      break;
    }
    ++sendCursor_;
  }
  if (moved) {
    stamps.flush(tx_.ring());
    tx_.publish();
  }
  // Sends complete in order: a copied one at once, a direct one when the consumer acknowledged it.
  if (directAckSeen_ < directPosted_)
    directAckSeen_ = ctl->directDone.load(std::memory_order_acquire);
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
      uint64_t word;
      if (!rx_.ring().readHeader(start, &word)) break;
      const uint64_t kind = word >> 56, bytes = word & kBytesMask;
      if ((kind != kData && kind != kDirect) ||
          (word & ~(kBytesMask | kWhole | uint64_t{0xff} << 56)))
        return fail(systemError("corrupt ring: record word %#llx at position %llu",
                                static_cast<unsigned long long>(word),
                                static_cast<unsigned long long>(start)));
      if (bytes != op.bytes)
        return fail(
            invalidUsage("size mismatch: the peer sent %llu bytes to a receive of %zu bytes",
                         static_cast<unsigned long long>(bytes), op.bytes));
      size_t recordBytes = kHeaderBytes;
      if (kind == kDirect) {
        DirectDescriptor d;
        rx_.ring().copyOut(start + kHeaderBytes, &d, sizeof d);
        if (d.seq != directAcked_ + 1)
          return fail(systemError("corrupt ring: direct transfer %llu, expected %llu",
                                  static_cast<unsigned long long>(d.seq),
                                  static_cast<unsigned long long>(directAcked_ + 1)));
        op.direct = true;
        op.directAddr = d.addr;
        op.handle = {d.handleId, d.handleBase, d.handleSize, d.handleKey};
        recordBytes += sizeof d;
      }
      op.whole = (word & kWhole) != 0;
      rx_.skipTo(start + recordBytes);
      // A payload's release covers its header too: one store less per small message.
      if (kind == kDirect || bytes == 0) rx_.release();
      op.headerDone = true;
      *moved = true;
    }
    if (op.direct) {
      BRAID_TRY(directRecv(op, moved));
      if (op.received < op.bytes) break;
      rx_.ring().ctl()->directDone.store(++directAcked_, std::memory_order_release);
    } else {
      while (op.received < op.bytes) {
        const size_t left = op.bytes - op.received;
        const size_t n = op.whole ? left : std::min(rx_.readable(), left);
        if (n == 0) break;
        if (op.sink) {
          rx_.visit(n, [&](const void* p, size_t len) {
            op.sink->consume(op.received, p, len);
            op.received += len;
          });
          rx_.skip(n);
        } else {
          if (op.streamed) {
            rx_.visit(n, [&](const void* p, size_t len) {
              kernels::streamCopy(op.data + op.received, p, len);
              op.received += len;
            });
            rx_.skip(n);
          } else {
            rx_.read(op.data + op.received, n);
            op.received += n;
          }
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
    const void* shared = op.handle.valid() ? config_.peer->mapped(op.handle, addr) : nullptr;
    if (shared) {
      if (op.sink)
        op.sink->consume(op.received, shared, n);
      else if (op.streamed)
        kernels::streamCopy(op.data + op.received, shared, n);
      else
        std::memcpy(op.data + op.received, shared, n);
    } else if (!op.sink) {
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
