// The stages of the hierarchical AllGather and ReduceScatter, whose results sit in fixed
// per-rank blocks. From the bottom level up, each stage is a ring through this rank's group at
// one level, where ring position j carries the blocks of T_j: the j-th ranks of all the
// groups, which meet in the stage above. An AllGather runs the stages top down (the slow top
// links move single blocks, the cheap host links the most), a ReduceScatter bottom up.
// Where a level's groups differ in size no such split exists; the stage there is one ring
// through all ranks still taking part (in nested order, so it still crosses each group's
// boundary once per direction), each carrying its own block, and the stages above vanish.
#pragma once

#include <vector>

#include "algos/topology.h"

namespace braid::algos {

struct BlockStage {
  std::vector<int> ring;                 // the group's ranks, in ring order
  int pos = 0;                           // this rank's position in `ring`
  std::vector<std::vector<int>> blocks;  // blocks[j]: the blocks ring position j carries
};

// This rank's stages, bottom first; rings of one rank are left out. The last stage's blocks
// are single: position j carries ring[j]'s own block.
std::vector<BlockStage> blockStages(const Topology& topo, int rank);

}  // namespace braid::algos
