#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// One-hop AllReduce for small messages: every rank sends its whole input to every other rank
// and reduces all contributions locally, in rank order, so every rank computes the same bits.
// Cost: alpha + (p-1) n beta + (p-1) n gamma; it beats the ring's 2 (p-1) alpha while n is
// small. Chosen for calls of at most BRAID_DIRECT_MAX_BYTES per rank.
class DirectAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "direct"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
