#include "algos/hier_allreduce.h"

#include <algorithm>

#include "algos/ring_pattern.h"
#include "algos/topology_pattern.h"

namespace braid::algos {

namespace {

struct HierBuilder {
  ScheduleBuilder& b;
  const Topology& topo;
  const CollArgs& a;
  // Where this rank's running sum of the range being reduced lives: its input until a
  // reduction has landed in recvbuff. Each stage reduces a sub-range of the last one, whose
  // first step reads what the last stage wrote, so one value serves all stages.
  Buffer source;

  // AllReduce of `data` among `members` (this rank among them), which are in one group at
  // every level from `level` up; stages below `level` are done.
  void allReduce(const std::vector<int>& members, int level, Range data) {
    if (members.size() == 1) return finishAlone(data);
    if (level >= topo.levels()) {
      const RingOrder ring{members, positionOf(members, a.rank)};
      ringAllReduce(b, ring, data, source, a.chunkCount, a.average);
      source = Buffer::Recv;
      return;
    }
    const std::vector<std::vector<int>> groups = groupsAt(topo, level, members);
    size_t g = groups[0].size();
    for (const auto& group : groups) g = std::min(g, group.size());
    const std::vector<int>& mine = groups[groupHolding(groups, a.rank)];
    const size_t k = static_cast<size_t>(positionOf(mine, a.rank));

    if (k >= g) {  // beyond the even split: fold into rank k mod g, get the result back
      const int base = mine[k % g];
      sendChunks(b, base, {source, data.offset, data.count}, a.chunkCount);
      recvChunks(b, base, {Buffer::Recv, data.offset, data.count}, a.chunkCount);
      return;
    }
    std::vector<int> folded;  // the ranks beyond g that fold into this one, in order
    for (size_t j = g + k; j < mine.size(); j += g) folded.push_back(mine[j]);
    for (int extra : folded) {
      forEachChunk(Range{data.offset, data.count}, a.chunkCount, [&](size_t off, size_t n) {
        b.recvReduce(extra, {source, off, n}, {Buffer::Recv, off, n});
      });
      source = Buffer::Recv;
    }

    const std::vector<int> ring(mine.begin(), mine.begin() + static_cast<long>(g));
    const RingOrder order{ring, static_cast<int>(k)};
    ringReduceScatter(b, order, data, source, a.chunkCount);
    if (g > 1) source = Buffer::Recv;
    // The k-th rank of every group holds the same piece of its group's sum: they go on up.
    std::vector<int> peers;
    for (const auto& group : groups) peers.push_back(group[k]);
    allReduce(peers, level + 1, ringPart(data, static_cast<int>(g), ringOwnedPart(order.pos, order.size())));
    ringAllGather(b, order, data, a.chunkCount);
    for (int extra : folded) sendChunks(b, extra, {Buffer::Recv, data.offset, data.count}, a.chunkCount);
  }

  // This rank holds the complete sum of `data` on its own.
  void finishAlone(Range data) {
    if (data.count == 0) return;
    const Region result{Buffer::Recv, data.offset, data.count};
    if (source != Buffer::Recv) b.copy({source, data.offset, data.count}, result);
    source = Buffer::Recv;
    if (a.average && a.nranks > 1) b.finishAvg(result);
  }
};

}  // namespace

bool HierAllReduce::supports(const CollArgs& args) const { return args.coll == Collective::AllReduce; }

Schedule HierAllReduce::build(const CollArgs& a) const {
  ScheduleBuilder b("hier");
  Topology flat;
  const Topology& topo = topologyOf(a, flat);
  HierBuilder{b, topo, a, inputBuffer(a)}.allReduce(nestedOrder(topo), 0, Range{0, a.count});
  return std::move(b).finish();
}

}  // namespace braid::algos
