#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Hierarchical AllGather: the stages of hier_pattern.h top down. At the top the ranks that
// hold the same place in their groups exchange single blocks over the slow links; each stage
// below passes around its ring what the stage above gathered. Every block crosses each link
// level once per group, so with g_l groups of level l per group above and m blocks moved
// across level l per rank:
//   sum over levels of (g_l - 1) alpha_l + (g_l - 1) m_l n beta_l   (n the per-rank count),
// where the flat ring moves (p - 1) n per rank over whatever link its neighbour sits behind.
class HierAllGather final : public Algorithm {
 public:
  std::string_view name() const override { return "hier"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
