#include "algos/chain.h"

#include "algos/pattern.h"

namespace braid::algos {

bool ChainBroadcast::supports(const CollArgs& args) const {
  return args.coll == Collective::Broadcast;
}

Schedule ChainBroadcast::build(const CollArgs& a) const {
  ScheduleBuilder b("chain");
  const ChainLinks links = chainLinks(a.rank, a.nranks, a.root);
  const Region result{Buffer::Recv, 0, a.count};
  // Only the root reads its sendbuff; every other rank forwards out of its recvbuff.
  const Region source = a.rank == a.root ? Region{inputBuffer(a), 0, a.count} : result;

  forEachChunk(a.count, a.chunkCount, [&](size_t off, size_t n) {
    if (links.towardRoot >= 0) b.recv(links.towardRoot, slice(result, off, n));
    if (links.awayFromRoot >= 0) b.send(links.awayFromRoot, slice(source, off, n));
  });
  // After the sends, so the root's first chunk leaves before its local copy.
  if (a.rank == a.root && !a.inPlace && a.count > 0) b.copy(source, result);
  return std::move(b).finish();
}

bool ChainReduce::supports(const CollArgs& args) const { return args.coll == Collective::Reduce; }

Schedule ChainReduce::build(const CollArgs& a) const {
  ScheduleBuilder b("chain");
  const ChainLinks links = chainLinks(a.rank, a.nranks, a.root);
  const bool root = a.rank == a.root;
  const Region input{inputBuffer(a), 0, a.count};
  // recvbuff means nothing off the root (it may be null, or the input itself when in place),
  // so partial sums travel through scratch there.
  const Region partial =
      root ? Region{Buffer::Recv, 0, a.count} : Region{Buffer::Scratch, 0, a.count};
  const bool tail = links.awayFromRoot < 0;
  if (!root && !tail) b.needScratch(a.count);

  forEachChunk(a.count, a.chunkCount, [&](size_t off, size_t n) {
    if (tail) {  // the tail's partial sum is its own input
      if (!root) b.send(links.towardRoot, slice(input, off, n));
      return;
    }
    b.recvReduce(links.awayFromRoot, slice(input, off, n), slice(partial, off, n));
    if (!root)
      b.send(links.towardRoot, slice(partial, off, n));
    else if (a.average)
      b.finishAvg(slice(partial, off, n));
  });
  // A lone rank is both root and tail: its result is its input.
  if (root && tail && !a.inPlace && a.count > 0) b.copy(input, partial);
  return std::move(b).finish();
}

}  // namespace braid::algos
