#include "algos/ring_pattern.h"

namespace braid::algos {

// Step s: position i sends part (i - s) and receives part (i - s - 1) from its predecessor,
// adding its own contribution, so after size - 1 steps it holds the whole sum of part (i + 1).
// The two directions of a step interleave chunk by chunk, so a chunk moves on as soon as it
// has arrived, not when its whole part has. A chunk's send is listed before the receive of the
// same step, which it does not wait for: the selector's representative ranks (cost_model.cc)
// time a receive from the predecessor by the rank's own send to its successor with the same
// number, which must come first in schedule order.
void ringReduceScatter(ScheduleBuilder& b, const RingOrder& ring, Range data, Buffer input,
                       size_t chunk) {
  const int n = ring.size(), i = ring.pos;
  if (n == 1) return;
  for (int s = 0; s < n - 1; ++s) {
    const Range out = ringPart(data, n, mod(i - s, n));
    const Range in = ringPart(data, n, mod(i - s - 1, n));
    const Buffer sendFrom = s == 0 ? input : Buffer::Recv;
    interleaveChunks(
        out.count, in.count, chunk,
        [&](size_t off, size_t cnt) {
          b.send(ring.next(), {sendFrom, out.offset + off, cnt});
        },
        [&](size_t off, size_t cnt) {
          b.recvReduce(ring.prev(), {input, in.offset + off, cnt},
                       {Buffer::Recv, in.offset + off, cnt});
        });
  }
}

void ringAllGather(ScheduleBuilder& b, const RingOrder& ring, Range data, size_t chunk) {
  const int n = ring.size(), i = ring.pos;
  for (int s = 0; s < n - 1; ++s) {
    const Range out = ringPart(data, n, mod(i + 1 - s, n));
    const Range in = ringPart(data, n, mod(i - s, n));
    interleaveChunks(
        out.count, in.count, chunk,
        [&](size_t off, size_t cnt) {
          b.send(ring.next(), {Buffer::Recv, out.offset + off, cnt});
        },
        [&](size_t off, size_t cnt) {
          b.recv(ring.prev(), {Buffer::Recv, in.offset + off, cnt});
        });
  }
}

void ringAllReduce(ScheduleBuilder& b, const RingOrder& ring, Range data, Buffer input,
                   size_t chunk, bool average) {
  if (ring.size() == 1) return;
  ringReduceScatter(b, ring, data, input, chunk);
  const Range owned = ringPart(data, ring.size(), ringOwnedPart(ring.pos, ring.size()));
  if (average && owned.count > 0) b.finishAvg({Buffer::Recv, owned.offset, owned.count});
  ringAllGather(b, ring, data, chunk);
}

}  // namespace braid::algos
