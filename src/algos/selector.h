// Choosing the algorithm for a call: every algorithm that supports it and that NCCL_ALGO
// allows is priced by the cost model on the communicator's topology, and the cheapest wins.
// BRAID_ALGO forces one by name. All ranks decide alike: the price is taken from a fixed set
// of ranks' schedules, and every rank has the same topology.
//
// The rule, which no order of the candidates (algorithms.cc's array included) can change:
//   1. Prices within 1% of the cheapest tie (the model cannot tell them apart: on the emulated
//      cluster at 256 KiB, rhd, hier and hierpipe were all priced 3.29 ms and took 6.3-6.9,
//      3.7-4.5 and 3.35 ms, bench/results/netcluster_allreduce.md).
//   2. Among those, prices without the host-memory bound (`links`, priceOperation) within 1% of
//      the lowest of them tie; the others lose (where host memory prices two alike, the one whose
//      messages and reductions alone finish first still overlaps better: 4 local ranks, 8 and 16
//      MiB, rhd 10-15% faster than the ring in five interleaved rounds).
//   3. A tie left goes to the algorithm listed first in the tie preference (selector.cc, which
//      gives each entry's reason), and between names it does not list to the alphabetically
//      first name.
// Without a topology to price with, only step 3 applies.
#pragma once

#include <span>
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
// The same among `registry` (chooseAlgorithm above: algorithms()), in any order.
Status chooseAlgorithm(const CollArgs& args, const AlgoFilter& filter, std::string_view forced,
                       std::span<const Algorithm* const> registry, Choice* out);

// A candidate and its prices, in us: `us` as priceOperation returns it, `linksUs` its time
// without the host-memory bound.
struct Priced {
  const Algorithm* algorithm = nullptr;
  double us = 0.0;
  double linksUs = 0.0;
};
// Steps 1-3 of the rule above: the index of the winner in `priced` (not empty).
size_t pickCheapest(std::span<const Priced> priced);
// Step 3's order: the position of `name` in the tie preference (lower wins); names it does not
// list come after every name it does.
int tiePreference(std::string_view name);
// Step 3 itself: whether a wins a tie against b (the tie preference, then the name).
bool preferred(const Algorithm& a, const Algorithm& b);
// The cost model's time for `algo` running the call (args.topology must be set), in us.
// `linksUs`, when given: that time without the host-memory bound (operation_cost.h); the
// representatives' price (below) has no such bound, and gives the same.
double priceOperation(const Algorithm& algo, const CollArgs& args, double* linksUs = nullptr);
// The price where the whole operation costs too much to simulate: the slowest of a few
// representative ranks, each walked alone with the ports its groups share (cost_model.h, Flows).
double priceRepresentatives(const Algorithm& algo, const CollArgs& args, double* linksUs = nullptr);

}  // namespace braid::algos
