#include "core/registry.h"

#include <unistd.h>

#include <cstdlib>

#include "core/log.h"

namespace braid {
namespace {

struct Allocations {
  std::mutex mu;
  std::unordered_map<void*, size_t> sizes;
};

// Never destroyed: ncclMemFree may run from static destructors after this file's would have.
Allocations& allocations() {
  static auto* a = new Allocations;
  return *a;
}

}  // namespace

Status memAlloc(size_t size, void** out) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Whole pages, as NCCL rounds to its allocation granularity: a later zero-copy path can then
  // map or pin the allocation without touching a neighbour's memory.
  const size_t rounded = (size + page - 1) / page * page;
  void* p = nullptr;
  if (int err = posix_memalign(&p, page, rounded); err != 0)
    return systemError("ncclMemAlloc: cannot allocate %zu bytes (errno %d)", size, err);
  {
    Allocations& a = allocations();
    std::lock_guard<std::mutex> lock(a.mu);
    a.sizes.emplace(p, rounded);
  }
  BRAID_INFO(kAlloc, "ncclMemAlloc %p, %zu bytes (%zu requested)", p, rounded, size);
  *out = p;
  return Status::Ok();
}

Status memFree(void* ptr) {
  Allocations& a = allocations();
  {
    std::lock_guard<std::mutex> lock(a.mu);
    if (!a.sizes.erase(ptr))
      return invalidArgument("ptr %p was not allocated by ncclMemAlloc (or was freed already)",
                             ptr);
  }
  std::free(ptr);
  return Status::Ok();
}

Registry::~Registry() {
  // Windows the caller never deregistered: the ncclWindow_vidmem structs are ours to free.
  for (auto& [win, state] : windows_) delete win;
}

Status Registry::add(void* base, size_t size, void** handle) {
  auto reg = std::make_unique<Registration>(Registration{base, size});
  void* key = reg.get();
  std::lock_guard<std::mutex> lock(mu_);
  registrations_.emplace(key, std::move(reg));
  *handle = key;
  return Status::Ok();
}

Status Registry::remove(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!registrations_.erase(handle))
    return invalidArgument("handle %p is not a registration of this communicator", handle);
  return Status::Ok();
}

Status Registry::addWindow(void* base, size_t size, int flags, int rank, ncclWindow_t* win) {
  auto state = std::make_unique<WindowState>(WindowState{base, size, flags});
  auto* w = new ncclWindow_vidmem{};
  w->winHost = state.get();
  w->worldRank = rank;
  std::lock_guard<std::mutex> lock(mu_);
  windows_.emplace(w, std::move(state));
  *win = w;
  return Status::Ok();
}

Status Registry::removeWindow(ncclWindow_t win) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(win);
  if (it == windows_.end())
    return invalidArgument("win %p is not a window of this communicator", static_cast<void*>(win));
  windows_.erase(it);
  delete win;
  return Status::Ok();
}

}  // namespace braid
