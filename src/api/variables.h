// Every environment variable Braid reads, gathered from the layers that declare them (base/env.h):
// NCCL's names first, then Braid's own, each group sorted. `braid-env` prints this list, and the
// README's table is checked against it.
#pragma once

#include <vector>

#include "base/env.h"

namespace braid {

std::vector<const env::Var*> allVariables();

}  // namespace braid
