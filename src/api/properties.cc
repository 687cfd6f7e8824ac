// What NCCL 2.32 lets a client ask of a communicator and do with its resources: its
// properties (ncclCommQueryProperties), suspending and resuming it, and its memory.
#include <algorithm>
#include <cstring>
#include <optional>

#include "api/guard.h"
#include "base/log.h"
#include "core/comm/comm.h"
#include "core/comm/config.h"
#include "core/device/device.h"
#include "core/device/ipc_path.h"

using braid::Status;
using braid::api::guard;

// Braid has no device API, multicast, GPU-initiated networking or CFT, so those properties are
// all "none"; what it fills is the communicator's identity. A client's smaller (older) struct
// gets the fields it has.
BRAID_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t* props) {
  braid::api::noteClient232();
  return guard(comm, "ncclCommQueryProperties", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (!props) return braid::invalidArgument("props is NULL");
    size_t size = 0;
    BRAID_TRY(braid::readStructHeader(props, offsetof(ncclCommProperties_t, rank), "props",
                                      "ncclCommProperties_t", "NCCL_COMM_PROPERTIES_INITIALIZER",
                                      &size));
    ncclCommProperties_t p{};
    p.size = size;
    p.magic = props->magic;
    p.version = props->version;
    p.rank = comm->rank;
    p.nRanks = comm->nranks;
    p.cudaDev = comm->cudaDev;
    p.nvmlDev = -1;  // Braid does not use NVML
    p.ginType = NCCL_GIN_TYPE_NONE;
    p.railedGinType = NCCL_GIN_TYPE_NONE;
    p.ginConnectionType = NCCL_GIN_CONNECTION_NONE;
    p.commHash = comm->commHash;
    std::memcpy(props, &p, std::min(size, sizeof(p)));
    return Status::Ok();
  });
}

// A suspended communicator takes no calls (each fails naming ncclCommResume). With
// NCCL_SUSPEND_MEM it releases what Braid rebuilds on demand: its chosen schedules, the kept plan
// of a repeated call, and on the device path the progress thread with its pinned staging (once
// the work submitted before has run; the next device call after the resume starts them again).
// Connections and shared-memory rings stay (their peers share them).
BRAID_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags) {
  braid::api::noteClient232();
  std::optional<ncclComm::CallScope> scope;
  if (comm && comm->magic == ncclComm::kMagic) scope.emplace(comm);
  return guard(comm, "ncclCommSuspend", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (flags & ~NCCL_SUSPEND_MEM)
      return braid::invalidArgument("flags 0x%x: only NCCL_SUSPEND_MEM (0x1) is defined", flags);
    comm->suspended.store(true);
    if (flags & NCCL_SUSPEND_MEM) {
      const size_t steps = comm->releaseCaches();
      size_t pinned = 0;
      const Status drained = braid::device::suspend(comm, &pinned);
      BRAID_INFO(kInit,
                 "suspended: released %zu cached schedule steps and %zu bytes of pinned device "
                 "staging",
                 steps, pinned);
      BRAID_TRY(drained.withContext("finishing the device work queued before the suspend"));
    }
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclCommResume, ncclComm_t comm) {
  braid::api::noteClient232();
  return guard(comm, "ncclCommResume", [&]() -> Status {
    BRAID_TRY(braid::api::checkCommHandle(comm));
    if (!comm->suspended.exchange(false))
      return braid::invalidUsage("comm is not suspended (ncclCommSuspend)");
    return Status::Ok();
  });
}

// The statistics count GPU memory. Braid's only GPU memory per communicator is its mailbox where
// its ranks run device collectives on the devices (BRAID_DEVICE_IPC), which stays while suspended
// (peers write into it); otherwise device calls stage through pinned host memory, which a
// suspend releases, and the counts are 0. ncclStatGpuMemSuspended says whether the communicator
// is suspended.
BRAID_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat,
          uint64_t* value) {
  braid::api::noteClient232();
  return guard(comm, "ncclCommMemStats", [&]() -> Status {
    BRAID_TRY(braid::api::checkCommHandle(comm));
    if (!value) return braid::invalidArgument("value is NULL");
    switch (braid::api::enumValue(stat)) {
      case ncclStatGpuMemSuspended: *value = comm->suspended.load() ? 1 : 0; break;
      case ncclStatGpuMemSuspend: *value = 0; break;
      case ncclStatGpuMemPersist:
      case ncclStatGpuMemTotal:
        *value = comm->deviceIpc ? comm->deviceIpc->mailboxBytes() : 0;
        break;
      default:
        return braid::invalidArgument("stat %d is not an ncclCommMemStat_t",
                                      braid::api::enumValue(stat));
    }
    return Status::Ok();
  });
}
