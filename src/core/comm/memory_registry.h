// Memory Braid hands out (ncclMemAlloc) and buffers a communicator was told about
// (ncclCommRegister, ncclCommWindowRegister). On host memory registration does not change the
// data path yet: collectives copy through the transports whether or not a buffer is
// registered. What is kept here is what a zero-copy path will need (base, size, flags), and
// enough to reject handles Braid never issued.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/status.h"
#include "nccl.h"

namespace braid {

// ncclMemAlloc: page-aligned host memory, tracked so that ncclMemFree can tell its own pointers
// from anything else.
Status memAlloc(size_t size, void** out);
Status memFree(void* ptr);

struct Registration {
  void* base = nullptr;
  size_t size = 0;
};

// What ncclWindow_vidmem::winHost points at.
struct WindowState {
  void* base = nullptr;
  size_t size = 0;
  int flags = 0;
};

// One communicator's registrations and windows. Handles are the addresses of the records, so a
// stale or foreign handle is simply not found.
class MemoryRegistry {
 public:
  MemoryRegistry() = default;
  MemoryRegistry(const MemoryRegistry&) = delete;
  MemoryRegistry& operator=(const MemoryRegistry&) = delete;
  ~MemoryRegistry();

  Status add(void* base, size_t size, void** handle);
  Status remove(void* handle);
  Status addWindow(void* base, size_t size, int flags, int rank, ncclWindow_t* win);
  Status removeWindow(ncclWindow_t win);

 private:
  std::mutex mu_;
  std::unordered_map<void*, std::unique_ptr<Registration>> registrations_;
  std::unordered_map<ncclWindow_t, std::unique_ptr<WindowState>> windows_;
};

}  // namespace braid
