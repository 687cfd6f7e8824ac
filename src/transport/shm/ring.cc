#include "transport/shm/ring.h"

#include <sys/random.h>

#include <chrono>
#include <new>

namespace braid::transport {

static_assert(sizeof(RingControl) <= Ring::kDataOffset, "ring control must fit before the data");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "rings need lock-free 64-bit atomics");

size_t Ring::roundCapacity(size_t requested) {
  // Small rings work (tests use them to force wrapping) but below a page they only add overhead.
  constexpr size_t kMin = 4096, kMax = size_t{1} << 34;
  if (requested < kMin) requested = kMin;
  if (requested > kMax) requested = kMax;
  return (requested + kAlign - 1) / kAlign * kAlign;
}

Status Ring::init(void* mem, size_t memBytes, size_t capacity, Ring* out) {
  if (capacity == 0 || capacity % kAlign || bytesFor(capacity) > memBytes)
    return internalError("ring of %zu bytes does not fit in %zu bytes", capacity, memBytes);
  auto* ctl = new (mem) RingControl();
  ctl->magic = kMagic;
  ctl->capacity = capacity;
  uint64_t nonce = 0;
  // Any value works for correctness except a guessable one; the clock is the fallback.
  if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof nonce))
    nonce = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) *
            0x9e3779b97f4a7c15ull;
  ctl->nonce = nonce ? nonce : 1;  // a zeroed slot must never look stamped
  return attach(mem, memBytes, out);
}

Status Ring::attach(void* mem, size_t memBytes, Ring* out) {
  auto* ctl = static_cast<RingControl*>(mem);
  if (memBytes < kDataOffset || ctl->magic != kMagic)
    return systemError("shared ring has a bad header (magic %llx)",
                       memBytes < kDataOffset ? 0ull : static_cast<unsigned long long>(ctl->magic));
  uint64_t capacity = ctl->capacity;
  if (capacity == 0 || capacity % kAlign || bytesFor(capacity) > memBytes)
    return systemError("shared ring claims %llu bytes but its memory holds %zu",
                       static_cast<unsigned long long>(capacity), memBytes);
  out->ctl_ = ctl;
  out->data_ = static_cast<char*>(mem) + kDataOffset;
  out->capacity_ = capacity;
  out->nonce_ = ctl->nonce;
  return Status::Ok();
}

}  // namespace braid::transport
