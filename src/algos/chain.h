#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Broadcast down the chain root -> root+1 -> ... -> root-1, chunk by chunk: each rank forwards
// a chunk as soon as it has arrived, so after the first p-1 hops every link carries data at once.
// Cost: (p - 1 + chunks - 1) (alpha + chunk beta); for large n about n beta, like one copy.
class ChainBroadcast final : public Algorithm {
 public:
  std::string_view name() const override { return "chain"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

// Reduce up the same chain towards the root: each rank adds its contribution to the chunk its
// successor sends and passes the partial sum on. Same cost as the broadcast, plus n gamma.
class ChainReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "chain"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
