#include "algos/ring_reduce_scatter.h"

#include "algos/pattern.h"

namespace braid::algos {

bool RingReduceScatter::supports(const CollArgs& args) const {
  return args.coll == Collective::ReduceScatter;
}

Schedule RingReduceScatter::build(const CollArgs& a) const {
  ScheduleBuilder b("ring");
  const int n = a.nranks, r = a.rank;
  auto input = [&](int index) { return block(Buffer::Send, mod(index, n), a.count); };
  // In place recvbuff is sendbuff's block r, so the result is addressed through Buffer::Send.
  const Region result = a.inPlace ? input(r) : Region{Buffer::Recv, 0, a.count};
  if (n == 1) {
    if (!a.inPlace && a.count > 0) b.copy(input(0), result);
    return std::move(b).finish();
  }
  // Partial sums of the blocks passing through: sendbuff is the caller's input and recvbuff
  // holds only the final block, so neither may carry them. One slot per step keeps the steps
  // free of write-after-read waits on each other.
  auto partial = [&](int step) { return block(Buffer::Scratch, step, a.count); };
  b.needScratch(static_cast<size_t>(n - 2) * a.count);

  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    const bool last = s == n - 2;
    const Region out = s == 0 ? input(r - 1) : partial(s - 1);
    const Region mine = input(r - s - 2);
    const Region into = last ? result : partial(s);
    // The send first (it waits for the last step's receive, not this one's), as in
    // ring_pattern.cc's reduce-scatter.
    forEachChunk(a.count, a.chunkCount, [&](size_t off, size_t cnt) {
      b.send(next, slice(out, off, cnt));
      b.recvReduce(prev, slice(mine, off, cnt), slice(into, off, cnt));
      if (last && a.average) b.finishAvg(slice(into, off, cnt));
    });
  }
  return std::move(b).finish();
}

}  // namespace braid::algos
