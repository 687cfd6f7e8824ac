#include "algos/point_to_point.h"

#include "algos/pattern.h"

namespace braid::algos {

bool PointToPointSend::supports(const CollArgs& args) const {
  return args.coll == Collective::Send;
}

Schedule PointToPointSend::build(const CollArgs& a) const {
  ScheduleBuilder b("p2p");
  sendChunks(b, a.root, Region{Buffer::Send, 0, a.count}, a.chunkCount);
  return std::move(b).finish();
}

bool PointToPointRecv::supports(const CollArgs& args) const {
  return args.coll == Collective::Recv;
}

Schedule PointToPointRecv::build(const CollArgs& a) const {
  ScheduleBuilder b("p2p");
  recvChunks(b, a.root, Region{Buffer::Recv, 0, a.count}, a.chunkCount);
  return std::move(b).finish();
}

}  // namespace braid::algos
