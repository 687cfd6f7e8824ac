// The one way a communicator comes to life: ncclCommInitRank(Config), ncclCommInitAll,
// ncclCommInitRankScalable, ncclCommSplit and ncclCommShrink all end here, so every
// communicator gets the same settings and the same blocking / non-blocking behaviour.
#pragma once

#include <functional>

#include "base/status.h"
#include "core/comm/comm.h"
#include "nccl.h"

namespace braid {

// Called on the init thread of a non-blocking communicator when its init fails, so the API
// layer can record the failure as it records any other (the core does not call upward).
using InitFailureHook = std::function<void(ncclComm*, const Status&)>;

struct InitRequest {
  ncclUniqueId id{};
  int nranks = 0;
  int rank = -1;
  CommConfig config;
  bool hostRoot = false;  // this rank starts the root listener itself (NCCL_COMM_ID, rank 0)
  InitFailureHook onAsyncFailure;
  // Called once init succeeded (on the init thread of a non-blocking one).
  std::function<void(ncclComm*)> onReady;
  int cudaDev = -1;  // the device to bind to; -1: the calling thread's current one
  // Split and shrink: members come as each finishes with its parent, after a failure up to one
  // BRAID_TIMEOUT_MS apart (a rank next to the failed one notices at once, the others by
  // their timeout), so init waits twice the timeout for them.
  bool staggered = false;
  // A twin (core/async/engine.h): the same ranks as this communicator, whose topology it takes
  // instead of probing the network again (while the original may be moving data).
  ncclComm* twinOf = nullptr;
};

// Blocking config: returns once connected, *out set only on success. Non-blocking: *out is set
// at once, init runs on the communicator's thread, and the status is ncclInProgress.
Status createComm(const InitRequest& request, ncclComm** out);

// "Braid x.y.z (NCCL 2.32.3 ABI)" at INFO, once per process.
void logVersionOnce();

}  // namespace braid
