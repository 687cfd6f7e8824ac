// ncclConfig_t as NCCL reads it: by the caller's size and version, so binaries built against
// older headers (smaller structs) keep working, and a missing initializer is caught by magic.
#pragma once

#include "base/status.h"
#include "core/comm/comm.h"
#include "nccl.h"

namespace braid {

constexpr unsigned kConfigMagic = 0xcafebeef;

// Reads `user` (may be null: defaults) into `out`. Fields the caller's version predates are
// treated as undefined.
Status readConfig(const ncclConfig_t* user, CommConfig* out);

}  // namespace braid
