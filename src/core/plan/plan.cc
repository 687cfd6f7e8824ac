#include "core/plan/plan.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include <unistd.h>

#include "core/comm/comm.h"
#include "core/plan/compression.h"
#include "kernels/reduce.h"

namespace braid {

using algos::Collective;

namespace {

// How many blocks of count x type size a buffer of this rank's part of the call holds: 0, 1 or
// nranks (NCCL leaves a buffer unused on some ranks: the root's role).
struct Blocks {
  size_t send = 1, recv = 1;
};

Blocks blocksOf(const ncclComm* comm, const Call& call) {
  const size_t n = static_cast<size_t>(comm->nranks);
  const size_t root = comm->rank == call.root ? 1 : 0;
  switch (call.coll) {
    case Collective::Broadcast: return {root, 1};
    case Collective::Reduce: return {1, root};
    case Collective::AllGather: return {1, n};
    case Collective::ReduceScatter: return {n, 1};
    case Collective::AlltoAll: return {n, n};
    case Collective::Gather: return {1, root * n};
    case Collective::Scatter: return {root * n, 1};
    case Collective::Send: return {1, 0};
    case Collective::Recv: return {0, 1};
    default: return {};
  }
}

// What the executor allocates to run a schedule (scratch, codec messages, the fp32 accumulator)
// must fit in this host's memory: a larger allocation would fail only later, or swap the host.
Status checkPlanMemory(const algos::Schedule& schedule, size_t typeSize) {
  size_t scratch = 0, accum = 0, total = 0;
  const bool overflows = __builtin_mul_overflow(schedule.scratchCount, typeSize, &scratch) ||
                         __builtin_mul_overflow(schedule.accumCount, sizeof(float), &accum) ||
                         __builtin_add_overflow(scratch, accum, &total) ||
                         __builtin_add_overflow(total, schedule.packedBytes, &total);
  const long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGESIZE);
  const double host = pages > 0 && pageSize > 0 ? double(pages) * double(pageSize) : 0;
  if (overflows || (host > 0 && double(total) > host))
    return systemError(
        "algorithm %s needs %s bytes of working memory for this call (scratch %zu elements, "
        "codec messages %zu bytes, accumulator %zu floats), more than this host's %.0f bytes",
        schedule.algorithm.c_str(), overflows ? "more than 2^64" : strfmt("%zu", total).c_str(),
        schedule.scratchCount, schedule.packedBytes, schedule.accumCount, host);
  return Status::Ok();
}

}  // namespace

device::Buffers extents(const ncclComm* comm, const Call& call, const void* sendbuff,
                        const void* recvbuff) {
  const size_t bytes = call.count * kernels::typeSize(call.type);
  const Blocks blocks = blocksOf(comm, call);
  return {sendbuff, bytes * blocks.send, recvbuff, bytes * blocks.recv};
}

Status checkExtents(const ncclComm* comm, const Call& call, const void* sendbuff,
                    const void* recvbuff) {
  const size_t typeSize = kernels::typeSize(call.type);
  const Blocks blocks = blocksOf(comm, call);
  auto check = [&](const char* name, const void* buf, size_t nblocks) -> Status {
    size_t bytes = 0;
    const bool overflows = __builtin_mul_overflow(call.count, typeSize, &bytes) ||
                           __builtin_mul_overflow(bytes, nblocks, &bytes);
    uintptr_t end = 0;
    if (overflows || bytes > static_cast<size_t>(PTRDIFF_MAX) ||
        __builtin_add_overflow(reinterpret_cast<uintptr_t>(buf), bytes, &end)) {
      const std::string times = nblocks > 1 ? strfmt(" x %zu ranks", nblocks) : std::string();
      return invalidArgument(
          "count %zu of %s (%zu-byte elements)%s is larger than any %s can be (%s)", call.count,
          kernels::typeName(call.type), typeSize, times.c_str(), name,
          overflows || bytes > static_cast<size_t>(PTRDIFF_MAX)
              ? "over 2^63 bytes"
              : "it would run past the end of the address space");
    }
    return Status::Ok();
  };
  if (blocks.send > 0) BRAID_TRY(check("sendbuff", sendbuff, blocks.send));
  if (blocks.recv > 0) BRAID_TRY(check("recvbuff", recvbuff, blocks.recv));
  return Status::Ok();
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
  args.chunkCount =
      algos::pipelineChunk(call.coll, call.count, comm->nranks, args.typeSize, comm->chunkBytes);
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
  BRAID_TRY(comm->schedule(args, &plan->schedule, &plan->estimateUs, call.selection));
  BRAID_TRY(checkPlanMemory(*plan->schedule, args.typeSize));
  plan->sendbuff = sendbuff;
  plan->recvbuff = recvbuff;
  plan->type = call.type;
  plan->op = op.reduce;
  plan->coll = call.coll;
  plan->count = call.count;
  plan->profilerTag = call.profilerTag;
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
