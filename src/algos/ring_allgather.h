#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// Ring AllGather: in step s rank r passes block (r - s) to its successor and receives block
// (r - s - 1) from its predecessor, chunk by chunk, so a block moves on as it arrives.
// Cost: (p-1) alpha + (p-1) n beta, n the per-rank count.
class RingAllGather final : public Algorithm {
 public:
  std::string_view name() const override { return "ring"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
