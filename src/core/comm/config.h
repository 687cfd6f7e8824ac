// ncclConfig_t as NCCL reads it: by the caller's size and version, so binaries built against
// older headers (smaller structs) keep working, and a missing initializer is caught by magic.
#pragma once

#include "base/status.h"
#include "core/comm/comm.h"
#include "nccl.h"

namespace braid {

constexpr unsigned kConfigMagic = 0xcafebeef;

// NCCL's versioned structs (ncclConfig_t, ncclCollConfig_t, ncclCommProperties_t,
// ncclEncryptionConfig_t) start with size_t size, unsigned magic, unsigned version, and are read by
// the caller's size. Checks the header of `user` (not null) as the struct `type` passed as
// `name`: size at least `minSize`, magic set by `initializer`. *size: the caller's size.
Status readStructHeader(const void* user, size_t minSize, const char* name, const char* type,
                        const char* initializer, size_t* size);

// Reads `user` (may be null: defaults) into `out`. Fields the caller's version predates are
// treated as undefined. Of the fields NCCL 2.31 added (graph usage, RMA contexts and signals,
// peer limits, launch ordering, CFT and NVLS modes) none means anything on Braid: all are
// accepted and ignored.
Status readConfig(const ncclConfig_t* user, CommConfig* out);

// What a per-call config (ncclCollConfig_t, NCCL 2.32) asks of one collective.
struct CollConfig {
  const char* algSelection = nullptr;  // null or "": no selection
  bool forceAlgSelection = true;
  cudaEvent_t launchCompletionEvent = nullptr;
  uint64_t userProfilerTag = 0;
  unsigned clientVersion = 0;
};

// Reads `user` by its size and version (null: the defaults). The CTA fields tune NCCL's
// kernels: accepted and ignored. userProfilerTag goes to the telemetry (calls counted per tag).
// `ext` (vendor options) is never read: Braid defines none.
Status readCollConfig(const ncclCollConfig_t* user, CollConfig* out);

}  // namespace braid
