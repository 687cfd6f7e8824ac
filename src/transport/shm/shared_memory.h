// Memory other processes of this host can map: ncclMemAlloc hands it out (a memfd, mapped
// shared), and the shm transport sends a buffer that lies in it by reference: the receiver maps
// the same pages once (through /proc/<pid>/fd) and copies or reduces straight out of them, a
// single copy instead of two through the ring.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace braid::transport {

// Where a buffer lives inside a shared allocation, as the receiver needs it.
struct SharedRegion {
  uint64_t id = 0;    // unique per allocation in this process (0: none)
  uint64_t base = 0;  // the allocation's address in the owner's address space
  uint64_t size = 0;
  int64_t fd = -1;    // the memfd in the owner's process
};

Status sharedAlloc(size_t size, void** out);
// False when ptr is not the base of a live shared allocation.
bool sharedFree(void* ptr);
// True when [ptr, ptr + bytes) lies inside one live shared allocation.
bool findShared(const void* ptr, size_t bytes, SharedRegion* region);

}  // namespace braid::transport
