#include "algos/hier_pattern.h"

#include "algos/topology_pattern.h"

namespace braid::algos {

namespace {

// A ring through `ranks` in which each carries only its own block.
BlockStage flatStage(const std::vector<int>& ranks, int rank) {
  BlockStage stage{ranks, positionOf(ranks, rank), {}};
  for (int r : ranks) stage.blocks.push_back({r});
  return stage;
}

}  // namespace

std::vector<BlockStage> blockStages(const Topology& topo, int rank) {
  std::vector<BlockStage> stages;
  std::vector<int> members = nestedOrder(topo);
  for (int level = 0; members.size() > 1; ++level) {
    if (level >= topo.levels()) {
      stages.push_back(flatStage(members, rank));
      break;
    }
    const std::vector<std::vector<int>> groups = groupsAt(topo, level, members);
    const size_t g = groups[0].size();
    bool even = true;
    for (const auto& group : groups) even = even && group.size() == g;
    if (!even) {
      stages.push_back(flatStage(members, rank));
      break;
    }
    if (g == 1) continue;
    const std::vector<int>& mine = groups[groupHolding(groups, rank)];
    BlockStage stage{mine, positionOf(mine, rank), std::vector<std::vector<int>>(g)};
    for (size_t j = 0; j < g; ++j)
      for (const auto& group : groups) stage.blocks[j].push_back(group[j]);
    members = stage.blocks[static_cast<size_t>(stage.pos)];
    stages.push_back(std::move(stage));
  }
  return stages;
}

}  // namespace braid::algos
