#include "algos/topology_pattern.h"

#include <algorithm>
#include <numeric>

namespace braid::algos {

std::vector<int> nestedOrder(const Topology& topo) {
  std::vector<int> order(static_cast<size_t>(topo.nranks()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    for (int l = topo.levels() - 1; l >= 0; --l)
      if (topo.groupOf[l][a] != topo.groupOf[l][b]) return topo.groupOf[l][a] < topo.groupOf[l][b];
    return false;
  });
  return order;
}

std::vector<std::vector<int>> groupsAt(const Topology& topo, int level,
                                       const std::vector<int>& ranks) {
  if (level >= topo.levels()) return {ranks};
  std::vector<std::vector<int>> groups;
  std::vector<int> ids;  // group id of groups[i]
  for (int r : ranks) {
    const int id = topo.groupOf[level][r];
    auto it = std::find(ids.begin(), ids.end(), id);
    if (it == ids.end()) {
      ids.push_back(id);
      groups.push_back({r});
    } else {
      groups[static_cast<size_t>(it - ids.begin())].push_back(r);
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
