// InfiniBand / RoCE transport over libibverbs (rdma-core), loaded at run time: reliable-
// connected queue pairs to each peer, data by RDMA WRITE WITH IMMEDIATE into registered slots
// with credits (ib_endpoint.h). It serves a pair of ranks where both found an active port
// (PeerInfo::ibPorts); between hosts it comes before TCP. Without libibverbs or an active port
// it serves nobody, and says so once at NCCL_DEBUG=INFO.
#pragma once

#include "transport/registry.h"

namespace braid::transport {

extern const TransportEntry kIbTransport;  // "ib"

// Whether this process has an RDMA port the transport would use (tests skip without one).
bool ibPortAvailable();

}  // namespace braid::transport
