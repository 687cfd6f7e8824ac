// The cost model: prices a schedule before it runs. Each step costs alpha (per message) plus
// bytes x beta on the link it crosses, plus bytes x gamma where it reduces; a schedule costs
// the longest chain of dependent steps (steps on different chains overlap, as the executor
// runs them). This is one rank's view: the peers' schedules are symmetric for every algorithm
// here, so it is the operation's time.
#pragma once

#include <cstddef>

#include "algos/schedule.h"

namespace braid::algos {

struct LinkCost {
  double alphaUs = 1.0;           // per message
  double betaUsPerByte = 2e-4;    // 1 / bandwidth (5 GB/s)
};

struct CostParams {
  LinkCost link;
  double gammaUsPerByte = 1e-4;   // reduction (10 GB/s)
  double copyUsPerByte = 1e-4;    // local copies
};

// Measured-order defaults for the transports Braid has (see docs/architecture.md).
CostParams sharedMemoryCost();
CostParams tcpCost();

double estimateMicroseconds(const Schedule& schedule, size_t typeSize, const CostParams& params);

}  // namespace braid::algos
