#pragma once

#include <span>
#include <string>

#include "algos/algorithm.h"

namespace braid::algos {

// Ring AllReduce in rank order: the buffer is cut into p parts, reduce-scattered then
// all-gathered around the ring, each part chunked so every hop pipelines.
// Cost: 2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma.
class RingAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "ring"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

// The ring AllReduce through `order` (a permutation of the ranks), for variants that only
// choose the order.
Schedule buildRingAllReduce(std::string name, const CollArgs& args, std::span<const int> order);

}  // namespace braid::algos
