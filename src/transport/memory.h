// Memory registration, the optional hook through which a transport makes a buffer addressable
// by its peers (Transport::registerMemory), so that a message from that buffer can go by
// reference: the descriptor carries the buffer's handle, and the receiver reads the sender's
// memory in place, one copy instead of two through the transport's own buffers. Shared memory is
// the first user: an ncclMemAlloc allocation is a memfd (transport/shm/shared_memory.h) that a
// peer on the same host maps once; a verbs transport's handle would carry a memory region's key.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid::transport {

struct MemoryHandle {
  uint64_t id = 0;    // unique per registration in the process that made it; 0: none
  uint64_t base = 0;  // the registered memory, in the owner's address space
  uint64_t size = 0;
  int64_t key = -1;  // what a peer opens it with (shared memory: the memfd in the owner)

  bool valid() const { return id != 0; }
  bool contains(uint64_t addr, size_t bytes) const {
    return addr >= base && addr - base <= size && bytes <= size - (addr - base);
  }
};

}  // namespace braid::transport
