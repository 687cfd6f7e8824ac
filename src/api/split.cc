// Communicators made from others (ncclCommSplit, ncclCommShrink) and ncclCommRevoke, which
// stops a communicator's traffic so that it can be shrunk.
#include "core/comm/split.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "api/guard.h"
#include "api/init.h"
#include "api/stats.h"
#include "core/bootstrap/bootstrap.h"
#include "core/comm/comm.h"
#include "core/comm/config.h"

using braid::Status;
using braid::api::guard;

namespace {

// A NULL config inherits the parent's (blocking, name), as NCCL documents.
Status childRequest(ncclComm* parent, const ncclConfig_t* config, const char* function,
                    braid::InitRequest* request) {
  if (config) {
    BRAID_TRY(braid::readConfig(config, &request->config));
    braid::api::noteClientVersion(request->config.clientVersion);
  } else {
    request->config = parent->config;
  }
  request->onAsyncFailure = [function](ncclComm* c, const Status& st) {
    braid::api::fail(c, function, st);
  };
  request->onReady = braid::api::watchStats;
  return Status::Ok();
}

Status checkExcluded(const ncclComm* comm, const int* list, int count) {
  if (count < 0) return braid::invalidArgument("excludeRanksCount %d is negative", count);
  if (count > 0 && !list)
    return braid::invalidArgument("excludeRanksList is NULL with excludeRanksCount %d", count);
  if (count >= comm->nranks)
    return braid::invalidArgument("excludeRanksCount %d leaves no rank of %d", count, comm->nranks);
  std::vector<bool> seen(comm->nranks, false);
  for (int i = 0; i < count; ++i) {
    const int r = list[i];
    if (r < 0 || r >= comm->nranks)
      return braid::invalidArgument("excludeRanksList[%d] = %d is out of range [0, %d)", i, r,
                                    comm->nranks);
    if (seen[r]) return braid::invalidArgument("excludeRanksList[%d] = %d is listed twice", i, r);
    if (r == comm->rank)
      return braid::invalidArgument(
          "excludeRanksList[%d] = %d is the calling rank: excluded ranks do not call "
          "ncclCommShrink",
          i, r);
    seen[r] = true;
  }
  return Status::Ok();
}

}  // namespace

BRAID_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
          ncclConfig_t* config) {
  std::optional<ncclComm::CallScope> scope;
  if (comm && comm->magic == ncclComm::kMagic) scope.emplace(comm);
  return guard(comm, "ncclCommSplit", [&]() -> Status {
    BRAID_TRY(braid::api::checkCommHandle(comm));
    if (!newcomm) return braid::invalidArgument("newcomm is NULL");
    *newcomm = nullptr;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
      return braid::invalidArgument("color %d is negative and not NCCL_SPLIT_NOCOLOR (-1)", color);
    braid::InitRequest request;
    BRAID_TRY(childRequest(comm, config, "ncclCommSplit", &request));
    return braid::splitComm(comm, color, key, std::move(request), newcomm);
  });
}

BRAID_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
          int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  // NCCL_SHRINK_ABORT waits for the parent's calls to leave, so it may hold the parent only
  // after that; otherwise hold it at once, as every call does.
  std::optional<ncclComm::CallScope> scope;
  if (comm && comm->magic == ncclComm::kMagic && shrinkFlags != NCCL_SHRINK_ABORT)
    scope.emplace(comm);
  return guard(comm, "ncclCommShrink", [&]() -> Status {
    BRAID_TRY(braid::api::checkCommHandle(comm));
    if (!newcomm) return braid::invalidArgument("newcomm is NULL");
    *newcomm = nullptr;
    if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT)
      return braid::invalidArgument(
          "shrinkFlags %d is neither NCCL_SHRINK_DEFAULT (0) nor NCCL_SHRINK_ABORT (1)",
          shrinkFlags);
    BRAID_TRY(checkExcluded(comm, excludeRanksList, excludeRanksCount));
    braid::InitRequest request;
    BRAID_TRY(childRequest(comm, config, "ncclCommShrink", &request));
    if (shrinkFlags == NCCL_SHRINK_ABORT) {
      braid::stopCallsInFlight(comm);
      scope.emplace(comm);
    }
    return braid::shrinkComm(comm, {excludeRanksList, static_cast<size_t>(excludeRanksCount)},
                             std::move(request), newcomm);
  });
}

BRAID_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId) {
  braid::api::noteClient232();
  return guard(comm, "ncclCommGetUniqueId", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (!uniqueId) return braid::invalidArgument("uniqueId is NULL");
    if (comm->growIdPending)
      return braid::invalidUsage(
          "the id this communicator made last has not been used by ncclCommGrow yet (one id at "
          "a time)");
    BRAID_TRY(braid::createUniqueId(&comm->growId));
    comm->growIdPending = true;
    *uniqueId = comm->growId;
    return Status::Ok();
  });
}

// Existing ranks pass their communicator and rank -1 (they keep their ranks), the root with the
// id it made and the others NULL; new ranks pass comm NULL, the id and the rank they are given.
BRAID_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId,
          int rank, ncclComm_t* newcomm, ncclConfig_t* config) {
  braid::api::noteClient232();
  std::optional<ncclComm::CallScope> scope;
  if (comm && comm->magic == ncclComm::kMagic) scope.emplace(comm);
  return guard(comm, "ncclCommGrow", [&]() -> Status {
    if (!newcomm) return braid::invalidArgument("newcomm is NULL");
    *newcomm = nullptr;
    if (!comm) {
      if (!uniqueId)
        return braid::invalidArgument(
            "comm and uniqueId are both NULL: a new rank passes the id the root made");
      if (rank < 0)
        return braid::invalidArgument("rank %d: a new rank (comm NULL) passes the rank it joins as",
                                      rank);
      return braid::api::initRank(newcomm, nRanks, *uniqueId, rank, config, "ncclCommGrow");
    }
    BRAID_TRY(braid::api::checkComm(comm));
    if (rank != -1)
      return braid::invalidArgument("rank %d: an existing rank passes -1 (it keeps its rank, %d)",
                                    rank, comm->rank);
    if (nRanks <= comm->nranks)
      return braid::invalidArgument("nRanks %d does not grow a communicator of %d ranks", nRanks,
                                    comm->nranks);
    if (uniqueId) {
      if (!comm->growIdPending ||
          std::memcmp(uniqueId, &comm->growId, sizeof(ncclUniqueId)) != 0)
        return braid::invalidArgument(
            "uniqueId is not the id ncclCommGetUniqueId made on this communicator (or it was "
            "used already)");
      comm->growIdPending = false;  // one grow per id, whatever the grow's outcome
    }
    braid::InitRequest request;
    BRAID_TRY(childRequest(comm, config, "ncclCommGrow", &request));
    return braid::growComm(comm, nRanks, uniqueId, std::move(request), newcomm);
  });
}

BRAID_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  return guard(comm, "ncclCommRevoke", [&]() -> Status {
    BRAID_TRY(braid::api::checkCommHandle(comm));
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
      return braid::invalidArgument("revokeFlags %d is not NCCL_REVOKE_DEFAULT (0)", revokeFlags);
    // Host collectives run on their callers' threads: once they have left, the communicator is
    // quiescent, so revoke returns with nothing in flight (NCCL reports ncclInProgress until
    // then; here that state is never observable).
    braid::stopCallsInFlight(comm);
    return Status::Ok();
  });
}
