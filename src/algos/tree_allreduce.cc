#include "algos/tree_allreduce.h"

#include <algorithm>

#include "algos/pattern.h"
#include "algos/topology_pattern.h"

namespace braid::algos {

namespace {

// One rank's links in one of the two trees: whom it receives partial sums from, and whom it
// passes its own to (-1 at the root).
struct TreeLinks {
  int parent = -1;
  std::vector<int> children;
};

TreeLinks treeLinks(const std::vector<std::vector<int>>& hosts, int host, int tree, int rank) {
  const int m = static_cast<int>(hosts.size());
  // The chain inside a host runs first to last rank in tree 0, last to first in tree 1; its
  // head is the host's member of the tree across hosts.
  auto chainOf = [&](int h) {
    std::vector<int> chain = hosts[static_cast<size_t>(h)];
    if (tree == 1) std::reverse(chain.begin(), chain.end());
    return chain;
  };
  // Tree 1's node at position q is host hostAt(q): mirrored for even m, shifted for odd m.
  auto treePosition = [&](int h) { return tree == 0 ? h : m % 2 == 0 ? m - 1 - h : mod(h - 1, m); };
  auto hostAt = [&](int q) { return tree == 0 ? q : m % 2 == 0 ? m - 1 - q : mod(q + 1, m); };

  TreeLinks links;
  const std::vector<int> chain = chainOf(host);
  const int c = positionOf(chain, rank);
  if (c + 1 < static_cast<int>(chain.size()))
    links.children.push_back(chain[static_cast<size_t>(c) + 1]);
  if (c > 0) {
    links.parent = chain[static_cast<size_t>(c) - 1];
    return links;
  }
  const int q = treePosition(host);
  const int parent = binaryTreeParent(q, m);
  if (parent >= 0) links.parent = chainOf(hostAt(parent))[0];
  for (int child : binaryTreeChildren(q, m)) links.children.push_back(chainOf(hostAt(child))[0]);
  return links;
}

}  // namespace

bool TreeAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce;
}

Schedule TreeAllReduce::build(const CollArgs& a) const {
  ScheduleBuilder b("tree");
  if (a.nranks == 1) {  // a lone rank: its input is the result, copied once (not per chunk)
    if (!a.inPlace && a.count > 0) b.copy({inputBuffer(a), 0, a.count}, {Buffer::Recv, 0, a.count});
    return std::move(b).finish();
  }
  Topology flat;
  const Topology& topo = topologyOf(a, flat);
  const std::vector<std::vector<int>> hosts = groupsAt(topo, 0, nestedOrder(topo));
  const int host = static_cast<int>(groupHolding(hosts, a.rank));
  const TreeLinks trees[2] = {treeLinks(hosts, host, 0, a.rank), treeLinks(hosts, host, 1, a.rank)};
  const Range halves[2] = {evenPart(a.count, 2, 0), evenPart(a.count, 2, 1)};
  const Buffer in = inputBuffer(a);

  // Up: add what the children send to this rank's input and pass the sum on; the root
  // finishes its half there. Both trees' chunks interleave, so the halves move together.
  auto up = [&](int t, size_t off, size_t n) {
    const TreeLinks& links = trees[t];
    const size_t at = halves[t].offset + off;
    Buffer source = in;
    for (int child : links.children) {
      b.recvReduce(child, {source, at, n}, {Buffer::Recv, at, n});
      source = Buffer::Recv;
    }
    if (links.parent >= 0) {
      b.send(links.parent, {source, at, n});
      return;
    }
    if (source != Buffer::Recv) b.copy({source, at, n}, {Buffer::Recv, at, n});  // a lone rank
    if (a.average && a.nranks > 1) b.finishAvg({Buffer::Recv, at, n});
  };
  // Down: the finished sum flows from the root to every rank.
  auto down = [&](int t, size_t off, size_t n) {
    const TreeLinks& links = trees[t];
    const Region chunk{Buffer::Recv, halves[t].offset + off, n};
    if (links.parent >= 0) b.recv(links.parent, chunk);
    for (int child : links.children) b.send(child, chunk);
  };
  interleaveChunks(
      halves[0].count, halves[1].count, a.chunkCount, [&](size_t off, size_t n) { up(0, off, n); },
      [&](size_t off, size_t n) { up(1, off, n); });
  interleaveChunks(
      halves[0].count, halves[1].count, a.chunkCount,
      [&](size_t off, size_t n) { down(0, off, n); },
      [&](size_t off, size_t n) { down(1, off, n); });
  return std::move(b).finish();
}

}  // namespace braid::algos
