#include "algos/ring_pattern.h"

namespace braid::algos {

// Step s: position i sends part (i - s) and receives part (i - s - 1) from its predecessor,
// adding its own contribution, so after size - 1 steps it holds the whole sum of part (i + 1).
// The two directions of a step interleave chunk by chunk, so a chunk moves on as soon as it
// has arrived, not when its whole part has.
void ringReduceScatter(ScheduleBuilder& b, const RingOrder& ring, Range data, Buffer input, size_t chunk) {
  const int n = ring.size(), i = ring.pos;
  if (n == 1) return;
  for (int s = 0; s < n - 1; ++s) {
    const Range out = ringPart(data, n, mod(i - s, n));
    const Range in = ringPart(data, n, mod(i - s - 1, n));
    const Buffer sendFrom = s == 0 ? input : Buffer::Recv;
    interleaveChunks(
        in.count, out.count, chunk,
        [&](size_t off, size_t cnt) {
          b.recvReduce(ring.prev(), {input, in.offset + off, cnt}, {Buffer::Recv, in.offset + off, cnt});
        },
        [&](size_t off, size_t cnt) { b.send(ring.next(), {sendFrom, out.offset + off, cnt}); });
  }
}

void ringAllGather(ScheduleBuilder& b, const RingOrder& ring, Range data, size_t chunk) {
  const int n = ring.size(), i = ring.pos;
  for (int s = 0; s < n - 1; ++s) {
    const Range out = ringPart(data, n, mod(i + 1 - s, n));
    const Range in = ringPart(data, n, mod(i - s, n));
    interleaveChunks(
        out.count, in.count, chunk,
        [&](size_t off, size_t cnt) { b.send(ring.next(), {Buffer::Recv, out.offset + off, cnt}); },
        [&](size_t off, size_t cnt) { b.recv(ring.prev(), {Buffer::Recv, in.offset + off, cnt}); });
  }
}

namespace {

using Stage = void (*)(ScheduleBuilder&, const RingOrder&, Range, Buffer, size_t);
using Gather = void (*)(ScheduleBuilder&, const RingOrder&, Range, size_t);

void allReduce(Stage reduceScatter, Gather allGather, ScheduleBuilder& b, const RingOrder& ring,
               Range data, Buffer input, size_t chunk, bool average) {
  if (ring.size() == 1) return;
  reduceScatter(b, ring, data, input, chunk);
  const Range owned = ringPart(data, ring.size(), ringOwnedPart(ring.pos, ring.size()));
  if (average && owned.count > 0) b.finishAvg({Buffer::Recv, owned.offset, owned.count});
  allGather(b, ring, data, chunk);
}

}  // namespace

void ringAllReduce(ScheduleBuilder& b, const RingOrder& ring, Range data, Buffer input, size_t chunk,
                   bool average) {
  allReduce(ringReduceScatter, ringAllGather, b, ring, data, input, chunk, average);
}

// Position i's part arrives from the others in the order i-1, i-2, ... and is summed in that
// order into Recv (the first addition reads the input).
void directReduceScatter(ScheduleBuilder& b, const RingOrder& ring, Range data, Buffer input, size_t chunk) {
  const int n = ring.size(), i = ring.pos;
  if (n == 1) return;
  for (int k = 1; k < n; ++k) {
    const int p = mod(i + k, n);
    const Range part = ringPart(data, n, ringOwnedPart(p, n));
    sendChunks(b, ring.order[static_cast<size_t>(p)], {input, part.offset, part.count}, chunk);
  }
  const Range mine = ringPart(data, n, ringOwnedPart(i, n));
  Buffer from = input;
  for (int k = 1; k < n; ++k) {
    const int from_rank = ring.order[static_cast<size_t>(mod(i - k, n))];
    forEachChunk(mine, chunk, [&](size_t off, size_t cnt) {
      b.recvReduce(from_rank, {from, off, cnt}, {Buffer::Recv, off, cnt});
    });
    from = Buffer::Recv;
  }
}

void directAllGather(ScheduleBuilder& b, const RingOrder& ring, Range data, size_t chunk) {
  const int n = ring.size(), i = ring.pos;
  const Range mine = ringPart(data, n, ringOwnedPart(i, n));
  for (int k = 1; k < n; ++k)
    sendChunks(b, ring.order[static_cast<size_t>(mod(i + k, n))], {Buffer::Recv, mine.offset, mine.count}, chunk);
  for (int k = 1; k < n; ++k) {
    const int q = mod(i - k, n);
    const Range part = ringPart(data, n, ringOwnedPart(q, n));
    recvChunks(b, ring.order[static_cast<size_t>(q)], {Buffer::Recv, part.offset, part.count}, chunk);
  }
}

void directAllReduce(ScheduleBuilder& b, const RingOrder& ring, Range data, Buffer input, size_t chunk,
                     bool average) {
  allReduce(directReduceScatter, directAllGather, b, ring, data, input, chunk, average);
}

}  // namespace braid::algos
