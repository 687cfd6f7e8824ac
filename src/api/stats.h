// Telemetry's summary line and stats file (the counters themselves: core/comm/link_stats.h, read through
// braidCommGetStats in include/braid/braid.h).
#pragma once

struct ncclComm;

namespace braid::api {

// At NCCL_DEBUG=INFO (INIT): one line of what comm did over its life, logged as it is destroyed.
void logStatsSummary(ncclComm* comm);

// BRAID_STATS_FILE: after a communicator's init succeeded, its telemetry is written as a JSON
// line every BRAID_STATS_INTERVAL_MS (by one thread for the whole process), and once more as it
// is destroyed (unwatchStats, before anything of it is freed). Nothing without the variable.
void watchStats(ncclComm* comm);
void unwatchStats(ncclComm* comm);

}  // namespace braid::api
