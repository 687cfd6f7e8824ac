// Telemetry's summary line (the counters themselves: core/comm/link_stats.h, read through
// braidCommGetStats in include/braid/braid.h).
#pragma once

struct ncclComm;

namespace braid::api {

// At NCCL_DEBUG=INFO (INIT): one line of what comm did over its life, logged as it is destroyed.
void logStatsSummary(ncclComm* comm);

}  // namespace braid::api
