#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

class RingAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "ring"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
