#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Rack-aware ring AllReduce: the ring visits the ranks of a host together, the hosts of a rack
// together, and so on up the topology, so it leaves each host and each rack exactly once per
// direction (a rank-order ring over fragmented placement crosses the uplinks at every hop and
// they share the oversubscribed bandwidth). Everything else is the ring AllReduce.
// Cost: 2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma, with one flow per uplink and
// direction, so beta is the slowest link's own, not divided among the flows crossing it.
class RackRingAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "rackring"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
