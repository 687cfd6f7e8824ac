#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Recursive halving-doubling AllReduce (Rabenseifner): a reduce-scatter by recursive halving
// (lg p exchanges with partner rank ^ 2^k, each halving the range a rank keeps), then an
// all-gather by recursive doubling (the same exchanges in reverse, each doubling it). The
// exchanges whose partners share the cheapest links go first, so they carry the most (the
// communicator's topology decides; without one, or on one flat network, 2^k from the highest
// k down). With p
// not a power of two, the first 2e ranks (e = p - 2^floor(lg p)) pair up: the even one folds
// its whole input into its odd partner before, and gets the result back after.
// Cost: 2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma for p a power of two; otherwise
// (2 floor(lg p) + 2) alpha + (2 (p'-1)/p' + 2) n beta. Every element's final value is computed
// once, on the rank that owns it after the halving, and copied from there, so all ranks hold
// identical bits.
class RhdAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "rhd"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
