#include "algos/ring_allgather.h"

#include "algos/pattern.h"

namespace braid::algos {

bool RingAllGather::supports(const CollArgs& args) const {
  return args.coll == Collective::AllGather;
}

Schedule RingAllGather::build(const CollArgs& a) const {
  ScheduleBuilder b("ring");
  const int n = a.nranks, r = a.rank;
  auto slot = [&](int index) { return block(Buffer::Recv, mod(index, n), a.count); };
  // In place the input already sits in its slot (sendbuff == recvbuff + rank * count).
  const Region own = a.inPlace ? slot(r) : Region{Buffer::Send, 0, a.count};
  if (!a.inPlace && a.count > 0) b.copy(own, slot(r));

  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    // Step 0 sends straight from the input, so it need not wait for the local copy.
    const Region out = s == 0 ? own : slot(r - s);
    const Region in = slot(r - s - 1);
    forEachChunk(a.count, a.chunkCount, [&](size_t off, size_t cnt) {
      b.send(next, slice(out, off, cnt));
      b.recv(prev, slice(in, off, cnt));
    });
  }
  return std::move(b).finish();
}

}  // namespace braid::algos
