#include "transport/shm/shared_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#include "base/log.h"

namespace braid::transport {
namespace {

struct Allocations {
  std::mutex mu;
  std::map<uintptr_t, MemoryHandle> byBase;
  uint64_t nextId = 1;
};

// Never destroyed: ncclMemFree may run from static destructors after this file's would have.
Allocations& allocations() {
  static auto* a = new Allocations;
  return *a;
}

}  // namespace

Status sharedAlloc(size_t size, void** out) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = (size + page - 1) / page * page;
  int fd = memfd_create("braid-mem", MFD_CLOEXEC);
  if (fd < 0) return systemError("memfd_create: %s", std::strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(rounded)) != 0) {
    int err = errno;
    close(fd);
    return systemError("cannot allocate %zu bytes of shared memory: %s", rounded,
                       std::strerror(err));
  }
  void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close(fd);
    return systemError("cannot map %zu bytes of shared memory: %s", rounded, std::strerror(err));
  }
  Allocations& a = allocations();
  std::lock_guard<std::mutex> lock(a.mu);
  a.byBase[reinterpret_cast<uintptr_t>(p)] = {a.nextId++, reinterpret_cast<uint64_t>(p), rounded,
                                              fd};
  *out = p;
  return Status::Ok();
}

bool sharedFree(void* ptr) {
  MemoryHandle r;
  {
    Allocations& a = allocations();
    std::lock_guard<std::mutex> lock(a.mu);
    auto it = a.byBase.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == a.byBase.end()) return false;
    r = it->second;
    a.byBase.erase(it);
  }
  munmap(ptr, r.size);
  close(static_cast<int>(r.key));
  return true;
}

bool findShared(const void* ptr, size_t bytes, MemoryHandle* handle) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  Allocations& a = allocations();
  std::lock_guard<std::mutex> lock(a.mu);
  auto it = a.byBase.upper_bound(p);
  if (it == a.byBase.begin()) return false;
  --it;
  if (!it->second.contains(p, bytes)) return false;
  *handle = it->second;
  return true;
}

}  // namespace braid::transport
