#include "algos/direct_allreduce.h"

namespace braid::algos {

bool DirectAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce && args.count * args.typeSize <= args.directMaxBytes;
}

Schedule DirectAllReduce::build(const CollArgs& a) const {
  ScheduleBuilder b("direct");
  const int n = a.nranks, r = a.rank;
  const size_t count = a.count;
  const Buffer in = a.inPlace ? Buffer::Recv : Buffer::Send;
  // Scratch slot p holds rank p's contribution (our own too when in place, because the result
  // overwrites the input before every contribution has been added).
  auto slot = [&](int p) { return Region{Buffer::Scratch, static_cast<size_t>(p) * count, count}; };
  auto contribution = [&](int p) { return p == r && !a.inPlace ? Region{in, 0, count} : slot(p); };
  const Region result{Buffer::Recv, 0, count};
  if (count == 0) return std::move(b).finish();
  if (n == 2) {
    // Two ranks: reduce the peer's data straight into the result as it arrives, both ranks in
    // the order x0 OP x1 (rank 1 puts the incoming operand first), so they agree bit for bit. In
    // place, our input is first copied aside and sent from there, so the receive that
    // overwrites it waits for a local copy, never for the peer.
    const int peer = 1 - r;
    Region source{in, 0, count};
    if (a.inPlace) {
      b.needScratch(count);
      b.copy(source, Region{Buffer::Scratch, 0, count});
      b.send(peer, Region{Buffer::Scratch, 0, count});
    } else {
      b.send(peer, source);
    }
    b.recvReduce(peer, source, result, /*incomingFirst=*/r == 1);  // both compute x0 OP x1
    if (a.average) b.finishAvg(result);
    return std::move(b).finish();
  }
  b.needScratch(static_cast<size_t>(n) * count);

  if (a.inPlace) b.copy(Region{in, 0, count}, slot(r));
  for (int k = 1; k < n; ++k) b.send((r + k) % n, Region{in, 0, count});
  for (int k = 1; k < n; ++k) b.recv((r - k + n) % n, slot((r - k + n) % n));
  b.copy(contribution(0), result);
  for (int p = 1; p < n; ++p) b.reduce(contribution(p), result);
  if (a.average) b.finishAvg(result);
  return std::move(b).finish();
}

}  // namespace braid::algos
