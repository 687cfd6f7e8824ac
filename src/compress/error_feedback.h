// Error feedback: what a lossy encode did not send is kept, per tensor, and added to the same
// tensor's next contribution, so over many calls everything is sent, only late (the sum of the
// decoded messages equals the sum of the inputs minus the last residual).
//
// A tensor is identified by what the executor sees of it: the communicator, the buffer address,
// the count and the type (a buffer reused for another shape or type is another tensor). The
// residuals are fp32 whatever the type, and their total is bounded by BRAID_COMPRESS_STATE_BYTES:
// past it the least recently used are dropped (their pending error is lost, which costs
// accuracy, never correctness). A residual too large for the bound on its own is not kept at
// all, and that call compresses without feedback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "compress/codec.h"

namespace braid::compress {

struct ResidualKey {
  uint64_t comm;  // the communicator's id
  uintptr_t buffer;
  size_t count;
  ncclDataType_t type;
  bool operator==(const ResidualKey&) const = default;
};

// One tensor's residual: count fp32 values, zero when created.
struct Residual {
  explicit Residual(size_t n) : count(n), values(new float[n]()) {}
  size_t count;
  std::unique_ptr<float[]> values;
};

struct ResidualStats {
  size_t bytes;     // fp32 values held
  size_t capacity;  // the bound
  size_t entries;
  uint64_t evictions;  // residuals dropped to make room
  uint64_t refused;    // requests larger than the bound
};

// Thread-safe. A residual handed out stays valid while its holder keeps it, even if the store
// drops it meanwhile (it is then no longer counted, and its updates are lost with it).
class ResidualStore {
 public:
  explicit ResidualStore(size_t capacityBytes) : capacity_(capacityBytes) {}
  // The bound from BRAID_COMPRESS_STATE_BYTES.
  static size_t capacityFromEnv();

  // The residual of key, zeroed on first use, now the most recently used; null if it alone
  // exceeds the bound. Creating it evicts least recently used residuals until it fits.
  std::shared_ptr<Residual> acquire(const ResidualKey& key);
  // Forget one residual (false if there was none), those of a communicator, or all.
  bool reset(const ResidualKey& key);
  size_t resetComm(uint64_t comm);
  size_t resetBuffer(uint64_t comm, uintptr_t buffer);  // every count and type of the buffer
  void resetAll();

  size_t bytesUsed() const;
  ResidualStats stats() const;
  // Bytes and entries of one communicator (capacity, evictions, refusals: the whole store's).
  ResidualStats statsFor(uint64_t comm) const;

 private:
  struct KeyHash {
    size_t operator()(const ResidualKey& k) const;
  };
  struct Entry {
    ResidualKey key;
    std::shared_ptr<Residual> residual;
  };
  using Lru = std::list<Entry>;  // most recently used first

  static size_t bytesOf(const ResidualKey& k) { return k.count * sizeof(float); }
  void eraseLocked(Lru::iterator it);
  size_t resetWhere(uint64_t comm, uintptr_t buffer, bool oneBuffer);

  mutable std::mutex mu_;
  size_t capacity_;
  size_t bytes_ = 0;
  uint64_t evictions_ = 0;
  uint64_t refused_ = 0;
  Lru lru_;
  std::unordered_map<ResidualKey, Lru::iterator, KeyHash> index_;
};

// codec.encode with key's residual from store (without one when the store refuses it).
Status encodeWithFeedback(const Codec& codec, ResidualStore& store, const ResidualKey& key,
                          const void* input, uint64_t seed, std::span<std::byte> out,
                          size_t* written);

}  // namespace braid::compress
