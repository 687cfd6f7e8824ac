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

// A message through a ring: about 0.5 us, about 8 GB/s (docs/local_transports.md).
inline constexpr LinkCost kShmLinkCost{0.5, 1.0 / 8e3};

extern const TransportEntry kShmTransport;  // "shm"
std::unique_ptr<Transport> makeShmTransport();

}  // namespace braid::transport
