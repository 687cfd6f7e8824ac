// Ring AllReduce: a reduce-scatter around the ring, then an all-gather around it.
// The buffer is cut into nranks segments; in reduce-scatter step s rank r sends segment
// (r - s) and receives segment (r - s - 1) from its predecessor, adding its own contribution,
// so after nranks - 1 steps it holds the full sum of segment (r + 1). The all-gather then
// passes the finished segments on. Segments are cut into chunks so that every hop is a
// pipeline: a chunk moves on as soon as it has arrived, not when its whole segment has.
// Cost: 2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma.
#include "algos/ring_allreduce.h"

#include "algos/pattern.h"

namespace braid::algos {

bool RingAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce;
}

Schedule RingAllReduce::build(const CollArgs& a) const {
  ScheduleBuilder b("ring");
  const int n = a.nranks, r = a.rank;
  const Buffer in = inputBuffer(a);
  auto region = [](Buffer buf, size_t off, size_t cnt) { return Region{buf, off, cnt}; };

  if (n == 1) {
    if (!a.inPlace && a.count > 0) b.copy(region(in, 0, a.count), region(Buffer::Recv, 0, a.count));
    return std::move(b).finish();
  }
  const int next = mod(r + 1, n), prev = mod(r - 1, n);

  for (int s = 0; s < n - 1; ++s) {  // reduce-scatter
    const Range sendSeg = evenPart(a.count, n, mod(r - s, n));
    const Range recvSeg = evenPart(a.count, n, mod(r - s - 1, n));
    const Buffer sendFrom = s == 0 ? in : Buffer::Recv;
    interleaveChunks(
        recvSeg.count, sendSeg.count, a.chunkCount,
        [&](size_t off, size_t cnt) {
          b.recvReduce(prev, region(in, recvSeg.offset + off, cnt),
                       region(Buffer::Recv, recvSeg.offset + off, cnt));
        },
        [&](size_t off, size_t cnt) { b.send(next, region(sendFrom, sendSeg.offset + off, cnt)); });
  }

  const Range owned = evenPart(a.count, n, mod(r + 1, n));
  if (a.average && owned.count > 0) b.finishAvg(region(Buffer::Recv, owned.offset, owned.count));

  for (int s = 0; s < n - 1; ++s) {  // all-gather
    const Range sendSeg = evenPart(a.count, n, mod(r + 1 - s, n));
    const Range recvSeg = evenPart(a.count, n, mod(r - s, n));
    interleaveChunks(
        sendSeg.count, recvSeg.count, a.chunkCount,
        [&](size_t off, size_t cnt) { b.send(next, region(Buffer::Recv, sendSeg.offset + off, cnt)); },
        [&](size_t off, size_t cnt) { b.recv(prev, region(Buffer::Recv, recvSeg.offset + off, cnt)); });
  }
  return std::move(b).finish();
}

}  // namespace braid::algos
