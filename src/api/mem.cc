// Memory: ncclMemAlloc / ncclMemFree (device memory where there is device support, else shared
// host memory), buffer registration (with every transport of the communicator) and windows
// (core/comm/memory_registry.h).
#include <cstdint>

#include "api/guard.h"
#include "core/comm/comm.h"
#include "core/comm/memory_registry.h"
#include "core/device/device.h"

using braid::Status;
using braid::api::guard;

namespace {

// A registered range is looked up by address arithmetic: it must not wrap the address space.
Status checkRange(const void* buff, size_t size) {
  if (!buff) return braid::invalidArgument("buff is NULL (size %zu)", size);
  if (size == 0) return braid::invalidArgument("size is 0 (buff %p)", buff);
  uintptr_t end = 0;
  if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(buff), size, &end))
    return braid::invalidArgument("buff %p + size %zu runs past the end of the address space", buff,
                                  size);
  return Status::Ok();
}

}  // namespace

BRAID_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  return guard(nullptr, "ncclMemAlloc", [&]() -> Status {
    if (!ptr) return braid::invalidArgument("ptr is NULL");
    *ptr = nullptr;
    if (size == 0) return braid::invalidArgument("size is 0");
    // As NCCL: device memory of the current device where there is device support.
    bool handled = false;
    BRAID_TRY(braid::device::memAlloc(size, ptr, &handled));
    if (handled) return Status::Ok();
    return braid::memAlloc(size, ptr);
  });
}

BRAID_API(ncclResult_t, ncclMemFree, void* ptr) {
  return guard(nullptr, "ncclMemFree", [&]() -> Status {
    if (!ptr) return Status::Ok();  // like free(NULL) and cudaFree(NULL)
    bool handled = false;
    BRAID_TRY(braid::device::memFree(ptr, &handled));
    if (handled) return Status::Ok();
    return braid::memFree(ptr);
  });
}

BRAID_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
          void** handle) {
  return guard(comm, "ncclCommRegister", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (!handle) return braid::invalidArgument("handle is NULL");
    *handle = nullptr;
    BRAID_TRY(checkRange(buff, size));
    return comm->memory.add(buff, size, comm->transports, handle);
  });
}

BRAID_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  return guard(comm, "ncclCommDeregister", [&]() -> Status {
    // Allowed on a failed or revoked communicator: cleaning up must always be possible.
    BRAID_TRY(braid::api::checkCommHandle(comm));
    if (!handle) return braid::invalidArgument("handle is NULL");
    return comm->memory.remove(handle);
  });
}

BRAID_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
          ncclWindow_t* win, int winFlags) {
  return guard(comm, "ncclCommWindowRegister", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (!win) return braid::invalidArgument("win is NULL");
    *win = nullptr;
    BRAID_TRY(checkRange(buff, size));
    // The flags say which device-side capabilities to register for; host windows have none,
    // so every defined flag is accepted and changes nothing.
    constexpr int kKnown = NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING | NCCL_WIN_GIN_ONLY |
                           NCCL_WIN_CFT_COUNTED;
    if (winFlags & ~kKnown)
      return braid::invalidArgument(
          "winFlags 0x%x has bits no NCCL_WIN_* flag defines (0x%x)", winFlags,
          winFlags & ~kKnown);
    // NCCL makes window registration collective so peers can map each other's windows; host
    // windows are not mapped by peers yet, so each rank only records its own.
    return comm->memory.addWindow(buff, size, winFlags, comm->rank, win);
  });
}

BRAID_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  braid::api::noteClient232();
  return guard(comm, "ncclWinGetUserPtr", [&]() -> Status {
    BRAID_TRY(braid::api::checkCommHandle(comm));
    if (!win) return braid::invalidArgument("win is NULL");
    if (!outUserPtr) return braid::invalidArgument("outUserPtr is NULL");
    return comm->memory.windowBase(win, outUserPtr);
  });
}

BRAID_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  return guard(comm, "ncclCommWindowDeregister", [&]() -> Status {
    BRAID_TRY(braid::api::checkCommHandle(comm));
    if (!win) return braid::invalidArgument("win is NULL");
    return comm->memory.removeWindow(win);
  });
}
