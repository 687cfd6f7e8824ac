#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Hierarchical Broadcast: a tree of chains. At the top a chain runs through one leader per
// top-level group (the root's group first), each leader starts a chain through the leaders of
// its subgroups one level down, and so on to the chains of ranks inside each host; a leader is
// the root where the group holds it, else its first rank. Chunks flow down every chain at once,
// so the slow links carry each byte once per group instead of the flat chain's once per
// crossing, and the depth is the sum of the chain lengths, not p.
// Cost, g_l groups per chain at level l, c chunks of s elements:
//   (sum over levels of (g_l - 1) + c - 1) (alpha + s beta) on each level's links; a leader
// feeds one chain per level it leads, each on its own level's links.
class HierBroadcast final : public Algorithm {
 public:
  std::string_view name() const override { return "hier"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
