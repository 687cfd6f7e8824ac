#include "core/comm/link_stats.h"

namespace braid {

void LinkStats::record(const Call& call, int pairLevel, double pairModelUsPerMiB) {
  busyNs.add(call.busyNs);
  stallNs.add(call.stallNs);
  if (call.skewNs >= 0) {
    skewNs.add(static_cast<uint64_t>(call.skewNs));
    skewCalls.add(1);
  }
  level.set(static_cast<uint64_t>(pairLevel));
  modelUsPerMiB.set(pairModelUsPerMiB);
  if (call.bytes < kModelMinBytes || call.busyNs <= call.stallNs) return;
  const double sample = static_cast<double>(call.busyNs - call.stallNs) * 1e-3 /
                        (static_cast<double>(call.bytes) / 1048576.0);
  const double before = usPerMiB.get();
  usPerMiB.set(before == 0 ? sample : before + kModelWeight * (sample - before));
}

}  // namespace braid
