#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// One-hop AllReduce for small messages: every rank sends its whole input to every other rank
// and reduces all contributions locally, in rank order, so every rank computes the same bits.
// Cost: alpha + (p-1) n beta + (p-1) n gamma; it beats the ring's 2 (p-1) alpha while n is
// small. Chosen for calls of at most BRAID_DIRECT_MAX_BYTES per rank.
class DirectAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "direct"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

// The one-hop AllReduce run level by level of the topology, for small messages across racks:
// the ranks of a host exchange their inputs directly and each adds them up; then the hosts of a
// rack exchange those host sums, each rank with its counterpart (the same position, modulo the
// smaller host's size) on every other host of the rack; then the racks their rack sums, and so
// on to the top. Every rank adds the sums of one stage in the same (nested) order, so all end
// with the same bits. A rank sends a message per stage to each counterpart instead of one to
// every rank: on 2 racks of 4 single-rank hosts, 4 messages per rank and 8 across the uplinks
// instead of 7 and 32 (direct), in 2 hops instead of the ring's 14.
// Cost: sum over stages l of alpha_l + (c_l - 1) n beta_l + (c_l - 1) n gamma, c_l the groups
// meeting at stage l. Serves the calls direct serves, on topologies with two stages or more.
class HierDirectAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "hierdirect"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
