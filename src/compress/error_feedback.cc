#include "compress/error_feedback.h"

#include <functional>

#include "base/env.h"
#include "compress/variables.h"

namespace braid::compress {

size_t ResidualStore::capacityFromEnv() {
  int64_t v = env::getInt(env::kBraidCompressStateBytes);
  return v > 0 ? size_t(v) : 0;
}

size_t ResidualStore::KeyHash::operator()(const ResidualKey& k) const {
  // Combining as in boost::hash_combine: any good mix will do for a handful of tensors.
  size_t h = std::hash<uint64_t>()(k.comm);
  for (size_t part : {size_t(k.buffer), k.count, size_t(k.type)})
    h ^= std::hash<size_t>()(part) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

void ResidualStore::eraseLocked(Lru::iterator it) {
  bytes_ -= bytesOf(it->key);
  index_.erase(it->key);
  lru_.erase(it);
}

std::shared_ptr<Residual> ResidualStore::acquire(const ResidualKey& key) {
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->residual;
  }
  const size_t need = bytesOf(key);
  if (need > capacity_) {
    ++refused_;
    return nullptr;
  }
  while (bytes_ + need > capacity_) {
    eraseLocked(std::prev(lru_.end()));
    ++evictions_;
  }
  lru_.push_front(Entry{key, std::make_shared<Residual>(key.count)});
  index_.emplace(key, lru_.begin());
  bytes_ += need;
  return lru_.front().residual;
}

bool ResidualStore::reset(const ResidualKey& key) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  eraseLocked(it->second);
  return true;
}

size_t ResidualStore::resetComm(uint64_t comm) { return resetWhere(comm, 0, false); }

size_t ResidualStore::resetBuffer(uint64_t comm, uintptr_t buffer) {
  return resetWhere(comm, buffer, true);
}

size_t ResidualStore::resetWhere(uint64_t comm, uintptr_t buffer, bool oneBuffer) {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->key.comm == comm && (!oneBuffer || it->key.buffer == buffer)) {
      eraseLocked(it);
      ++n;
    }
    it = next;
  }
  return n;
}

void ResidualStore::resetAll() {
  std::lock_guard lock(mu_);
  lru_.clear();
  index_.clear();
  bytes_ = 0;
}

size_t ResidualStore::bytesUsed() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

ResidualStats ResidualStore::stats() const {
  std::lock_guard lock(mu_);
  return {bytes_, capacity_, lru_.size(), evictions_, refused_};
}

ResidualStats ResidualStore::statsFor(uint64_t comm) const {
  std::lock_guard lock(mu_);
  ResidualStats s{0, capacity_, 0, evictions_, refused_};
  for (const Entry& e : lru_) {
    if (e.key.comm != comm) continue;
    s.bytes += bytesOf(e.key);
    ++s.entries;
  }
  return s;
}

Status encodeWithFeedback(const Codec& codec, ResidualStore& store, const ResidualKey& key,
                          const void* input, uint64_t seed, std::span<std::byte> out,
                          size_t* written) {
  std::shared_ptr<Residual> residual = store.acquire(key);
  return codec.encode(input, key.count, key.type, residual ? residual->values.get() : nullptr, seed,
                      out, written);
}

}  // namespace braid::compress
