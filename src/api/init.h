// The init path the entry points that make a communicator from an id share (ncclCommInitRank*,
// ncclCommInitAll, a new rank's ncclCommGrow).
#pragma once

#include "base/status.h"
#include "nccl.h"

namespace braid::api {

// Checks the arguments (naming them as `function`'s), reads the config and creates the
// communicator (core/comm/comm_init.h). cudaDev -1: the calling thread's current device.
Status initRank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                const ncclConfig_t* config, const char* function, int cudaDev = -1);

}  // namespace braid::api
