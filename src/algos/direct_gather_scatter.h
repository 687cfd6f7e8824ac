#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Gather straight to the root: every rank sends its block, the root posts a receive per rank
// into that rank's slot. Cost: alpha + (p-1) n beta at the root, which is the lower bound for
// the root's link.
class DirectGather final : public Algorithm {
 public:
  std::string_view name() const override { return "direct"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

// Scatter straight from the root: the root sends each rank its block. Same cost as the gather.
class DirectScatter final : public Algorithm {
 public:
  std::string_view name() const override { return "direct"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
