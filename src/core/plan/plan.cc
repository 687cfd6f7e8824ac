#include "core/plan/plan.h"

#include <algorithm>
#include <atomic>

#include "core/comm/comm.h"
#include "core/plan/compression.h"
#include "kernels/reduce.h"

namespace braid {

using algos::Collective;

device::Buffers extents(const ncclComm* comm, const Call& call, const void* sendbuff,
                        const void* recvbuff) {
  const size_t bytes = call.count * kernels::typeSize(call.type);
  const size_t all = bytes * static_cast<size_t>(comm->nranks);
  const bool root = comm->rank == call.root;
  size_t send = bytes, recv = bytes;
  switch (call.coll) {
    case Collective::Broadcast: send = root ? bytes : 0; break;
    case Collective::Reduce: recv = root ? bytes : 0; break;
    case Collective::AllGather: recv = all; break;
    case Collective::ReduceScatter: send = all; break;
    case Collective::AlltoAll: send = recv = all; break;
    case Collective::Gather: recv = root ? all : 0; break;
    case Collective::Scatter: send = root ? all : 0; break;
    case Collective::Send: recv = 0; break;
    case Collective::Recv: send = 0; break;
    default: break;
  }
  return {sendbuff, send, recvbuff, recv};
}

Status makePlan(ncclComm* comm, const Call& call, const ResolvedOp& op, const void* sendbuff,
                void* recvbuff, Plan* plan) {
  algos::CollArgs args;
  args.coll = call.coll;
  args.count = call.count;
  args.average = op.average;
  args.root = call.root < 0 ? 0 : call.root;
  // PreMulSum runs out of place: the executor scales the input into a buffer of its own.
  args.inPlace = call.inPlace && !op.preMul;
  args.rank = comm->rank;
  args.nranks = comm->nranks;
  args.typeSize = kernels::typeSize(call.type);
  args.chunkCount = std::max<size_t>(1, comm->chunkBytes / args.typeSize);
  args.directMaxBytes = comm->directMaxBytes;
  args.topology = &comm->topology;
  args.type = call.type;
  plan->comm = comm;
  if (call.reduces && !op.preMul) {
    CompressCall cc;
    cc.policy = op.compressed ? &op.compress : nullptr;
    cc.type = call.type;
    cc.sumOrAvg = op.reduce == ncclSum;
    cc.sendbuff = sendbuff;
    BRAID_TRY(applyCompression(comm, cc, &args, plan));
  }
  BRAID_TRY(comm->schedule(args, &plan->schedule, &plan->estimateUs));
  plan->sendbuff = sendbuff;
  plan->recvbuff = recvbuff;
  plan->type = call.type;
  plan->op = op.reduce;
  plan->coll = call.coll;
  plan->count = call.count;
  // A compressed op is Sum or Avg to the other ranks (its compression travels separately).
  plan->userOp = !call.reduces   ? ncclSum
                 : op.compressed ? (op.average ? ncclAvg : ncclSum)
                                 : call.op;
  plan->reduces = call.reduces;
  plan->root = call.root;
  if (op.preMul) {
    plan->preMul = true;
    plan->scalarBits = op.scalarBits;
    plan->scalarPtr = op.scalarPtr;
    plan->inputCount = call.inputCount;
  }
  return Status::Ok();
}

namespace {

// Whether a plan made for `call` may run again for the same call: nothing in it is per call.
bool repeatable(const ncclComm* comm, const Call& call, const Plan& plan) {
  const bool builtInOp = !call.reduces || static_cast<int>(call.op) < ncclNumOps;
  return builtInOp && !plan.onDevice && !plan.preMul && !plan.codec &&
         !comm->compression.defaultCompresses();
}

}  // namespace

Plan* RepeatPlan::find(const ncclComm* comm, const Call& call, const void* sendbuff,
                       const void* recvbuff) {
  if (!valid_ || plan_.sendbuff != sendbuff || plan_.recvbuff != recvbuff || !(call_ == call) ||
      comm->compression.defaultCompresses())
    return nullptr;
  return &plan_;
}

Plan* RepeatPlan::keep(const ncclComm* comm, const Call& call, Plan* plan) {
  if (!repeatable(comm, call, *plan)) return plan;
  static std::atomic<uint64_t> lastId{0};
  call_ = call;
  plan_ = std::move(*plan);
  plan_.keptId = lastId.fetch_add(1, std::memory_order_relaxed) + 1;
  valid_ = true;
  return &plan_;
}

}  // namespace braid
