#include "algos/direct_gather_scatter.h"

#include "algos/pattern.h"

namespace braid::algos {
bool DirectGather::supports(const CollArgs& args) const { return args.coll == Collective::Gather; }

Schedule DirectGather::build(const CollArgs& a) const {
  ScheduleBuilder b("direct");
  const int n = a.nranks, r = a.rank;
  const Region own{inputBuffer(a), 0, a.count};
  if (a.count == 0) return std::move(b).finish();
  if (r != a.root) {
    sendChunks(b, a.root, own, a.chunkCount);
    return std::move(b).finish();
  }
  // In place the root's input is the first block of recvbuff: it moves to the root's slot
  // before rank 0's block overwrites it (the builder orders that receive after this copy).
  const Region mySlot = block(Buffer::Recv, r, a.count);
  if (!a.inPlace || r != 0) b.copy(own, mySlot);
  for (int k = 1; k < n; ++k) {
    const int p = mod(r + k, n);
    recvChunks(b, p, block(Buffer::Recv, p, a.count), a.chunkCount);
  }
  return std::move(b).finish();
}

bool DirectScatter::supports(const CollArgs& args) const { return args.coll == Collective::Scatter; }

Schedule DirectScatter::build(const CollArgs& a) const {
  ScheduleBuilder b("direct");
  const int n = a.nranks, r = a.rank;
  const Region result{Buffer::Recv, 0, a.count};
  if (a.count == 0) return std::move(b).finish();
  if (r != a.root) {
    recvChunks(b, a.root, result, a.chunkCount);
    return std::move(b).finish();
  }
  const Buffer in = inputBuffer(a);
  for (int k = 1; k < n; ++k) {
    const int p = mod(r + k, n);
    sendChunks(b, p, block(in, p, a.count), a.chunkCount);
  }
  // Last, because in place the root's result overwrites block 0, which must first reach rank 0
  // (the builder makes this copy wait for those sends).
  if (!a.inPlace || r != 0) b.copy(block(in, r, a.count), result);
  return std::move(b).finish();
}

}  // namespace braid::algos
