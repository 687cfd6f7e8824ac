// The environment variables the reduction kernels reads (base/env.h says how variables are declared
// and gathered).
#pragma once

#include "base/env.h"

namespace braid::env {

extern const Var kBraidIsa;

List kernelsVariables();

}  // namespace braid::env
