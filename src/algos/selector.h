// Choosing the algorithm for a call: every algorithm that supports it and that NCCL_ALGO
// allows is priced by the cost model on the communicator's topology, and the cheapest wins.
// BRAID_ALGO forces one by name. All ranks decide alike: the price is taken from a fixed set
// of ranks' schedules, and every rank has the same topology.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "algos/algorithm.h"
#include "base/status.h"

namespace braid::algos {

// NCCL_ALGO's syntax: "ring,tree" (only these), "^ring" (all but these), and per collective
// "allreduce:tree,ring;allgather:ring", where a collective's own list overrides a general one
// ("allreduce:tree;^ring": AllReduce uses tree, the others anything but ring).
class AlgoFilter {
 public:
  static Status parse(std::string_view spec, AlgoFilter* out);
  bool allows(Collective coll, std::string_view algorithm) const;
  bool empty() const { return rules_.empty(); }

 private:
  struct Rule {
    int coll = -1;  // -1: every collective
    bool exclude = false;
    std::vector<std::string> names;
  };
  std::vector<Rule> rules_;
};

struct Choice {
  const Algorithm* algorithm = nullptr;
  double estimateUs = 0.0;
  std::string reason;  // for the TUNING log: every candidate's price
};

Status chooseAlgorithm(const CollArgs& args, const AlgoFilter& filter, std::string_view forced,
                       Choice* out);
// The cost model's time for `algo` running the call (args.topology must be set), in us.
// `linksUs`, when given: that time without the host-memory bound (operation_cost.h); the
// per-rank price used above 16 ranks has no such bound, and gives the same.
double priceOperation(const Algorithm& algo, const CollArgs& args, double* linksUs = nullptr);

}  // namespace braid::algos
