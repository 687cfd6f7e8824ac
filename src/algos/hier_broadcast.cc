#include "algos/hier_broadcast.h"

#include <algorithm>

#include "algos/pattern.h"
#include "algos/topology_pattern.h"

namespace braid::algos {

namespace {

struct BroadcastLinks {
  int parent = -1;
  std::vector<int> children;  // one per chain this rank is in, top level first
};

BroadcastLinks broadcastLinks(const Topology& topo, int rank, int root) {
  const std::vector<int> all = nestedOrder(topo);
  // Level `level`'s group of `r` (all ranks at the top), in nested order.
  auto groupOf = [&](int level, int r) {
    if (level >= topo.levels()) return all;
    std::vector<int> group;
    for (int q : all)
      if (topo.groupOf[level][q] == topo.groupOf[level][r]) group.push_back(q);
    return group;
  };
  auto leader = [&](const std::vector<int>& group) {
    return std::find(group.begin(), group.end(), root) != group.end() ? root : group.front();
  };
  // From the top down: the chain through the leaders of the subgroups of this rank's group.
  // A rank is in the chains from the highest level whose subgroup it leads down to its host's;
  // it heads all of them but the highest, where its predecessor is its parent.
  BroadcastLinks links;
  for (int level = topo.levels(); level >= 0; --level) {
    const std::vector<int> group = groupOf(level, rank);
    std::vector<int> chain;
    if (level == 0) {
      chain = group;  // a host's chain runs through its ranks
    } else {
      for (const auto& sub : groupsAt(topo, level - 1, group)) chain.push_back(leader(sub));
    }
    std::rotate(chain.begin(), std::find(chain.begin(), chain.end(), leader(group)), chain.end());
    const size_t pos = static_cast<size_t>(positionOf(chain, rank));
    if (pos == chain.size()) continue;  // this rank leads no subgroup at this level
    if (pos + 1 < chain.size()) links.children.push_back(chain[pos + 1]);
    if (pos > 0) links.parent = chain[pos - 1];  // below this level it heads every chain
  }
  return links;
}

}  // namespace

bool HierBroadcast::supports(const CollArgs& args) const {
  return args.coll == Collective::Broadcast;
}

Schedule HierBroadcast::build(const CollArgs& a) const {
  ScheduleBuilder b("hier");
  Topology flat;
  const BroadcastLinks links = broadcastLinks(topologyOf(a, flat), a.rank, a.root);
  const Region result{Buffer::Recv, 0, a.count};
  // Only the root reads its sendbuff; every other rank forwards out of its recvbuff.
  const Region source = a.rank == a.root ? Region{inputBuffer(a), 0, a.count} : result;
  forEachChunk(a.count, a.chunkCount, [&](size_t off, size_t n) {
    if (links.parent >= 0) b.recv(links.parent, slice(result, off, n));
    for (int child : links.children) b.send(child, slice(source, off, n));
  });
  // After the sends, so the root's first chunk leaves before its local copy.
  if (a.rank == a.root && !a.inPlace && a.count > 0) b.copy(source, result);
  return std::move(b).finish();
}

}  // namespace braid::algos
