#include "transport/ib/ib_memory.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "transport/ib/verbs.h"

namespace braid::transport::ib {

MemoryRegions::~MemoryRegions() {
  for (auto& [base, r] : byBase_) verbs()->deregMr(r.mr);
}

Status MemoryRegions::add(const void* base, size_t bytes, MemoryHandle* handle) {
  *handle = {};
  if (!device_ || bytes == 0) return Status::Ok();
  ibv_mr* mr = verbs()->regMr(device_->pd, const_cast<void*>(base), bytes,
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!mr) {
    BRAID_INFO(kNet,
               "NET/IB: cannot register %p (%zu bytes): %s; messages from and into it go "
               "through the connection's slots",
               base, bytes, std::strerror(errno));
    return Status::Ok();
  }
  const uint64_t addr = reinterpret_cast<uint64_t>(base);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = nextId_++;
  byBase_.emplace(addr, Region{id, bytes, mr});
  largest_ = std::max<uint64_t>(largest_, bytes);
  handle->id = id;
  handle->base = addr;
  handle->size = bytes;
  handle->key = mr->rkey;
  return Status::Ok();
}

void MemoryRegions::remove(const MemoryHandle& handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [first, last] = byBase_.equal_range(handle.base);
  for (auto it = first; it != last; ++it)
    if (it->second.id == handle.id) {
      verbs()->deregMr(it->second.mr);
      byBase_.erase(it);
      return;
    }
}

bool MemoryRegions::find(const void* p, size_t bytes, RegionKeys* keys) const {
  const uint64_t addr = reinterpret_cast<uint64_t>(p);
  std::lock_guard<std::mutex> lock(mu_);
  // Regions may overlap (a buffer registered twice, or inside another): any that holds the
  // whole range serves. The walk goes down from the last base at or below `p` and stops where
  // even the largest region would end before it.
  for (auto it = byBase_.upper_bound(addr); it != byBase_.begin();) {
    --it;
    if (addr - it->first >= largest_) break;
    const MemoryHandle h{it->second.id, it->first, it->second.size, 0};
    if (h.contains(addr, bytes)) {
      keys->lkey = it->second.mr->lkey;
      keys->rkey = it->second.mr->rkey;
      return true;
    }
  }
  return false;
}

}  // namespace braid::transport::ib
