// Memory other processes of this host can map: ncclMemAlloc hands it out (a memfd, mapped
// shared), registered with the shm transport from birth (its MemoryHandle: id, base, size and the
// memfd), so that a buffer that lies in it goes by reference: the receiver maps the same pages
// once (through /proc/<pid>/fd) and copies or reduces straight out of them, a single copy instead
// of two through the ring.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "transport/memory.h"

namespace braid::transport {

Status sharedAlloc(size_t size, void** out);
// False when ptr is not the base of a live shared allocation.
bool sharedFree(void* ptr);
// True when [ptr, ptr + bytes) lies inside one live shared allocation: *handle is that
// allocation's (the memfd is the key).
bool findShared(const void* ptr, size_t bytes, MemoryHandle* handle);

}  // namespace braid::transport
