#include "algos/pairwise_alltoall.h"

#include "algos/pattern.h"

namespace braid::algos {

bool PairwiseAlltoAll::supports(const CollArgs& args) const {
  return args.coll == Collective::AlltoAll;
}

// In place, block p is both what rank r owes rank p (sent in step p - r) and where rank p's
// block lands (received in step r - p). A receive in an earlier step would overwrite the block
// before it is sent. A receive in the same step (the middle one, for an even rank count) would
// wait for the send, while the send, being large, waits for the peer's receive, which waits for
// the peer's send in turn: a deadlock. So receives up to the middle step park in scratch, and
// the block moves into place once its send is done. Later receives find their block sent in an
// earlier step, whose peer received it into scratch without waiting; the builder's
// write-after-read dependency orders them after that send.
Schedule PairwiseAlltoAll::build(const CollArgs& a) const {
  ScheduleBuilder b("pairwise");
  const int n = a.nranks, r = a.rank;
  const size_t count = a.count;
  if (count == 0) return std::move(b).finish();
  const Buffer in = inputBuffer(a);
  auto parked = [&](int step) { return a.inPlace && 2 * step <= n; };
  auto parking = [&](int step) { return block(Buffer::Scratch, step - 1, count); };
  if (a.inPlace) b.needScratch(static_cast<size_t>(n / 2) * count);
  if (!a.inPlace) b.copy(block(in, r, count), block(Buffer::Recv, r, count));

  for (int k = 1; k < n; ++k) {
    const int to = mod(r + k, n), from = mod(r - k, n);
    sendChunks(b, to, block(in, to, count), a.chunkCount);
    recvChunks(b, from, parked(k) ? parking(k) : block(Buffer::Recv, from, count), a.chunkCount);
    // The block for `to` has left; what `to` sent in step n - k may take its place.
    if (parked(n - k)) b.copy(parking(n - k), block(Buffer::Recv, to, count));
  }
  return std::move(b).finish();
}

}  // namespace braid::algos
