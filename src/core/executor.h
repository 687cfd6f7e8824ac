// The executor: runs schedules. One call runs every plan of a group together, so operations on
// several communicators (or several operations on one) progress concurrently and a group can
// never deadlock on the order in which its operations were called.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "algos/algorithm.h"
#include "algos/schedule.h"
#include "core/status.h"
#include "nccl.h"

struct ncclComm;

namespace braid {

// One operation ready to run: a schedule bound to buffers and arithmetic.
struct Plan {
  ncclComm* comm = nullptr;
  std::shared_ptr<const algos::Schedule> schedule;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;  // the built-in op the reduce steps apply (Avg reduces as Sum)
  // The call as the user made it, for error messages.
  algos::Collective coll = algos::Collective::AllReduce;
  size_t count = 0;
  ncclRedOp_t userOp = ncclSum;
};

// "ncclAllReduce(count=16, float, sum)".
std::string describe(const Plan& plan);

// Runs all plans to completion, or until one fails, times out or is aborted. On failure the
// communicators involved are marked failed (their endpoints are in an unknown state).
Status execute(std::span<Plan> plans);

}  // namespace braid
