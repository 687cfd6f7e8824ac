#include "algos/pairwise_alltoall.h"

#include "algos/pattern.h"

namespace braid::algos {

bool PairwiseAlltoAll::supports(const CollArgs& args) const {
  return args.coll == Collective::AlltoAll;
}

// In place, block p is both what rank r owes rank p (sent in step p - r) and where rank p's
// block lands (received in step r - p). When the receive comes first (step k < n - k) the
// incoming block is parked in scratch and moved into place right after the send has read the
// block it overwrites; otherwise the builder's write-after-read dependency already orders them.
Schedule PairwiseAlltoAll::build(const CollArgs& a) const {
  ScheduleBuilder b("pairwise");
  const int n = a.nranks, r = a.rank;
  const size_t count = a.count;
  if (count == 0) return std::move(b).finish();
  const Buffer in = inputBuffer(a);
  auto parked = [&](int step) { return a.inPlace && 2 * step < n; };
  auto parking = [&](int step) { return block(Buffer::Scratch, step - 1, count); };
  if (a.inPlace) b.needScratch(static_cast<size_t>((n - 1) / 2) * count);
  if (!a.inPlace) b.copy(block(in, r, count), block(Buffer::Recv, r, count));

  for (int k = 1; k < n; ++k) {
    const int to = mod(r + k, n), from = mod(r - k, n);
    sendChunks(b, to, block(in, to, count), a.chunkCount);
    if (parked(n - k)) b.copy(parking(n - k), block(Buffer::Recv, to, count));

    recvChunks(b, from, parked(k) ? parking(k) : block(Buffer::Recv, from, count), a.chunkCount);
  }
  return std::move(b).finish();
}

}  // namespace braid::algos
