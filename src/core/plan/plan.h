// From one call as the user made it to the Plan the executor runs: what the collective entry
// points (api/coll.cc) do after their argument checks, and what tests that drive the executor or
// the stream proxy directly do too.
#pragma once

#include <cstddef>

#include "algos/algorithm.h"
#include "base/status.h"
#include "core/comm/redop.h"
#include "core/device/device.h"
#include "core/exec/executor.h"
#include "nccl.h"

namespace braid {

// One call's description: what a plan needs besides the buffers.
struct CallSelection;

struct Call {
  algos::Collective coll;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op = ncclSum;  // reductions only
  bool reduces = false;
  int root = -1;  // root or peer; -1 when the collective has none
  bool inPlace = false;
  size_t inputCount = 0;  // elements of sendbuff this rank contributes (PreMulSum scales them)
  // A per-call algorithm selection (ncclCollConfig_t; core/plan/call_selection.h), owned by
  // the communicator; null: the communicator chooses as usual.
  CallSelection* selection = nullptr;
  // A per-call config's userProfilerTag (0: none): the telemetry counts the call under it.
  uint64_t profilerTag = 0;

  bool operator==(const Call&) const = default;
};

// The bytes of sendbuff and recvbuff this rank's part of the call reads or writes (0 where NCCL
// leaves a buffer unused on this rank).
device::Buffers extents(const ncclComm* comm, const Call& call, const void* sendbuff,
                        const void* recvbuff);

// Whether every buffer the call touches on this rank can exist: its bytes (count x type size,
// x nranks for the block collectives) neither overflow nor run past the end of the address
// space from its pointer. ncclInvalidArgument naming the buffer otherwise. Checked before
// anything computes with the sizes (extents, the plan).
Status checkExtents(const ncclComm* comm, const Call& call, const void* sendbuff,
                    const void* recvbuff);

// The plan for a call of count > 0 on this rank: the schedule selected and built (or taken from
// the communicator's cache), the buffers and arithmetic bound. Host memory; the caller marks a
// device plan (onDevice, stream, extents).
Status makePlan(ncclComm* comm, const Call& call, const ResolvedOp& op, const void* sendbuff,
                void* recvbuff, Plan* plan);

// The plan of a communicator's last call outside a group, kept for an identical next one: a
// training loop repeats the same calls on the same buffers, and a repeat then goes straight to
// the executor, skipping the op lookup, compression and schedule cache, and the executor reuses
// what it set up for the plan's last run (Plan::keptId). Host plans with a built-in op only; a
// communicator that compresses by default plans every call (its calls carry per-call state).
class RepeatPlan {
 public:
  // The kept plan when `call` on these buffers repeats the kept one, else null.
  Plan* find(const ncclComm* comm, const Call& call, const void* sendbuff, const void* recvbuff);
  // Takes `plan` (made for `call`) and returns where it now lives: kept when a repeat could run
  // it unchanged; `plan` itself otherwise.
  Plan* keep(const ncclComm* comm, const Call& call, Plan* plan);
  void clear() { valid_ = false; }

 private:
  Call call_{};
  Plan plan_;
  bool valid_ = false;
};

}  // namespace braid
