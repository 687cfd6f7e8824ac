// NCCL groups: between ncclGroupStart and the outermost ncclGroupEnd, operations are collected
// per thread and then executed together by one executor call.
#pragma once

#include "base/status.h"
#include "core/exec/executor.h"

namespace braid::group {

void start();
// Ends one nesting level; at the outermost level runs everything collected.
Status end();
bool active();
// Ends the outermost group without running it: the cost model's estimate of what it would
// have taken, in microseconds (ncclGroupSimulateEnd).
Status simulateEnd(float* estimatedUs);
// Runs `plan` now, or queues it (moved) when a group is open.
Status submit(Plan&& plan);
// Runs `plan` now, outside any group, and leaves it as it was (a kept plan: core/plan/plan.h).
Status runNow(Plan& plan);
// Records `event` on `stream` once the work of the call just made is on its stream: now outside
// a group, after the outermost ncclGroupEnd has launched everything inside one.
Status recordAfterLaunch(cudaEvent_t event, cudaStream_t stream);
// An argument error inside a group also fails its ncclGroupEnd, naming the call.
void recordError(const Status& status);

}  // namespace braid::group
