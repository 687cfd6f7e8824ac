#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Ring ReduceScatter: in step s rank r sends the partial sum of block (r - s - 1) to its
// successor and adds its own contribution to block (r - s - 2) arriving from its predecessor,
// so after p-1 steps it holds the full reduction of block r. Chunked, so every hop pipelines.
// Cost: (p-1) alpha + (p-1) n beta + (p-1) n gamma, n the per-rank count.
class RingReduceScatter final : public Algorithm {
 public:
  std::string_view name() const override { return "ring"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
