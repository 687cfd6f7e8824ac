#include "algos/direct_allreduce.h"

#include "algos/pattern.h"
#include "algos/topology_pattern.h"

namespace braid::algos {

bool DirectAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce && args.count * args.typeSize <= args.directMaxBytes;
}

Schedule DirectAllReduce::build(const CollArgs& a) const {
  ScheduleBuilder b("direct");
  const int n = a.nranks, r = a.rank;
  const size_t count = a.count;
  const Buffer in = a.inPlace ? Buffer::Recv : Buffer::Send;
  // Scratch slot p holds rank p's contribution (our own too when in place, because the result
  // overwrites the input before every contribution has been added).
  auto slot = [&](int p) { return Region{Buffer::Scratch, static_cast<size_t>(p) * count, count}; };
  auto contribution = [&](int p) { return p == r && !a.inPlace ? Region{in, 0, count} : slot(p); };
  const Region result{Buffer::Recv, 0, count};
  if (count == 0) return std::move(b).finish();
  if (n == 1) {  // a lone rank: the result is its input (an Avg of one is itself)
    if (!a.inPlace) b.copy(Region{in, 0, count}, result);
    return std::move(b).finish();
  }
  if (n == 2) {
    // Two ranks: reduce the peer's data straight into the result as it arrives, both ranks in
    // the order x0 OP x1 (rank 1 puts the incoming operand first), so they agree bit for bit. In
    // place, our input is first copied aside and sent from there, so the receive that
    // overwrites it waits for a local copy, never for the peer.
    const int peer = 1 - r;
    Region source{in, 0, count};
    if (a.inPlace) {
      b.needScratch(count);
      b.copy(source, Region{Buffer::Scratch, 0, count});
      b.send(peer, Region{Buffer::Scratch, 0, count});
    } else {
      b.send(peer, source);
    }
    b.recvReduce(peer, source, result, /*incomingFirst=*/r == 1);  // both compute x0 OP x1
    if (a.average) b.finishAvg(result);
    return std::move(b).finish();
  }
  b.needScratch(static_cast<size_t>(n) * count);

  if (a.inPlace) b.copy(Region{in, 0, count}, slot(r));
  for (int k = 1; k < n; ++k) b.send((r + k) % n, Region{in, 0, count});
  for (int k = 1; k < n; ++k) b.recv((r - k + n) % n, slot((r - k + n) % n));
  b.copy(contribution(0), result);
  for (int p = 1; p < n; ++p) b.reduce(contribution(p), result);
  if (a.average) b.finishAvg(result);
  return std::move(b).finish();
}

namespace {

// One stage of HierDirectAllReduce: the groups (at the level below) that make up this rank's
// group at a level; each child group holds one partial sum on every one of its ranks.
std::vector<std::vector<int>> stageChildren(const Topology& topo, const std::vector<int>& order,
                                            int level, int rank) {
  const std::vector<std::vector<int>> parents = groupsAt(topo, level, order);
  const std::vector<int>& parent = parents[groupHolding(parents, rank)];
  if (level > 0) return groupsAt(topo, level - 1, parent);
  std::vector<std::vector<int>> singles;
  for (int r : parent) singles.push_back({r});
  return singles;
}

// Levels 0 .. levels() (the top) where this rank's group joins more than one child group.
std::vector<int> exchangeLevels(const Topology& topo, const std::vector<int>& order, int rank) {
  std::vector<int> levels;
  for (int level = 0; level <= topo.levels(); ++level)
    if (stageChildren(topo, order, level, rank).size() > 1) levels.push_back(level);
  return levels;
}

}  // namespace

// With a single stage the schedule is direct's, with a copy more: direct serves those calls.
// Every rank must answer alike (each chooses for itself), so this counts the levels where some
// group joins several of the level below (fewer groups than below), not this rank's stages.
bool HierDirectAllReduce::supports(const CollArgs& args) const {
  if (args.coll != Collective::AllReduce || args.count * args.typeSize > args.directMaxBytes)
    return false;
  Topology flat;
  const Topology& topo = topologyOf(args, flat);
  int stages = 0;
  for (int level = 0; level <= topo.levels(); ++level)
    stages += topo.groups(level) < topo.groups(level - 1);
  return stages > 1;
}

Schedule HierDirectAllReduce::build(const CollArgs& a) const {
  ScheduleBuilder b("hierdirect");
  const size_t count = a.count;
  const Region result{Buffer::Recv, 0, count};
  if (count == 0) return std::move(b).finish();
  Topology flat;
  const Topology& topo = topologyOf(a, flat);
  const std::vector<int> order = nestedOrder(topo);
  const std::vector<int> levels = exchangeLevels(topo, order, a.rank);
  const Buffer in = inputBuffer(a);
  if (levels.empty()) {  // a lone rank
    if (!a.inPlace) b.copy({in, 0, count}, result);
    return std::move(b).finish();
  }
  // Scratch: a slot per child group of every stage. Where this rank's own sum lives: its input
  // at first (out of place; in place the result overwrites it, so it is copied aside), then
  // the result of the last stage, copied to its slot before the next stage overwrites it.
  size_t slots = 0;
  for (int level : levels) slots += stageChildren(topo, order, level, a.rank).size();
  b.needScratch(slots * count);
  size_t nextSlot = 0;
  Region mine{in, 0, count};
  for (int level : levels) {
    const std::vector<std::vector<int>> children = stageChildren(topo, order, level, a.rank);
    const size_t own = groupHolding(children, a.rank), base = nextSlot;
    nextSlot += children.size();
    auto slot = [&](size_t c) { return Region{Buffer::Scratch, (base + c) * count, count}; };
    if (mine.buffer == Buffer::Recv) {
      b.copy(mine, slot(own));
      mine = slot(own);
    }
    const std::vector<int>& group = children[own];
    const size_t k = static_cast<size_t>(positionOf(group, a.rank));
    // Rank j of another child group takes this group's sum from rank j mod |group|.
    for (size_t c = 0; c < children.size(); ++c) {
      if (c == own) continue;
      for (size_t j = k; j < children[c].size(); j += group.size()) b.send(children[c][j], mine);
    }
    for (size_t c = 0; c < children.size(); ++c)
      if (c != own) b.recv(children[c][k % children[c].size()], slot(c));
    b.copy(own == 0 ? mine : slot(0), result);
    for (size_t c = 1; c < children.size(); ++c) b.reduce(c == own ? mine : slot(c), result);
    mine = result;
  }
  if (a.average) b.finishAvg(result);
  return std::move(b).finish();
}

}  // namespace braid::algos
