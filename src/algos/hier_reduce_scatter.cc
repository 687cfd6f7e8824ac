#include "algos/hier_reduce_scatter.h"

#include "algos/hier_pattern.h"
#include "algos/ring_pattern.h"
#include "algos/topology_pattern.h"

namespace braid::algos {

bool HierReduceScatter::supports(const CollArgs& args) const {
  return args.coll == Collective::ReduceScatter;
}

Schedule HierReduceScatter::build(const CollArgs& a) const {
  ScheduleBuilder b("hier");
  Topology flat;
  const std::vector<BlockStage> stages = blockStages(topologyOf(a, flat), a.rank);
  auto input = [&](int index) { return block(Buffer::Send, index, a.count); };
  auto partial = [&](int index) { return block(Buffer::Scratch, index, a.count); };
  // In place recvbuff is sendbuff's block rank, so the result is addressed through Buffer::Send.
  const Region result = a.inPlace ? input(a.rank) : Region{Buffer::Recv, 0, a.count};
  if (stages.empty()) {
    if (!a.inPlace && a.count > 0) b.copy(input(0), result);
    return std::move(b).finish();
  }
  b.needScratch(static_cast<size_t>(a.nranks) * a.count);

  for (size_t t = 0; t < stages.size(); ++t) {
    const BlockStage& stage = stages[t];
    const RingOrder ring{stage.ring, stage.pos};
    const int n = ring.size(), i = ring.pos;
    // This rank's contribution to a block: its input in the first stage, afterwards the
    // partial sum the stage below left in scratch.
    auto mine = [&](int index) { return t == 0 ? input(index) : partial(index); };
    const bool top = t + 1 == stages.size();
    // Step s sends part (i - s - 1) and adds this rank's share to part (i - s - 2) on its way
    // through, so after n - 1 steps part i is complete here.
    for (int s = 0; s < n - 1; ++s) {
      const std::vector<int>& out = stage.blocks[static_cast<size_t>(mod(i - s - 1, n))];
      const std::vector<int>& in = stage.blocks[static_cast<size_t>(mod(i - s - 2, n))];
      const bool last = s == n - 2;
      for (size_t x = 0; x < out.size(); ++x) {
        const Region from = s == 0 ? mine(out[x]) : partial(out[x]);
        const Region into = top && last ? result : partial(in[x]);
        interleaveChunks(
            a.count, a.count, a.chunkCount,
            [&](size_t off, size_t cnt) {
              b.recvReduce(ring.prev(), slice(mine(in[x]), off, cnt), slice(into, off, cnt));
              if (top && last && a.average) b.finishAvg(slice(into, off, cnt));
            },
            [&](size_t off, size_t cnt) { b.send(ring.next(), slice(from, off, cnt)); });
      }
    }
  }
  return std::move(b).finish();
}

}  // namespace braid::algos
