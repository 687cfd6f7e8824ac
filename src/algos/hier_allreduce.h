#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Hierarchical AllReduce, one stage per level of the topology (Horovod's host stage,
// generalised to racks, pods... as BlueConnect does): the g ranks of each host reduce-scatter
// the buffer around a ring, so each holds 1/g of the host's sum; the k-th ranks of the hosts
// of a rack then do the same on that 1/g, and so on up to the top level, where the holders
// of each piece run a ring AllReduce; the all-gathers retrace the stages downwards.
// Cost, with g_l groups of level l inside one of level l+1 and n_l = n / (g_0 ... g_{l-1}):
//   sum over levels of 2 (g_l - 1) alpha_l + 2 (g_l - 1)/g_l n_l beta_l + (g_l - 1)/g_l n_l gamma,
// so the slow top links carry only n / (ranks below them) per rank.
// Uneven levels (hosts with different rank counts, racks with different host counts) cannot
// be cut into equal pieces; there each group runs the stage on its first g ranks (g the
// smallest group's size) and every further rank first folds its whole buffer into one of those
// and gets the result back at the end: correct, still hierarchical, at 2 n beta more on the
// (cheap) links inside the group for the ranks beyond g.
//
// With pieces > 1 ("hierpipe") the buffer is cut into that many ranges (more for large
// buffers: piecesFor), and the next range
// goes down the levels while the last one crosses the top: the slow top links then run
// alongside the fast ones below instead of after them (the cost model picks between the two).
class HierAllReduce final : public Algorithm {
 public:
  explicit HierAllReduce(int pieces = 1) : pieces_(pieces < 1 ? 1 : pieces) {}
  std::string_view name() const override { return pieces_ == 1 ? "hier" : "hierpipe"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
  size_t piecesFor(size_t bytes) const;  // how many pieces a buffer of `bytes` is cut into

 private:
  int pieces_;
};

}  // namespace braid::algos
