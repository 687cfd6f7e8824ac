// A single-producer/single-consumer byte ring in memory both sides map (a /dev/shm segment
// between processes, anonymous memory between threads). Lock-free: the producer owns `head`,
// the consumer owns `tail`, each on its own cache line so that neither write invalidates the
// other's line; a release store publishes bytes, an acquire load makes them visible.
// Positions are 64-bit byte counts that never wrap in practice (2^64 bytes); the offset in the
// data area is position % capacity.
//
// Records start on 16-byte positions with a 16-byte header whose first word is a stamp,
// position ^ nonce, stored last with release. A consumer waiting for the next record polls that
// stamp where the record will be instead of the producer's head counter, so a small message
// costs the consumer one cache miss (header and payload share a line) instead of two. A stale
// slot holds an older stamp (a different position) or payload bytes, which match the expected
// stamp by chance with probability 2^-64 (the nonce is random per ring); producers zero the
// padding between records so that no slot is ever left half old.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/small_copy.h"
#include "base/status.h"
#include "transport/shm/doorbell.h"

namespace braid::transport {

struct RingControl {
  alignas(64) std::atomic<uint64_t> head;        // producer: bytes published
  alignas(64) std::atomic<uint64_t> tail;        // consumer: bytes released
  alignas(64) std::atomic<uint64_t> directDone;  // consumer: direct transfers finished (acks)
  // The consumer sleeps on it; the producer rings it whenever it moved data either way (new
  // records here, or tail and acks of the ring in the other direction).
  alignas(64) Doorbell consumerDoorbell;
  // Written once or rarely; read on slow paths only.
  alignas(64) uint64_t magic;
  uint64_t capacity;
  uint64_t nonce;
  std::atomic<uint32_t> directOk;  // consumer: kDirectYes when it can read the producer's memory
  std::atomic<uint32_t> producerClosed;
  std::atomic<uint32_t> consumerClosed;
  int32_t consumerPid;
  // consumer: 1 when it can map the producer's shared allocations (ncclMemAlloc memory), so
  // buffers that lie in them may be sent by reference.
  std::atomic<uint32_t> mapOk;
};

class Ring {
 public:
  static constexpr uint64_t kMagic = 0x6272616964524e47ull;  // "braidRNG"
  static constexpr size_t kDataOffset = 4096;                // data starts page aligned
  static constexpr size_t kAlign = 16;                       // records start on 16-byte positions
  static constexpr uint32_t kDirectUnknown = 0, kDirectYes = 1, kDirectNo = 2;

  // Memory needed for a ring of `capacity` data bytes (capacity: a multiple of kAlign).
  static size_t bytesFor(size_t capacity) { return kDataOffset + capacity; }
  static size_t roundCapacity(size_t requested);
  // Formats fresh (zeroed) memory as an empty ring.
  static Status init(void* mem, size_t memBytes, size_t capacity, Ring* out);
  // Checks memory someone else formatted; never trusts its fields blindly.
  static Status attach(void* mem, size_t memBytes, Ring* out);

  RingControl* ctl() const { return ctl_; }
  uint64_t capacity() const { return capacity_; }

  // Header words at a 16-aligned position (never wrapped: the capacity is a multiple of 16).
  void writeHeader(uint64_t pos, uint64_t word) const {
    auto* slot = reinterpret_cast<uint64_t*>(data_ + pos % capacity_);
    slot[1] = word;
    std::atomic_ref<uint64_t>(slot[0]).store(pos ^ nonce_, std::memory_order_release);
  }
  // False while the record at `pos` is not published yet.
  bool readHeader(uint64_t pos, uint64_t* word) const {
    auto* slot = reinterpret_cast<uint64_t*>(data_ + pos % capacity_);
    if (std::atomic_ref<uint64_t>(slot[0]).load(std::memory_order_acquire) != (pos ^ nonce_))
      return false;
    *word = slot[1];
    return true;
  }

  // Zeros from `pos` up to the next 16-byte position (fewer than kAlign bytes: never wraps).
  void zeroAt(uint64_t pos, size_t n) const { std::memset(data_ + pos % capacity_, 0, n); }

  // Wrap-aware copies at a position; the caller has checked the space.
  void copyIn(uint64_t pos, const void* src, size_t n) const {
    size_t off = pos % capacity_, first = capacity_ - off < n ? capacity_ - off : n;
    smallCopy(data_ + off, src, first);
    if (n > first) std::memcpy(data_, static_cast<const char*>(src) + first, n - first);
  }
  void copyOut(uint64_t pos, void* dst, size_t n) const {
    size_t off = pos % capacity_, first = capacity_ - off < n ? capacity_ - off : n;
    smallCopy(dst, data_ + off, first);
    if (n > first) std::memcpy(static_cast<char*>(dst) + first, data_, n - first);
  }
  // Calls f(pointer, length) once, or twice when [pos, pos+n) wraps: readers consume in place.
  template <typename F>
  void visit(uint64_t pos, size_t n, F&& f) const {
    size_t off = pos % capacity_, first = capacity_ - off < n ? capacity_ - off : n;
    f(static_cast<const void*>(data_ + off), first);
    if (n > first) f(static_cast<const void*>(data_), n - first);
  }

 private:
  RingControl* ctl_ = nullptr;
  char* data_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t nonce_ = 0;
};

inline uint64_t alignUp(uint64_t pos) {
  return (pos + Ring::kAlign - 1) & ~uint64_t{Ring::kAlign - 1};
}

// The producer's view. Caches the consumer's tail so that the common case touches only its own
// line; reloads it only when the cached value says the ring is full.
class RingWriter {
 public:
  RingWriter() = default;
  explicit RingWriter(Ring ring) : ring_(ring) {
    head_ = ring_.ctl()->head.load(std::memory_order_relaxed);
    tailCache_ = ring_.ctl()->tail.load(std::memory_order_acquire);
  }
  const Ring& ring() const { return ring_; }
  uint64_t position() const { return head_; }

  // Free bytes; reloads the consumer's tail only when the cached value offers less than `want`.
  size_t writable(size_t want) {
    size_t free = ring_.capacity() - (head_ - tailCache_);
    if (free < want) {
      tailCache_ = ring_.ctl()->tail.load(std::memory_order_acquire);
      free = ring_.capacity() - (head_ - tailCache_);
    }
    return free;
  }
  void skipTo(uint64_t pos) { head_ = pos; }
  void write(const void* src, size_t n) {
    ring_.copyIn(head_, src, n);
    head_ += n;
  }
  // Zeros up to the next 16-byte position (padding between records; it never wraps).
  void zero(size_t n) {
    ring_.zeroAt(head_, n);
    head_ += n;
  }
  void publish() { ring_.ctl()->head.store(head_, std::memory_order_release); }

 private:
  Ring ring_;
  uint64_t head_ = 0;
  uint64_t tailCache_ = 0;
};

// The consumer's view; mirrors RingWriter.
class RingReader {
 public:
  RingReader() = default;
  explicit RingReader(Ring ring) : ring_(ring) {
    tail_ = ring_.ctl()->tail.load(std::memory_order_relaxed);
    headCache_ = ring_.ctl()->head.load(std::memory_order_acquire);
  }
  const Ring& ring() const { return ring_; }
  uint64_t position() const { return tail_; }

  // Bytes published by head. A record seen through its stamp may put tail ahead of the head
  // this side last saw, or even of the head the producer has stored so far.
  size_t readable() {
    if (headCache_ <= tail_) headCache_ = ring_.ctl()->head.load(std::memory_order_acquire);
    return headCache_ > tail_ ? headCache_ - tail_ : 0;
  }
  void read(void* dst, size_t n) {
    ring_.copyOut(tail_, dst, n);
    tail_ += n;
  }
  template <typename F>
  void visit(size_t n, F&& f) const {
    ring_.visit(tail_, n, f);
  }
  void skip(size_t n) { tail_ += n; }
  void skipTo(uint64_t pos) { tail_ = pos; }
  void release() { ring_.ctl()->tail.store(tail_, std::memory_order_release); }

 private:
  Ring ring_;
  uint64_t tail_ = 0;
  uint64_t headCache_ = 0;
};

}  // namespace braid::transport
