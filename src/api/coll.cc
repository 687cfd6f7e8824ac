// Collective entry points: argument checks, then a plan for the executor (now, or at the
// outermost ncclGroupEnd).
#include <algorithm>
#include <optional>

#include "api/guard.h"
#include "core/adapt/adapt.h"
#include "core/async/engine.h"
#include "core/comm/comm.h"
#include "core/comm/config.h"
#include "core/device/device.h"
#include "core/plan/group.h"
#include "core/plan/plan.h"
#include "kernels/reduce.h"

using braid::Status;
using braid::api::guard;

namespace {

using braid::algos::Collective;

// By reference: the check reads the caller's int (braid::api::enumValue).
Status checkType(const ncclDataType_t& type) {
  const int v = braid::api::enumValue(type);
  if (v < 0 || v >= ncclNumTypes)
    return braid::invalidArgument("datatype %d is not an NCCL data type", v);
  return Status::Ok();
}

Status checkBuffer(const void* buf, size_t count, const char* name) {
  if (!buf && count > 0) return braid::invalidArgument("%s is NULL with count %zu", name, count);
  return Status::Ok();
}

Status checkRank(const ncclComm* comm, int r, const char* name) {
  if (r < 0 || r >= comm->nranks)
    return braid::invalidArgument("%s %d is out of range [0, %d)", name, r, comm->nranks);
  return Status::Ok();
}

using braid::Call;

// A failed call leaves nothing to repeat (its communicator is failed anyway).
Status ranKept(ncclComm* comm, Status st) {
  if (!st.ok()) comm->repeat.clear();
  return st;
}

// A call on a host stream: planned on the lane of the stream's priority class and queued
// (core/async/engine.h), or kept for the group's end.
Status enqueueOnHostStream(ncclComm* comm, const Call& call, const void* sendbuff, void* recvbuff,
                           braidHostStream* stream) {
  if (braid::device::enabled()) {
    braid::device::Placement where;
    BRAID_TRY(braid::device::classify(comm, braid::extents(comm, call, sendbuff, recvbuff),
                                      /*pinnedInStreamOrder=*/false, &where));
    if (where.onDevice)
      return braid::invalidArgument(
          "stream is a Braid host stream but the buffers are device memory: host streams "
          "carry host-memory calls only (pass a CUDA stream)");
  }
  braid::ResolvedOp op;
  if (call.reduces) BRAID_TRY(comm->redOps.resolve(call.op, call.type, &op));
  if (call.count == 0) return Status::Ok();
  ncclComm* lane = nullptr;
  BRAID_TRY(braid::async::laneFor(comm, stream, &lane));
  braid::Plan plan;
  BRAID_TRY(braid::makePlan(lane, call, op, sendbuff, recvbuff, &plan));
  plan.hostStream = stream;
  return braid::group::submit(std::move(plan));
}

// Plans one call (or takes the plan of the same call made last time); in a group the plan
// waits for ncclGroupEnd.
Status enqueue(ncclComm* comm, const Call& call, const void* sendbuff, void* recvbuff,
               cudaStream_t stream) {
  BRAID_TRY(braid::checkExtents(comm, call, sendbuff, recvbuff));
  BRAID_TRY(braid::adapt::beforeCall(comm, call));
  if (braidHostStream* hs = braid::async::hostStream(stream))
    return enqueueOnHostStream(comm, call, sendbuff, recvbuff, hs);
  // Device support only: the host path never asks what its pointers are, nor what its stream is
  // (a NULL stream names the legacy stream, which a capture elsewhere makes unqueryable).
  braid::device::Buffers buffers;
  braid::device::Placement where;
  if (braid::device::enabled()) {
    buffers = braid::extents(comm, call, sendbuff, recvbuff);
    BRAID_TRY(braid::device::classify(comm, buffers, /*pinnedInStreamOrder=*/true, &where));
    if (where.onDevice) BRAID_TRY(braid::device::checkStream(stream));
  }
  const bool onDevice = where.onDevice;
  const bool now = !onDevice && !braid::group::active();
  // A repeat's op was resolved when its plan was kept (built-in ops only: always the same).
  if (now && call.count > 0) {
    if (braid::Plan* kept = comm->repeat.find(comm, call, sendbuff, recvbuff))
      return ranKept(comm, braid::group::runNow(*kept));
  }
  braid::ResolvedOp op;
  if (call.reduces) BRAID_TRY(comm->redOps.resolve(call.op, call.type, &op));
  if (call.count == 0) return Status::Ok();
  braid::Plan plan;
  BRAID_TRY(braid::makePlan(comm, call, op, sendbuff, recvbuff, &plan));
  if (onDevice) {
    plan.onDevice = true;
    plan.sendPinned = where.sendPinned;
    plan.recvPinned = where.recvPinned;
    plan.stream = stream;
    plan.sendBytes = buffers.sendBytes;
    plan.recvBytes = buffers.recvBytes;
  }
  if (!now) return braid::group::submit(std::move(plan));
  return ranKept(comm, braid::group::runNow(*comm->repeat.keep(comm, call, &plan)));
}

// Runs `body` as one collective call: comm checked and held for the whole call (so that
// ncclCommAbort on another thread waits for it, error reporting included), and an error inside
// a group also fails its ncclGroupEnd.
template <typename Body>
ncclResult_t collective(ncclComm* comm, const char* name, Body&& body) {
  std::optional<ncclComm::CallScope> scope;
  if (comm && comm->magic == ncclComm::kMagic) scope.emplace(comm);
  return guard(comm, name, [&]() -> Status {
    Status st = braid::api::checkComm(comm);
    if (st.ok()) st = body();
    if (!st.ok()) braid::group::recordError(st.withContext(name));
    return st;
  });
}

// NCCL's in-place rule for the block collectives: `inner` is block `index` of `outer`, blocks of
// `count` elements of `type`.
bool isBlock(const void* inner, const void* outer, size_t index, size_t count,
             ncclDataType_t type) {
  return static_cast<const char*>(inner) ==
         static_cast<const char*>(outer) + index * count * braid::kernels::typeSize(type);
}

// What a per-call config (the nccl<Collective>Config forms, NCCL 2.32) adds to a call: its
// algorithm selection on the Call, and the event to record once the call is launched.
Status readCallConfig(ncclComm* comm, const ncclCollConfig_t* config, Call* call,
                      cudaEvent_t* launchEvent) {
  *launchEvent = nullptr;
  if (!config) return Status::Ok();
  braid::CollConfig cfg;
  BRAID_TRY(braid::readCollConfig(config, &cfg));
  braid::api::noteClientVersion(cfg.clientVersion);
  if (cfg.algSelection)
    BRAID_TRY(comm->selections.intern(cfg.algSelection, cfg.forceAlgSelection, &call->selection));
  *launchEvent = cfg.launchCompletionEvent;
  call->profilerTag = cfg.userProfilerTag;
  if (*launchEvent && !braid::device::enabled())
    return braid::invalidArgument(
        "config->launchCompletionEvent %p: this process has no CUDA device support, so there is "
        "no event to record",
        static_cast<void*>(*launchEvent));
  return Status::Ok();
}

// Enqueues a call made with (or without) a per-call config.
Status enqueueWith(ncclComm* comm, Call& call, const ncclCollConfig_t* config,
                   const void* sendbuff, void* recvbuff, cudaStream_t stream) {
  cudaEvent_t launchEvent = nullptr;
  BRAID_TRY(readCallConfig(comm, config, &call, &launchEvent));
  BRAID_TRY(enqueue(comm, call, sendbuff, recvbuff, stream));
  if (launchEvent) BRAID_TRY(braid::group::recordAfterLaunch(launchEvent, stream));
  return Status::Ok();
}


// Each collective takes an optional per-call config (null: the plain call); the plain entry
// point and its Config twin share it. The type and op come by reference: a caller's value outside
// the enum is read only as bytes (checkType, the op table) until it checked out.

Status allReduce(const void* sendbuff, void* recvbuff, size_t count, const ncclDataType_t& datatype,
                 const ncclRedOp_t& op, ncclComm_t comm, cudaStream_t stream,
                 const ncclCollConfig_t* config) {
  BRAID_TRY(checkType(datatype));
  BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
  BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
  Call c{Collective::AllReduce, count, datatype, op, true};
  c.inPlace = sendbuff == recvbuff;
  c.inputCount = count;
  return enqueueWith(comm, c, config, sendbuff, recvbuff, stream);
}

Status broadcast(const void* sendbuff, void* recvbuff, size_t count, const ncclDataType_t& datatype,
                 int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  BRAID_TRY(checkType(datatype));
  BRAID_TRY(checkRank(comm, root, "root"));
  if (comm->rank == root) BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
  BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
  Call c{Collective::Broadcast, count, datatype};
  c.root = root;
  c.inPlace = sendbuff == recvbuff;
  return enqueueWith(comm, c, config, sendbuff, recvbuff, stream);
}

Status reduce(const void* sendbuff, void* recvbuff, size_t count, const ncclDataType_t& datatype,
              const ncclRedOp_t& op, int root, ncclComm_t comm, cudaStream_t stream,
              const ncclCollConfig_t* config) {
  BRAID_TRY(checkType(datatype));
  BRAID_TRY(checkRank(comm, root, "root"));
  BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
  if (comm->rank == root) BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
  Call c{Collective::Reduce, count, datatype, op, true};
  c.root = root;
  c.inPlace = sendbuff == recvbuff;
  c.inputCount = count;
  return enqueueWith(comm, c, config, sendbuff, recvbuff, stream);
}

Status allGather(const void* sendbuff, void* recvbuff, size_t sendcount, const ncclDataType_t& datatype,
                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  BRAID_TRY(checkType(datatype));
  BRAID_TRY(checkBuffer(sendbuff, sendcount, "sendbuff"));
  BRAID_TRY(checkBuffer(recvbuff, sendcount, "recvbuff"));
  Call c{Collective::AllGather, sendcount, datatype};
  c.inPlace = isBlock(sendbuff, recvbuff, static_cast<size_t>(comm->rank), sendcount, datatype);
  return enqueueWith(comm, c, config, sendbuff, recvbuff, stream);
}

Status reduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                     const ncclDataType_t& datatype, const ncclRedOp_t& op, ncclComm_t comm,
                     cudaStream_t stream, const ncclCollConfig_t* config) {
  BRAID_TRY(checkType(datatype));
  BRAID_TRY(checkBuffer(sendbuff, recvcount, "sendbuff"));
  BRAID_TRY(checkBuffer(recvbuff, recvcount, "recvbuff"));
  Call c{Collective::ReduceScatter, recvcount, datatype, op, true};
  c.inPlace = isBlock(recvbuff, sendbuff, static_cast<size_t>(comm->rank), recvcount, datatype);
  c.inputCount = recvcount * static_cast<size_t>(comm->nranks);
  return enqueueWith(comm, c, config, sendbuff, recvbuff, stream);
}

Status alltoAll(const void* sendbuff, void* recvbuff, size_t count, const ncclDataType_t& datatype,
                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  BRAID_TRY(checkType(datatype));
  BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
  BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
  Call c{Collective::AlltoAll, count, datatype};
  c.inPlace = sendbuff == recvbuff;
  return enqueueWith(comm, c, config, sendbuff, recvbuff, stream);
}

Status gather(const void* sendbuff, void* recvbuff, size_t count, const ncclDataType_t& datatype,
              int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  BRAID_TRY(checkType(datatype));
  BRAID_TRY(checkRank(comm, root, "root"));
  BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
  if (comm->rank == root) BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
  Call c{Collective::Gather, count, datatype};
  c.root = root;
  c.inPlace =
      comm->rank == root && isBlock(sendbuff, recvbuff, static_cast<size_t>(root), count, datatype);
  return enqueueWith(comm, c, config, sendbuff, recvbuff, stream);
}

Status scatter(const void* sendbuff, void* recvbuff, size_t count, const ncclDataType_t& datatype,
               int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  BRAID_TRY(checkType(datatype));
  BRAID_TRY(checkRank(comm, root, "root"));
  if (comm->rank == root) BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
  BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
  Call c{Collective::Scatter, count, datatype};
  c.root = root;
  c.inPlace =
      comm->rank == root && isBlock(recvbuff, sendbuff, static_cast<size_t>(root), count, datatype);
  return enqueueWith(comm, c, config, sendbuff, recvbuff, stream);
}

}  // namespace

// The plain entry point and its Config twin (NCCL 2.32; a client of it counts as 2.32's).
#define BRAID_COLLECTIVE(Name, impl, params, ...)                                                 \
  BRAID_API(ncclResult_t, nccl##Name, BRAID_UNPAREN params, ncclComm_t comm,                      \
            cudaStream_t stream) {                                                                \
    return collective(comm, "nccl" #Name,                                                         \
                      [&]() -> Status { return impl(__VA_ARGS__, comm, stream, nullptr); });      \
  }                                                                                               \
  BRAID_API(ncclResult_t, nccl##Name##Config, BRAID_UNPAREN params, ncclComm_t comm,              \
            cudaStream_t stream, const ncclCollConfig_t* config) {                                \
    braid::api::noteClient232();                                                                  \
    return collective(comm, "nccl" #Name "Config",                                                \
                      [&]() -> Status { return impl(__VA_ARGS__, comm, stream, config); });       \
  }
#define BRAID_UNPAREN(...) __VA_ARGS__

BRAID_COLLECTIVE(AllReduce, allReduce,
                 (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                  ncclRedOp_t op),
                 sendbuff, recvbuff, count, datatype, op)
BRAID_COLLECTIVE(Broadcast, broadcast,
                 (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                  int root),
                 sendbuff, recvbuff, count, datatype, root)
BRAID_COLLECTIVE(Reduce, reduce,
                 (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                  ncclRedOp_t op, int root),
                 sendbuff, recvbuff, count, datatype, op, root)
BRAID_COLLECTIVE(AllGather, allGather,
                 (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype),
                 sendbuff, recvbuff, sendcount, datatype)
BRAID_COLLECTIVE(ReduceScatter, reduceScatter,
                 (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                  ncclRedOp_t op),
                 sendbuff, recvbuff, recvcount, datatype, op)
BRAID_COLLECTIVE(AlltoAll, alltoAll,
                 (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype),
                 sendbuff, recvbuff, count, datatype)
BRAID_COLLECTIVE(Gather, gather,
                 (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                  int root),
                 sendbuff, recvbuff, count, datatype, root)
BRAID_COLLECTIVE(Scatter, scatter,
                 (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                  int root),
                 sendbuff, recvbuff, count, datatype, root)

BRAID_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
          ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclBcast", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkRank(comm, root, "root"));
    BRAID_TRY(checkBuffer(buff, count, "buff"));
    return broadcast(buff, buff, count, datatype, root, comm, stream, nullptr);
  });
}

BRAID_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
          int peer, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclSend", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkRank(comm, peer, "peer"));
    BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
    Call c{Collective::Send, count, datatype};
    c.root = peer;
    return enqueue(comm, c, sendbuff, nullptr, stream);
  });
}

BRAID_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
          ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclRecv", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkRank(comm, peer, "peer"));
    BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
    Call c{Collective::Recv, count, datatype};
    c.root = peer;
    return enqueue(comm, c, nullptr, recvbuff, stream);
  });
}
