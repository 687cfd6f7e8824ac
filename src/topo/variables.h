// The environment variables the topology layer reads (base/env.h says how variables are declared
// and gathered).
#pragma once

#include "base/env.h"

namespace braid::env {

extern const Var kNcclHostid;
extern const Var kNcclTopoDumpFile;
extern const Var kNcclTopoFile;
extern const Var kBraidClusterFile;
extern const Var kBraidTopoProbe;

List topoVariables();

}  // namespace braid::env
