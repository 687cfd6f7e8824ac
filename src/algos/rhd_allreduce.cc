#include "algos/rhd_allreduce.h"

#include <algorithm>
#include <vector>

#include "algos/pattern.h"
#include "algos/topology.h"

namespace braid::algos {

namespace {

// The ranks after the fold: 2^k of them, numbered 0..2^k-1. Rank 2i+1 (i < extra) stands for
// itself and rank 2i; ranks from 2 extra on stand for themselves.
struct Fold {
  int pow2;   // participants in the halving and doubling
  int extra;  // ranks folded away (p - pow2)

  explicit Fold(int n) : pow2(1), extra(0) {
    while (pow2 * 2 <= n) pow2 *= 2;
    extra = n - pow2;
  }
  bool foldedAway(int rank) const { return rank < 2 * extra && rank % 2 == 0; }
  // -1 for a folded-away rank.
  int virtualRank(int rank) const {
    if (rank < 2 * extra) return rank % 2 == 0 ? -1 : rank / 2;
    return rank - extra;
  }
  int realRank(int vr) const { return vr < extra ? 2 * vr + 1 : vr + extra; }
};

// The exchanges' partner bits (masks of virtual ranks), in the order the halving takes them; the
// doubling takes them in reverse. The halving's first exchange carries half of the buffer, the
// next a quarter and so on, so the bits whose partners share the cheapest links go first: with
// ranks numbered host by host the largest exchanges stay inside hosts, then racks, and a host's
// uplink carries what hier's does (MPICH and Gloo pair the nearest ranks first for the same
// reason, taking rank order for nearness). How near a bit's partners are is the mean level of
// the group they share over a sample of virtual ranks (every rank computes the same order from
// the topology alone); bits alike, and every bit without a topology, go from the highest down.
std::vector<int> exchangeMasks(const Fold& fold, const Topology* topo) {
  std::vector<int> masks;
  for (int mask = fold.pow2 / 2; mask >= 1; mask /= 2) masks.push_back(mask);
  if (!topo || topo->nranks() != fold.pow2 + fold.extra) return masks;
  // An odd step visits distinct virtual ranks spread over the whole range.
  constexpr int kSamples = 64;
  const int samples = std::min(kSamples, fold.pow2);
  const int step = (fold.pow2 / 2 + fold.pow2 / 8) | 1;
  std::vector<std::pair<int, int>> keyed;  // (sum of shared levels, position in masks)
  for (size_t i = 0; i < masks.size(); ++i) {
    int levels = 0;
    for (int k = 0; k < samples; ++k) {
      const int v = static_cast<int>((static_cast<int64_t>(k) * step) & (fold.pow2 - 1));
      levels += topo->commonLevel(fold.realRank(v), fold.realRank(v ^ masks[i]));
    }
    keyed.emplace_back(levels, static_cast<int>(i));
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int> ordered;
  for (const auto& [levels, i] : keyed) ordered.push_back(masks[static_cast<size_t>(i)]);
  return ordered;
}

// The elements of parts [first, first + parts) when the buffer is cut into `total` parts.
Range partsRange(size_t count, int total, int first, int parts) {
  const Range lo = evenPart(count, total, first);
  const Range hi = evenPart(count, total, first + parts - 1);
  return {lo.offset, hi.offset + hi.count - lo.offset};
}

// One exchange with `peer`: send `out` and receive `in` chunk by chunk, interleaved so both
// directions pipeline; `receive` is the step used for each incoming chunk.
template <typename Receive>
void exchange(ScheduleBuilder& b, int peer, Region out, Range in, size_t chunk, Receive&& receive) {
  interleaveChunks(
      out.count, in.count, chunk, [&](size_t off, size_t n) { b.send(peer, slice(out, off, n)); },
      [&](size_t off, size_t n) { receive(in.offset + off, n); });
}

}  // namespace

bool RhdAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce;
}

Schedule RhdAllReduce::build(const CollArgs& a) const {
  ScheduleBuilder b("rhd");
  const int r = a.rank;
  const Buffer in = inputBuffer(a);
  const Region all{Buffer::Recv, 0, a.count};
  const Fold fold(a.nranks);
  if (a.nranks == 1) {
    if (!a.inPlace && a.count > 0) b.copy({in, 0, a.count}, all);
    return std::move(b).finish();
  }

  if (fold.foldedAway(r)) {  // hand the input to the partner, wait for the result
    sendChunks(b, r + 1, {in, 0, a.count}, a.chunkCount);
    recvChunks(b, r + 1, all, a.chunkCount);
    return std::move(b).finish();
  }
  // Where this rank's running sum is read from: the input until the first reduction lands in
  // recvbuff.
  Buffer source = in;
  const bool foldedInto = r < 2 * fold.extra;
  if (foldedInto) {
    forEachChunk(a.count, a.chunkCount, [&](size_t off, size_t n) {
      b.recvReduce(r - 1, {in, off, n}, slice(all, off, n));
    });
    source = Buffer::Recv;
  }

  const int vr = fold.virtualRank(r), p2 = fold.pow2;
  // Halving: keep the half of the current parts on this rank's side of each bit in turn.
  struct Halving {
    int peer;
    Range kept, given;
  };
  std::vector<Halving> halvings;
  int first = 0, parts = p2;
  for (int mask : exchangeMasks(fold, a.topology)) {
    const int peer = fold.realRank(vr ^ mask);
    parts /= 2;
    const int keep = (vr & mask) ? first + parts : first,
              give = (vr & mask) ? first : first + parts;
    const Range kept = partsRange(a.count, p2, keep, parts);
    const Range given = partsRange(a.count, p2, give, parts);
    const Buffer from = source;
    exchange(b, peer, {from, given.offset, given.count}, kept, a.chunkCount,
             [&](size_t off, size_t n) {
               b.recvReduce(peer, {from, off, n}, {Buffer::Recv, off, n});
             });
    halvings.push_back({peer, kept, given});
    source = Buffer::Recv;
    first = keep;
  }
  // Now the part kept last is complete here and nowhere else: Avg divides it once.
  const Range owned = halvings.back().kept;
  if (a.average && owned.count > 0) b.finishAvg(slice(all, owned.offset, owned.count));

  // Doubling: the exchanges in reverse, each sending what this rank kept there (complete by
  // now) and receiving what it gave.
  for (auto h = halvings.rbegin(); h != halvings.rend(); ++h)
    exchange(b, h->peer, slice(all, h->kept.offset, h->kept.count), h->given, a.chunkCount,
             [&](size_t off, size_t n) { b.recv(h->peer, slice(all, off, n)); });

  if (foldedInto) sendChunks(b, r - 1, all, a.chunkCount);
  return std::move(b).finish();
}

}  // namespace braid::algos
