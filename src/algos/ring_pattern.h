// The ring reduce-scatter and all-gather over any order of ranks and any range of the buffer,
// shared by the flat ring, the rack-aware ring and the hierarchical AllReduce (which runs rings
// inside groups on a part of the buffer). Ring math lives here once, so every variant cuts
// parts and chunks alike on both ends of every message.
#pragma once

#include <span>

#include "algos/pattern.h"

namespace braid::algos {

// A ring through `order` (position -> rank); this rank stands at position `pos`.
struct RingOrder {
  std::span<const int> order;
  int pos = 0;

  int size() const { return static_cast<int>(order.size()); }
  int next() const { return order[static_cast<size_t>(mod(pos + 1, size()))]; }
  int prev() const { return order[static_cast<size_t>(mod(pos - 1, size()))]; }
};

// Which of the ring's parts of `data` position `pos` holds fully reduced after the
// reduce-scatter (the one its predecessor's contributions arrived with last).
inline int ringOwnedPart(int pos, int size) { return mod(pos + 1, size); }
inline Range ringPart(Range data, int size, int part) {
  const Range r = evenPart(data.count, size, part);
  return {data.offset + r.offset, r.count};
}

// Reduce-scatter of `data` around the ring: contributions are read from `input` (Send, or Recv
// when they already sit there), partial and final sums are written to Recv at the same offsets.
// Afterwards position i holds part ringOwnedPart(i) of the sum over the ring in Recv.
void ringReduceScatter(ScheduleBuilder& b, const RingOrder& ring, Range data, Buffer input,
                       size_t chunk);

// All-gather after ringReduceScatter: each position's owned part (in Recv) travels round.
void ringAllGather(ScheduleBuilder& b, const RingOrder& ring, Range data, size_t chunk);

// Both, with Avg's division on each owned part in between (when `average`). A ring of one
// does nothing: its caller owns the copy out of the input.
void ringAllReduce(ScheduleBuilder& b, const RingOrder& ring, Range data, Buffer input,
                   size_t chunk, bool average);

}  // namespace braid::algos
