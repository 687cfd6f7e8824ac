// From one call as the user made it to the Plan the executor runs: what the collective entry
// points (api/coll.cc) do after their argument checks, and what tests that drive the executor or
// the stream proxy directly do too.
#pragma once

#include <cstddef>

#include "algos/algorithm.h"
#include "core/device.h"
#include "core/executor.h"
#include "core/redop.h"
#include "core/status.h"
#include "nccl.h"

namespace braid {

// One call's description: what a plan needs besides the buffers.
struct Call {
  algos::Collective coll;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op = ncclSum;  // reductions only
  bool reduces = false;
  int root = -1;             // root or peer; -1 when the collective has none
  bool inPlace = false;
  size_t inputCount = 0;     // elements of sendbuff this rank contributes (PreMulSum scales them)
};

// The bytes of sendbuff and recvbuff this rank's part of the call reads or writes (0 where NCCL
// leaves a buffer unused on this rank).
device::Buffers extents(const ncclComm* comm, const Call& call, const void* sendbuff,
                        const void* recvbuff);

// The plan for a call of count > 0 on this rank: the schedule selected and built (or taken from
// the communicator's cache), the buffers and arithmetic bound. Host memory; the caller marks a
// device plan (onDevice, stream, extents).
Status makePlan(ncclComm* comm, const Call& call, const ResolvedOp& op, const void* sendbuff,
                void* recvbuff, Plan* plan);

}  // namespace braid
