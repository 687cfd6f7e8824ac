#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Pairwise AlltoAll: in step k rank r sends its block for rank r+k and receives rank r-k's
// block for it, so each step is a permutation. Out of place the steps depend on nothing, and the
// executor may have all p-1 exchanges in flight at once; the order is the order they are posted
// in. Cost: (p-1) alpha + (p-1) n beta, n the per-peer count.
class PairwiseAlltoAll final : public Algorithm {
 public:
  std::string_view name() const override { return "pairwise"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
