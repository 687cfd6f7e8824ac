#pragma once

#include "algos/algorithm.h"

namespace braid::algos {

// ncclSend: `count` elements of sendbuff to rank `root`, in pipeline chunks.
class PointToPointSend final : public Algorithm {
 public:
  std::string_view name() const override { return "p2p"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

// ncclRecv: `count` elements from rank `root` into recvbuff, chunked exactly as the sender's
// PointToPointSend, so the k-th chunk sent meets the k-th chunk received with the same size.
class PointToPointRecv final : public Algorithm {
 public:
  std::string_view name() const override { return "p2p"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
};

}  // namespace braid::algos
