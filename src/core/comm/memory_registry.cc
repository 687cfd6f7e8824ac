#include "core/comm/memory_registry.h"

#include <unistd.h>

#include <cstdlib>

#include "base/log.h"
#include "transport/shm/shared_memory.h"

namespace braid {
Status memAlloc(size_t size, void** out) {
  // Shared memory (a memfd), whole pages: the shm transport sends buffers that lie in it by
  // reference, so peers on this host copy or reduce straight out of them.
  BRAID_TRY(transport::sharedAlloc(size, out));
  BRAID_INFO(kAlloc, "ncclMemAlloc %p, %zu bytes of shared memory", *out, size);
  return Status::Ok();
}

Status memFree(void* ptr) {
  if (!transport::sharedFree(ptr))
    return invalidArgument("ptr %p was not allocated by ncclMemAlloc (or was freed already)", ptr);
  return Status::Ok();
}

namespace {

void deregister(const Registration& reg) {
  for (const auto& [t, h] : reg.handles) t->deregisterMemory(h);
}

}  // namespace

MemoryRegistry::~MemoryRegistry() {
  // What the caller never deregistered: the transports' handles, and the ncclWindow_vidmem
  // structs, which are ours to free.
  for (auto& [key, reg] : registrations_) deregister(*reg);
  for (auto& [win, state] : windows_) delete win;
}

Status MemoryRegistry::add(void* base, size_t size,
                           std::span<const std::unique_ptr<transport::Transport>> transports,
                           void** handle) {
  auto reg = std::make_unique<Registration>(Registration{base, size, {}});
  for (const auto& t : transports) {
    transport::MemoryHandle h;
    Status st = t->registerMemory(base, size, &h);
    if (!st.ok()) {
      deregister(*reg);
      return st.withContext(std::string(t->name()));
    }
    if (h.valid()) reg->handles.emplace_back(t.get(), h);
  }
  void* key = reg.get();
  std::lock_guard<std::mutex> lock(mu_);
  registrations_.emplace(key, std::move(reg));
  *handle = key;
  return Status::Ok();
}

Status MemoryRegistry::remove(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = registrations_.find(handle);
  if (it == registrations_.end())
    return invalidArgument("handle %p is not a registration of this communicator", handle);
  deregister(*it->second);
  registrations_.erase(it);
  return Status::Ok();
}

Status MemoryRegistry::addWindow(void* base, size_t size, int flags, int rank, ncclWindow_t* win) {
  auto state = std::make_unique<WindowState>(WindowState{base, size, flags});
  auto* w = new ncclWindow_vidmem{};
  w->winHost = state.get();
  w->worldRank = rank;
  std::lock_guard<std::mutex> lock(mu_);
  windows_.emplace(w, std::move(state));
  *win = w;
  return Status::Ok();
}

Status MemoryRegistry::windowBase(ncclWindow_t win, void** base) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(win);
  if (it == windows_.end())
    return invalidArgument("win %p is not a window of this communicator", static_cast<void*>(win));
  *base = it->second->base;
  return Status::Ok();
}

Status MemoryRegistry::removeWindow(ncclWindow_t win) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(win);
  if (it == windows_.end())
    return invalidArgument("win %p is not a window of this communicator", static_cast<void*>(win));
  windows_.erase(it);
  delete win;
  return Status::Ok();
}

}  // namespace braid
