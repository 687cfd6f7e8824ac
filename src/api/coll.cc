// Collective entry points: argument checks, then a plan for the executor (now, or at the
// outermost ncclGroupEnd).
#include <algorithm>
#include <optional>

#include "api/guard.h"
#include "core/async/engine.h"
#include "core/comm/comm.h"
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
    bool onDevice = false;
    BRAID_TRY(
        braid::device::classify(comm, braid::extents(comm, call, sendbuff, recvbuff), &onDevice));
    if (onDevice)
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
  if (braidHostStream* hs = braid::async::hostStream(stream))
    return enqueueOnHostStream(comm, call, sendbuff, recvbuff, hs);
  // Device support only: the host path never asks what its pointers are.
  braid::device::Buffers buffers;
  bool onDevice = false;
  if (braid::device::enabled()) {
    BRAID_TRY(braid::device::checkStream(stream));
    buffers = braid::extents(comm, call, sendbuff, recvbuff);
    BRAID_TRY(braid::device::classify(comm, buffers, &onDevice));
  }
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

}  // namespace

BRAID_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclAllReduce", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
    BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
    Call c{Collective::AllReduce, count, datatype, op, true};
    c.inPlace = sendbuff == recvbuff;
    c.inputCount = count;
    return enqueue(comm, c, sendbuff, recvbuff, stream);
  });
}

BRAID_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclBroadcast", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkRank(comm, root, "root"));
    if (comm->rank == root) BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
    BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
    Call c{Collective::Broadcast, count, datatype};
    c.root = root;
    c.inPlace = sendbuff == recvbuff;
    return enqueue(comm, c, sendbuff, recvbuff, stream);
  });
}

BRAID_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
          ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclBcast", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkRank(comm, root, "root"));
    BRAID_TRY(checkBuffer(buff, count, "buff"));
    Call c{Collective::Broadcast, count, datatype};
    c.root = root;
    c.inPlace = true;
    return enqueue(comm, c, buff, buff, stream);
  });
}

BRAID_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclReduce", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkRank(comm, root, "root"));
    BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
    if (comm->rank == root) BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
    Call c{Collective::Reduce, count, datatype, op, true};
    c.root = root;
    c.inPlace = sendbuff == recvbuff;
    c.inputCount = count;
    return enqueue(comm, c, sendbuff, recvbuff, stream);
  });
}

BRAID_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclAllGather", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkBuffer(sendbuff, sendcount, "sendbuff"));
    BRAID_TRY(checkBuffer(recvbuff, sendcount, "recvbuff"));
    Call c{Collective::AllGather, sendcount, datatype};
    c.inPlace = isBlock(sendbuff, recvbuff, static_cast<size_t>(comm->rank), sendcount, datatype);
    return enqueue(comm, c, sendbuff, recvbuff, stream);
  });
}

BRAID_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclReduceScatter", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkBuffer(sendbuff, recvcount, "sendbuff"));
    BRAID_TRY(checkBuffer(recvbuff, recvcount, "recvbuff"));
    Call c{Collective::ReduceScatter, recvcount, datatype, op, true};
    c.inPlace = isBlock(recvbuff, sendbuff, static_cast<size_t>(comm->rank), recvcount, datatype);
    c.inputCount = recvcount * static_cast<size_t>(comm->nranks);
    return enqueue(comm, c, sendbuff, recvbuff, stream);
  });
}

BRAID_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclAlltoAll", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
    BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
    Call c{Collective::AlltoAll, count, datatype};
    c.inPlace = sendbuff == recvbuff;
    return enqueue(comm, c, sendbuff, recvbuff, stream);
  });
}

BRAID_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclGather", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkRank(comm, root, "root"));
    BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
    if (comm->rank == root) BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
    Call c{Collective::Gather, count, datatype};
    c.root = root;
    c.inPlace = comm->rank == root &&
                isBlock(sendbuff, recvbuff, static_cast<size_t>(root), count, datatype);
    return enqueue(comm, c, sendbuff, recvbuff, stream);
  });
}

BRAID_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclScatter", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkRank(comm, root, "root"));
    if (comm->rank == root) BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
    BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
    Call c{Collective::Scatter, count, datatype};
    c.root = root;
    c.inPlace = comm->rank == root &&
                isBlock(recvbuff, sendbuff, static_cast<size_t>(root), count, datatype);
    return enqueue(comm, c, sendbuff, recvbuff, stream);
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
