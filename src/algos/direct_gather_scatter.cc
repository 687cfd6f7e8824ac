#include "algos/direct_gather_scatter.h"

#include "algos/pattern.h"

namespace braid::algos {
bool DirectGather::supports(const CollArgs& args) const { return args.coll == Collective::Gather; }

Schedule DirectGather::build(const CollArgs& a) const {
  ScheduleBuilder b("direct");
  const int n = a.nranks, r = a.rank;
  if (a.count == 0) return std::move(b).finish();
  // Off the root only sendbuff is read (recvbuff is not used there, in place or not).
  if (r != a.root) {
    sendChunks(b, a.root, Region{Buffer::Send, 0, a.count}, a.chunkCount);
    return std::move(b).finish();
  }
  // In place the root's input already sits in its slot (sendbuff == recvbuff + root * count).
  if (!a.inPlace) b.copy(Region{Buffer::Send, 0, a.count}, block(Buffer::Recv, r, a.count));
  for (int k = 1; k < n; ++k) {
    const int p = mod(r + k, n);
    recvChunks(b, p, block(Buffer::Recv, p, a.count), a.chunkCount);
  }
  return std::move(b).finish();
}

bool DirectScatter::supports(const CollArgs& args) const {
  return args.coll == Collective::Scatter;
}

Schedule DirectScatter::build(const CollArgs& a) const {
  ScheduleBuilder b("direct");
  const int n = a.nranks, r = a.rank;
  if (a.count == 0) return std::move(b).finish();
  // Off the root only recvbuff is written (sendbuff is not used there, in place or not).
  if (r != a.root) {
    recvChunks(b, a.root, Region{Buffer::Recv, 0, a.count}, a.chunkCount);
    return std::move(b).finish();
  }
  for (int k = 1; k < n; ++k) {
    const int p = mod(r + k, n);
    sendChunks(b, p, block(Buffer::Send, p, a.count), a.chunkCount);
  }
  // In place the root's block already is its result (recvbuff == sendbuff + root * count).
  if (!a.inPlace) b.copy(block(Buffer::Send, r, a.count), Region{Buffer::Recv, 0, a.count});
  return std::move(b).finish();
}

}  // namespace braid::algos
