#include "algos/topology_pattern.h"

#include <algorithm>
#include <numeric>

namespace braid::algos {

std::vector<int> nestedOrder(const Topology& topo) {
  std::vector<int> order(static_cast<size_t>(topo.nranks()));
  std::iota(order.begin(), order.end(), 0);
  auto nested = [&](int a, int b) {
    for (int l = topo.levels() - 1; l >= 0; --l)
      if (topo.groupOf[l][a] != topo.groupOf[l][b]) return topo.groupOf[l][a] < topo.groupOf[l][b];
    return false;
  };
  // Ranks numbered host by host are in this order already: one pass instead of a sort, for a
  // schedule builder that asks once per rank it builds.
  if (!std::is_sorted(order.begin(), order.end(), nested))
    std::stable_sort(order.begin(), order.end(), nested);
  return order;
}

std::vector<std::vector<int>> groupsAt(const Topology& topo, int level,
                                       const std::vector<int>& ranks) {
  if (level >= topo.levels()) return {ranks};
  std::vector<std::vector<int>> groups;
  // Where each group id's group is in `groups` (-1: not yet): one pass, at thousands of ranks
  // and hundreds of groups a schedule builder calls this for every rank it builds.
  std::vector<int> slot;
  for (int r : ranks) {
    const size_t id = static_cast<size_t>(topo.groupOf[level][r]);
    if (id >= slot.size()) slot.resize(id + 1, -1);
    if (slot[id] < 0) {
      slot[id] = static_cast<int>(groups.size());
      groups.push_back({r});
    } else {
      groups[static_cast<size_t>(slot[id])].push_back(r);
    }
  }
  return groups;
}

int positionOf(const std::vector<int>& ranks, int rank) {
  return static_cast<int>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
}

size_t groupHolding(const std::vector<std::vector<int>>& groups, int rank) {
  size_t g = 0;
  while (positionOf(groups[g], rank) == static_cast<int>(groups[g].size())) ++g;
  return g;
}

}  // namespace braid::algos
