// Ring AllReduce: a reduce-scatter around the ring, then an all-gather around it, both in
// ring_pattern.cc; the ring visits ranks in rank order.
#include "algos/ring_allreduce.h"

#include <numeric>
#include <vector>

#include "algos/ring_pattern.h"

namespace braid::algos {

bool RingAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce;
}

Schedule RingAllReduce::build(const CollArgs& a) const {
  std::vector<int> order(static_cast<size_t>(a.nranks));
  std::iota(order.begin(), order.end(), 0);
  return buildRingAllReduce("ring", a, order);
}

Schedule buildRingAllReduce(std::string name, const CollArgs& a, std::span<const int> order) {
  ScheduleBuilder b(std::move(name));
  const Buffer in = inputBuffer(a);
  if (a.nranks == 1) {
    if (!a.inPlace && a.count > 0) b.copy({in, 0, a.count}, {Buffer::Recv, 0, a.count});
    return std::move(b).finish();
  }
  int pos = 0;
  while (order[static_cast<size_t>(pos)] != a.rank) ++pos;
  ringAllReduce(b, RingOrder{order, pos}, Range{0, a.count}, in, a.chunkCount, a.average);
  return std::move(b).finish();
}

}  // namespace braid::algos
