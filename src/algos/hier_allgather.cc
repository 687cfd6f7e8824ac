#include "algos/hier_allgather.h"

#include "algos/hier_pattern.h"
#include "algos/ring_pattern.h"
#include "algos/topology_pattern.h"

namespace braid::algos {

bool HierAllGather::supports(const CollArgs& args) const {
  return args.coll == Collective::AllGather;
}

Schedule HierAllGather::build(const CollArgs& a) const {
  ScheduleBuilder b("hier");
  Topology flat;
  const std::vector<BlockStage> stages = blockStages(topologyOf(a, flat), a.rank);
  auto slot = [&](int index) { return block(Buffer::Recv, index, a.count); };
  // In place the input already sits in its slot (sendbuff == recvbuff + rank * count); out of
  // place it is sent straight from sendbuff, so the first sends need not wait for the copy.
  const Region own = a.inPlace ? slot(a.rank) : Region{Buffer::Send, 0, a.count};
  auto from = [&](int index) { return index == a.rank ? own : slot(index); };
  if (!a.inPlace && a.count > 0) b.copy(own, slot(a.rank));

  for (auto stage = stages.rbegin(); stage != stages.rend(); ++stage) {
    const RingOrder ring{stage->ring, stage->pos};
    const int n = ring.size(), i = ring.pos;
    for (int s = 0; s < n - 1; ++s) {
      const std::vector<int>& out = stage->blocks[static_cast<size_t>(mod(i - s, n))];
      const std::vector<int>& in = stage->blocks[static_cast<size_t>(mod(i - s - 1, n))];
      for (size_t x = 0; x < out.size(); ++x)
        interleaveChunks(
            a.count, a.count, a.chunkCount,
            [&](size_t off, size_t cnt) { b.send(ring.next(), slice(from(out[x]), off, cnt)); },
            [&](size_t off, size_t cnt) { b.recv(ring.prev(), slice(slot(in[x]), off, cnt)); });
    }
  }
  return std::move(b).finish();
}

}  // namespace braid::algos
