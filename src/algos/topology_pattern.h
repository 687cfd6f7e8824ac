// Index math over a Topology shared by the topology-aware builders: which topology a call
// uses, ranks in nested (rack, host, rank) order, and ranks split into their groups at a level.
#pragma once

#include <vector>

#include "algos/algorithm.h"
#include "algos/topology.h"

namespace braid::algos {

// The call's topology, or a flat one (every rank its own host) when the call carries none or
// one of another size, so topology-aware builders run everywhere the flat ones do.
inline const Topology& topologyOf(const CollArgs& a, Topology& storage) {
  if (a.topology && a.topology->nranks() == a.nranks) return *a.topology;
  storage = Topology::flat(a.nranks);
  return storage;
}

// Every rank, ordered by its group at the highest level first, then the next level down, and
// by rank last: the ranks of one host are consecutive, and the hosts of one rack.
std::vector<int> nestedOrder(const Topology& topo);

// `ranks` split by their group at `level`, each group keeping the order of `ranks`, groups in
// the order their first member appears. Level topo.levels() (the top) is one group.
std::vector<std::vector<int>> groupsAt(const Topology& topo, int level,
                                       const std::vector<int>& ranks);

// The position of `rank` in `ranks` (which holds it).
int positionOf(const std::vector<int>& ranks, int rank);
// The group (from groupsAt) that holds `rank`.
size_t groupHolding(const std::vector<std::vector<int>>& groups, int rank);

}  // namespace braid::algos
