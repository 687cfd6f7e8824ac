#include "algos/hier_allreduce.h"

#include <algorithm>

#include "algos/ring_pattern.h"
#include "algos/topology_pattern.h"

namespace braid::algos {

namespace {

// The three phases of one range's AllReduce: the reduce-scatters (and folds) down to the top
// level, the AllReduce at the top, the all-gathers (and results to folded ranks) back up.
enum class Phase { Down, Top, Up };

struct HierBuilder {
  ScheduleBuilder& b;
  const Topology& topo;
  const CollArgs& a;
  // Where this rank's running sum of the range being reduced lives: its input until a
  // reduction has landed in recvbuff. Each stage reduces a sub-range of the last one, whose
  // first step reads what the last stage wrote, so one value serves all stages.
  Buffer source;
  // The phase whose steps are emitted. A walk emits one phase; the walk itself (and `source`)
  // is the same every time, so the phases of one range can be emitted apart.
  Phase emit = Phase::Down;
  // Per level, the groups of the members the walk meets there and the index of this rank's: the
  // same for every range and phase, so a build splits the members once per level, not once per
  // walk (at thousands of ranks that split is most of a pipelined schedule's build).
  struct Level {
    std::vector<std::vector<int>> groups;
    size_t mine = 0;
  };
  std::vector<Level>* levels = nullptr;

  bool emitting(Phase phase) const { return emit == phase; }

  // AllReduce of `data` among `members` (this rank among them), which are in one group at
  // every level from `level` up; stages below `level` are done.
  void allReduce(const std::vector<int>& members, int level, Range data) {
    if (members.size() == 1) return finishAlone(data);
    if (level >= topo.levels()) {
      const RingOrder ring{members, positionOf(members, a.rank)};
      if (emitting(Phase::Top)) ringAllReduce(b, ring, data, source, a.chunkCount, a.average);
      source = Buffer::Recv;
      return;
    }
    Level& split = (*levels)[static_cast<size_t>(level)];
    if (split.groups.empty()) {
      split.groups = groupsAt(topo, level, members);
      split.mine = groupHolding(split.groups, a.rank);
    }
    const std::vector<std::vector<int>>& groups = split.groups;
    size_t g = groups[0].size();
    for (const auto& group : groups) g = std::min(g, group.size());
    const std::vector<int>& mine = groups[split.mine];
    const size_t k = static_cast<size_t>(positionOf(mine, a.rank));

    if (k >= g) {  // beyond the even split: fold into rank k mod g, get the result back
      const int base = mine[k % g];
      if (emitting(Phase::Down))
        sendChunks(b, base, {source, data.offset, data.count}, a.chunkCount);
      if (emitting(Phase::Up))
        recvChunks(b, base, {Buffer::Recv, data.offset, data.count}, a.chunkCount);
      return;
    }
    std::vector<int> folded;  // the ranks beyond g that fold into this one, in order
    for (size_t j = g + k; j < mine.size(); j += g) folded.push_back(mine[j]);
    for (int extra : folded) {
      if (emitting(Phase::Down))
        forEachChunk(Range{data.offset, data.count}, a.chunkCount, [&](size_t off, size_t n) {
          b.recvReduce(extra, {source, off, n}, {Buffer::Recv, off, n});
        });
      source = Buffer::Recv;
    }

    const std::vector<int> ring(mine.begin(), mine.begin() + static_cast<long>(g));
    const RingOrder order{ring, static_cast<int>(k)};
    if (emitting(Phase::Down)) ringReduceScatter(b, order, data, source, a.chunkCount);
    if (g > 1) source = Buffer::Recv;
    // The k-th rank of every group holds the same piece of its group's sum: they go on up.
    std::vector<int> peers;
    for (const auto& group : groups) peers.push_back(group[k]);
    allReduce(peers, level + 1,
              ringPart(data, static_cast<int>(g), ringOwnedPart(order.pos, order.size())));
    if (!emitting(Phase::Up)) return;
    ringAllGather(b, order, data, a.chunkCount);
    for (int extra : folded)
      sendChunks(b, extra, {Buffer::Recv, data.offset, data.count}, a.chunkCount);
  }

  // This rank holds the complete sum of `data` on its own.
  void finishAlone(Range data) {
    if (data.count == 0) return;
    const Region result{Buffer::Recv, data.offset, data.count};
    if (emitting(Phase::Top)) {
      if (source != Buffer::Recv) b.copy({source, data.offset, data.count}, result);
      if (a.average && a.nranks > 1) b.finishAvg(result);
    }
    source = Buffer::Recv;
  }
};

}  // namespace

// Pieces smaller than this only multiply the messages, and the cost model does not see what a
// message costs a rank that shares its core. With 64 KiB pieces hierpipe pays off on the emulated
// cluster (8 ranks on 2 cores): at 256 KiB, four pieces, 3.35 ms against hier's 3.7-4.5 ms
// (bench/results/netcluster_allreduce.md, runs S1-S3, whose command it gives).
constexpr size_t kMinPieceBytes = 64 << 10;

// Pipelining needs pieces worth the messages, and two stages on different links: some level whose
// groups are more than one and fewer than the ranks (on one host, or with every rank alone up to
// the top, hier is one ring, and four pieces of it only cost four times the messages).
bool HierAllReduce::supports(const CollArgs& args) const {
  if (args.coll != Collective::AllReduce) return false;
  if (pieces_ == 1) return true;
  if (!args.topology || args.count < static_cast<size_t>(pieces_)) return false;
  if (args.count * args.typeSize < static_cast<size_t>(pieces_) * kMinPieceBytes) return false;
  const Topology& topo = *args.topology;
  for (int level = 0; level < topo.levels(); ++level) {
    const int count = topo.groups(level);
    if (count > 1 && count < topo.nranks()) return true;
  }
  return false;
}

// At least pieces_, more for large buffers (a piece per MiB, up to 4 x pieces_): the pipeline's
// fill and drain, one piece going down before the top starts and one coming up after it ends,
// then cost a smaller share. On the emulated cluster 4 pieces reached 80-81% of the uplink bound
// at 64-256 MiB.
size_t HierAllReduce::piecesFor(size_t bytes) const {
  const size_t base = static_cast<size_t>(pieces_);
  return pieces_ == 1 ? 1 : std::clamp<size_t>(bytes >> 20, base, 4 * base);
}

// One range: its phases in order. Pieces: piece i + 1 goes down while piece i is at the top
// (other links: the top level's) and comes up (on the links piece i + 1 went down, after it,
// in every rank's program alike, so the FIFO channels pair the same messages on both ends).
Schedule HierAllReduce::build(const CollArgs& a) const {
  ScheduleBuilder b{std::string(name())};
  Topology flat;
  const Topology& topo = topologyOf(a, flat);
  const std::vector<int> order = nestedOrder(topo);
  const int pieces =
      static_cast<int>(std::min(piecesFor(a.count * a.typeSize), std::max<size_t>(a.count, 1)));
  std::vector<HierBuilder::Level> levels(static_cast<size_t>(topo.levels()));
  auto emit = [&](int piece, Phase phase) {
    const Range r = evenPart(a.count, pieces, piece);
    HierBuilder walk{b, topo, a, inputBuffer(a), phase, &levels};
    walk.allReduce(order, 0, r);
  };
  emit(0, Phase::Down);
  for (int i = 0; i < pieces; ++i) {
    if (i + 1 < pieces) emit(i + 1, Phase::Down);
    emit(i, Phase::Top);
    emit(i, Phase::Up);
  }
  return std::move(b).finish();
}

}  // namespace braid::algos
