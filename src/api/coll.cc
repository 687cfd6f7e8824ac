// Collective entry points: argument checks, then a plan for the executor (now, or at the
// outermost ncclGroupEnd).
#include <algorithm>
#include <optional>

#include "api/guard.h"
#include "core/comm.h"
#include "core/group.h"
#include "kernels/reduce.h"

using braid::Status;
using braid::api::guard;

namespace {

Status checkType(ncclDataType_t type) {
  if (static_cast<int>(type) < 0 || static_cast<int>(type) >= ncclNumTypes)
    return braid::invalidArgument("datatype %d is not an NCCL data type", static_cast<int>(type));
  return Status::Ok();
}

Status checkOp(ncclRedOp_t op) {
  if (static_cast<int>(op) < 0 || static_cast<int>(op) >= ncclNumOps)
    return braid::invalidArgument("op %d is not a built-in reduction (ncclSum..ncclAvg) and no "
                                  "custom op with that handle exists", static_cast<int>(op));
  return Status::Ok();
}

Status checkBuffer(const void* buf, size_t count, const char* name) {
  if (!buf && count > 0) return braid::invalidArgument("%s is NULL with count %zu", name, count);
  return Status::Ok();
}

// Plans one collective; in a group the plan waits for ncclGroupEnd.
Status enqueue(ncclComm* comm, braid::algos::CollArgs args, const void* sendbuff, void* recvbuff,
               ncclDataType_t type, ncclRedOp_t op) {
  args.rank = comm->rank;
  args.nranks = comm->nranks;
  args.typeSize = braid::kernels::typeSize(type);
  args.chunkCount = std::max<size_t>(1, comm->chunkBytes / args.typeSize);
  args.directMaxBytes = comm->directMaxBytes;
  const auto* algo = braid::algos::selectAlgorithm(args, comm->forcedAlgorithm);
  if (!algo) return braid::internalError("no algorithm supports this call");

  braid::Plan plan;
  plan.comm = comm;
  plan.schedule = comm->schedule(*algo, args);
  plan.sendbuff = sendbuff;
  plan.recvbuff = recvbuff;
  plan.type = type;
  plan.op = op == ncclAvg ? ncclSum : op;
  plan.coll = args.coll;
  plan.count = args.count;
  plan.userOp = op;
  comm->opCount++;
  return braid::group::submit(std::move(plan));
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

}  // namespace

BRAID_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, "ncclAllReduce", [&]() -> Status {
    BRAID_TRY(checkType(datatype));
    BRAID_TRY(checkOp(op));
    BRAID_TRY(checkBuffer(sendbuff, count, "sendbuff"));
    BRAID_TRY(checkBuffer(recvbuff, count, "recvbuff"));
    if (count == 0) return Status::Ok();
    braid::algos::CollArgs args;
    args.coll = braid::algos::Collective::AllReduce;
    args.count = count;
    args.average = op == ncclAvg;
    args.inPlace = sendbuff == recvbuff;
    return enqueue(comm, args, sendbuff, recvbuff, datatype, op);
  });
}
