#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Hierarchical ReduceScatter: the stages of hier_pattern.h bottom up. Inside each host the
// ring reduces, for each rank position j, the blocks of all the ranks at position j of their
// hosts, so those ranks meet in the stage above holding their hosts' partial sums of exactly
// the blocks they exchange; the top stage is a plain ring reduce-scatter of single blocks.
// Cost, mirror of the hierarchical AllGather plus the reductions:
//   sum over levels of (g_l - 1) alpha_l + (g_l - 1) m_l n (beta_l + gamma).
// Partial sums live in scratch, one slot per block (sendbuff is the caller's input, recvbuff
// holds only the final block).
class HierReduceScatter final : public Algorithm {
 public:
  std::string_view name() const override { return "hier"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
