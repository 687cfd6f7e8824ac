// Communicator lifecycle: unique ids, init (blocking and not), finalize, destroy, abort, and the
// small queries.
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "api/guard.h"
#include "api/init.h"
#include "api/stats.h"
#include "base/env.h"
#include "base/log.h"
#include "core/async/engine.h"
#include "core/bootstrap/bootstrap.h"
#include "core/comm/comm.h"
#include "core/comm/comm_init.h"
#include "core/comm/config.h"
#include "core/device/device.h"
#include "core/variables.h"

using braid::Status;
using braid::api::guard;

namespace braid::api {

Status checkCommHandle(ncclComm* comm, const char* name) {
  if (!comm) return invalidArgument("%s is NULL", name);
  if (comm->magic != ncclComm::kMagic)
    return invalidArgument("%s %p is not a communicator (destroyed, or never initialised)", name,
                           static_cast<void*>(comm));
  if (comm->abortFlag.load()) return invalidUsage("%s was aborted", name);
  if (comm->asyncError.load() == ncclInProgress)
    return {ncclInvalidUsage, strfmt("%s is still initialising", name)};
  return Status::Ok();
}

Status checkComm(ncclComm* comm, const char* name) {
  BRAID_TRY(checkCommHandle(comm, name));
  if (comm->revoked.load())
    return invalidUsage(
        "%s was revoked (ncclCommRevoke); only shrink, split, destroy and abort "
        "may use it",
        name);
  if (comm->suspended.load())
    return invalidUsage("%s is suspended (ncclCommSuspend): ncclCommResume it first", name);
  ncclResult_t err = comm->asyncError.load();
  if (err != ncclSuccess)
    return {err,
            strfmt("%s failed earlier and cannot be used: %s", name, comm->lastError().c_str())};
  return Status::Ok();
}

}  // namespace braid::api

namespace braid::api {

Status initRank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                const ncclConfig_t* config, const char* function, int cudaDev) {
  if (!out) return braid::invalidArgument("comm is NULL");
  *out = nullptr;
  if (nranks < 1) return braid::invalidArgument("nranks %d is less than 1", nranks);
  if (rank < 0 || rank >= nranks)
    return braid::invalidArgument("rank %d is out of range [0, %d)", rank, nranks);
  BRAID_TRY(braid::validateUniqueId(id).withContext("commId"));
  braid::InitRequest request;
  BRAID_TRY(braid::readConfig(config, &request.config));
  if (config) braid::api::noteClientVersion(request.config.clientVersion);
  request.id = id;
  request.nranks = nranks;
  request.rank = rank;
  request.cudaDev = cudaDev;
  // Under NCCL_COMM_ID, rank 0 hosts the root listener itself.
  request.hostRoot = rank == 0 && braid::env::isSet(braid::env::kNcclCommId);
  request.onAsyncFailure = [function](ncclComm* c, const Status& st) {
    braid::api::fail(c, function, st);
  };
  request.onReady = braid::api::watchStats;
  return braid::createComm(request, out);
}

}  // namespace braid::api

namespace {

using braid::api::initRank;

// Frees a communicator no call is using any more.
void release(ncclComm* comm) {
  if (comm->initThread.joinable()) {
    comm->abortFlag.store(true);
    if (comm->bootstrap) comm->bootstrap->abort();
    comm->initThread.join();
  }
  braid::api::unwatchStats(comm);
  braid::api::logStatsSummary(comm);
  braid::async::shutdown(comm);
  braid::device::shutdown(comm);
  comm->magic = 0;
  delete comm;
}

}  // namespace

BRAID_API(ncclResult_t, ncclGetVersion, int* version) {
  return guard(nullptr, "ncclGetVersion", [&] {
    if (!version) return braid::invalidArgument("version is NULL");
    *version = NCCL_VERSION_CODE;
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  return guard(nullptr, "ncclGetUniqueId", [&] {
    if (!uniqueId) return braid::invalidArgument("uniqueId is NULL");
    braid::logVersionOnce();
    if (const char* commId = braid::env::get(braid::env::kNcclCommId))
      return braid::uniqueIdFromCommId(commId, uniqueId);
    return braid::createUniqueId(uniqueId);
  });
}

BRAID_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
          int rank) {
  return guard(nullptr, "ncclCommInitRank",
               [&] { return initRank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank"); });
}

BRAID_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
          int rank, ncclConfig_t* config) {
  return guard(nullptr, "ncclCommInitRankConfig", [&] {
    return initRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
  });
}

// One rendezvous through commIds[0] for every rank. NCCL spreads ranks over the roots to speed
// up very large inits; here each root already serves any number of ranks, so the other ids are
// only validated, and their root threads (if this process made them) expire unused after
// BRAID_BOOTSTRAP_ROOT_TIMEOUT_MS.
BRAID_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
          int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  return guard(nullptr, "ncclCommInitRankScalable", [&]() -> Status {
    if (nId < 1) return braid::invalidArgument("nId %d is less than 1", nId);
    if (!commIds) return braid::invalidArgument("commIds is NULL with nId %d", nId);
    if (nId > nranks && nranks >= 1)
      return braid::invalidArgument("nId %d exceeds nranks %d (at most one id per rank)", nId,
                                    nranks);
    for (int i = 1; i < nId; ++i)
      BRAID_TRY(braid::validateUniqueId(commIds[i]).withContext(braid::strfmt("commIds[%d]", i)));
    return initRank(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
  });
}

BRAID_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  return guard(nullptr, "ncclCommInitAll", [&]() -> Status {
    if (!comms) return braid::invalidArgument("comm is NULL");
    if (ndev < 1) return braid::invalidArgument("ndev %d is less than 1", ndev);
    // Threads as ranks: one rendezvous, each rank initialised on its own thread.
    // The id must not come from NCCL_COMM_ID here: this process owns the whole communicator.
    ncclUniqueId id;
    BRAID_TRY(braid::createUniqueId(&id));
    std::vector<Status> results(ndev);
    std::vector<std::thread> threads;
    // Rank r on devlist[r] (device r without a list), as NCCL; Braid also allows several ranks
    // on one device, so with fewer devices than ranks, ranks share them round-robin.
    std::vector<int> devices(ndev, -1);
    braid::device::probe();
    if (braid::device::enabled()) {
      int count = 0;
      BRAID_TRY(braid::device::deviceCount(&count));
      for (int r = 0; r < ndev; ++r) devices[r] = devlist ? devlist[r] : r % count;
    }
    for (int r = 0; r < ndev; ++r)
      threads.emplace_back([&, r] {
        results[r] = initRank(&comms[r], ndev, id, r, nullptr, "ncclCommInitAll", devices[r]);
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < ndev; ++r) {
      if (!results[r].ok()) {
        for (int k = 0; k < ndev; ++k)
          if (comms[k]) release(comms[k]), comms[k] = nullptr;
        return results[r].withContext(braid::strfmt("rank %d", r));
      }
    }
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  return guard(comm, "ncclCommFinalize", [&] {
    // Blocking host collectives complete before their call returns; host-stream and device
    // ones are flushed through the communicator's progress threads.
    BRAID_TRY(braid::api::checkComm(comm));
    BRAID_TRY(braid::async::drain(comm));
    return braid::device::drain(comm);
  });
}

BRAID_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  return guard(nullptr, "ncclCommDestroy", [&]() -> Status {
    if (!comm) return Status::Ok();  // NCCL accepts NULL here
    if (comm->magic != ncclComm::kMagic)
      return braid::invalidArgument("comm %p is not a communicator", static_cast<void*>(comm));
    comm->waitForCalls();
    release(comm);
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  return guard(nullptr, "ncclCommAbort", [&]() -> Status {
    if (!comm) return Status::Ok();
    if (comm->magic != ncclComm::kMagic)
      return braid::invalidArgument("comm %p is not a communicator", static_cast<void*>(comm));
    // Unblock whatever is in flight on other threads, wait for those calls to leave, then free.
    comm->abortFlag.store(true);
    if (comm->bootstrap) comm->bootstrap->abort();
    comm->waitForCalls();
    release(comm);
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  return guard(comm, "ncclCommGetAsyncError", [&]() -> Status {
    if (!comm) return braid::invalidArgument("comm is NULL");
    if (!asyncError) return braid::invalidArgument("asyncError is NULL");
    if (comm->magic != ncclComm::kMagic)
      return braid::invalidArgument("comm is not a communicator");
    *asyncError = braid::api::clientCode(comm->asyncError.load());
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return guard(comm, "ncclCommCount", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (!count) return braid::invalidArgument("count is NULL");
    *count = comm->nranks;
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return guard(comm, "ncclCommUserRank", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (!rank) return braid::invalidArgument("rank is NULL");
    *rank = comm->rank;
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return guard(comm, "ncclCommCuDevice", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (!device) return braid::invalidArgument("device is NULL");
    *device = comm->cudaDev;  // -1 without device support: bound to no CUDA device
    return Status::Ok();
  });
}

BRAID_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "operation timed out (run with NCCL_DEBUG=WARN for details)";
    default: return "unknown result code";
  }
}

BRAID_API(const char*, ncclGetLastError, ncclComm_t comm) {
  // The returned pointer stays valid until the next failure on this thread.
  thread_local std::string text;
  if (comm && comm->magic == ncclComm::kMagic) {
    text = comm->lastError();
    if (!text.empty()) return text.c_str();
  }
  text = braid::api::globalLastError();
  return text.c_str();
}

BRAID_API(void, ncclResetDebugInit, void) { braid::log::reset(); }

// NCCL exports this internal name too; programs that link it expect it to exist.
extern "C" __attribute__((visibility("default"))) void ncclResetDebugInitInternal(void) {
  braid::log::reset();
}
