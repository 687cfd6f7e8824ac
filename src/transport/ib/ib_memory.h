// Buffers a communicator registered with the ib transport (ncclCommRegister, through
// Transport::registerMemory): one memory region each on the device's protection domain, kept
// until it is deregistered, and found by address when a message is posted, so that the
// endpoint can write from and into them directly (ib_endpoint.h) instead of through its slots.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "base/status.h"
#include "transport/ib/ib_device.h"
#include "transport/memory.h"

namespace braid::transport::ib {

// The keys a registered range is addressed with.
struct RegionKeys {
  uint32_t lkey = 0;  // a work request's local buffer
  uint32_t rkey = 0;  // a peer's RDMA write into it
};

class MemoryRegions {
 public:
  explicit MemoryRegions(std::shared_ptr<Device> device) : device_(std::move(device)) {}
  MemoryRegions(const MemoryRegions&) = delete;
  MemoryRegions& operator=(const MemoryRegions&) = delete;
  ~MemoryRegions();

  // Registers [base, base + bytes) for local access and remote writes. Where the device will not
  // register it (the locked-memory limit, an address it cannot pin) the handle stays empty and
  // messages from and into it go through the slots: registration is an optimisation.
  Status add(const void* base, size_t bytes, MemoryHandle* handle);
  void remove(const MemoryHandle& handle);
  // Whether [p, p + bytes) lies inside one registered region, and its keys.
  bool find(const void* p, size_t bytes, RegionKeys* keys) const;

 private:
  struct Region {
    uint64_t id;
    uint64_t size;
    ibv_mr* mr;
  };
  std::shared_ptr<Device> device_;
  mutable std::mutex mu_;
  std::multimap<uint64_t, Region> byBase_;
  uint64_t largest_ = 0;  // the largest region's size so far
  uint64_t nextId_ = 1;
};

}  // namespace braid::transport::ib
