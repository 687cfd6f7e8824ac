// Shared memory between processes of one host: a /dev/shm ring per direction, created by the
// receiving side, plus single-copy transfers of large messages with process_vm_readv where the
// kernel allows it (probed at connect).
#pragma once

#include <memory>

#include "transport/registry.h"
#include "transport/transport.h"

namespace braid::env {
extern const Var kBraidShmBuffsize;  // the ring of both local transports (loopback too)
}  // namespace braid::env

namespace braid::transport {

// What the cost model takes a message through a ring to cost: 0.5 us and 8 GB/s, the order of
// what docs/local_transports.md measures (both directions at once, about 10 GB/s each way).
inline constexpr LinkCost kShmLinkCost{0.5, 1.0 / 8e3};

extern const TransportEntry kShmTransport;  // "shm"
std::unique_ptr<Transport> makeShmTransport();

}  // namespace braid::transport
