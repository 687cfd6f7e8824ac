#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Double binary tree AllReduce. Across hosts (level 0 groups) two binary trees, each carrying
// half of the buffer: tree 1 mirrors tree 0 (or, for an odd host count, shifts it by one) so a
// host that forwards in one tree is a leaf of the other, and no host's links carry both
// halves' full fan-in and fan-out. Inside a host the ranks form a chain, run in opposite
// directions by the two trees, whose head joins the tree. Each half is reduced up its tree and
// broadcast back down, chunk by chunk, so every link is busy at once after the first hops.
// With every rank on its own host this is a double binary tree over ranks. Hosts take their
// tree positions in nested (rack, host) order, so small subtrees stay inside a rack.
// Cost, m hosts of g ranks, c chunks of s elements per half:
//   2 (floor(lg m) + g - 1 + c) (alpha + s beta)  and about n gamma;
// latency grows with lg m instead of the ring's p, bandwidth stays about n beta per link.
// Each half's sum is finished at its tree's root and copied from there, so every rank holds
// identical bits.
class TreeAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "tree"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
