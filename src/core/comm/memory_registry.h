// Memory Braid hands out (ncclMemAlloc) and buffers a communicator was told about
// (ncclCommRegister, ncclCommWindowRegister). Registering a buffer registers it with each of the
// communicator's transports (Transport::registerMemory, transport/memory.h) and keeps their
// handles until it is deregistered; a transport that cannot share the memory gives none. Shared
// memory shares ncclMemAlloc allocations only, and does so whether or not they are registered;
// the ib transport registers any buffer (a memory region) and then writes messages between
// registered buffers in place. The records also let the API reject handles Braid never issued.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <span>
#include <utility>
#include <vector>

#include "base/status.h"
#include "nccl.h"
#include "transport/transport.h"

// What an ncclWindow_t points at. NCCL's device code reads its own, longer layout of this
// struct, whose first field is also winHost; Braid has no device code, so it keeps only that.
struct ncclWindow_vidmem {
  void* winHost;  // the WindowState
  int worldRank;
};

namespace braid {

// ncclMemAlloc: page-aligned host memory, tracked so that ncclMemFree can tell its own pointers
// from anything else.
Status memAlloc(size_t size, void** out);
Status memFree(void* ptr);

struct Registration {
  void* base = nullptr;
  size_t size = 0;
  // What each transport gave back (only the handles of those that share the memory).
  std::vector<std::pair<transport::Transport*, transport::MemoryHandle>> handles;
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

  Status add(void* base, size_t size,
             std::span<const std::unique_ptr<transport::Transport>> transports, void** handle);
  Status remove(void* handle);
  Status addWindow(void* base, size_t size, int flags, int rank, ncclWindow_t* win);
  Status removeWindow(ncclWindow_t win);
  // The buffer `win` was registered with (ncclWinGetUserPtr).
  Status windowBase(ncclWindow_t win, void** base);

 private:
  std::mutex mu_;
  std::unordered_map<void*, std::unique_ptr<Registration>> registrations_;
  std::unordered_map<ncclWindow_t, std::unique_ptr<WindowState>> windows_;
};

}  // namespace braid
