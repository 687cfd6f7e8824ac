// TCP transport: the fallback that reaches every peer. Each peer pair gets `streams` parallel
// sockets; a message's size header travels on stream 0 and large payloads are striped over all
// streams in fixed slices. Everything is non-blocking and driven by Endpoint::progress().
#pragma once

#include <cstddef>
#include <memory>

#include "transport/registry.h"
#include "transport/transport.h"

namespace braid::transport {

// What the cost model takes a message over TCP to cost where neither a cluster map nor the probe
// says otherwise: 20 us and 2 GB/s, the order of loopback TCP in docs/net.md (0.9-2.2 GB/s).
inline constexpr LinkCost kTcpLinkCost{20.0, 1.0 / 2e3};

extern const TransportEntry kTcpTransport;  // "tcp"

struct TcpOptions {
  int streams = 4;                 // NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD
  size_t sliceBytes = 512 * 1024;  // BRAID_TCP_SLICE_BYTES; smaller messages use stream 0 only
  // SO_SNDBUF/SO_RCVBUF; 0 leaves the kernel's autotuning alone. Fixed 4 MiB buffers were as
  // fast or faster than autotuning on loopback (docs/net.md has the numbers).
  int socketBufferBytes = 4 << 20;
};

// Reads and validates NCCL_SOCKET_NTHREADS (1-16), NCCL_NSOCKS_PERTHREAD (>= 1, product <= 64)
// and BRAID_TCP_SLICE_BYTES; an invalid value is an error naming the variable.
Status tcpOptionsFromEnv(TcpOptions* out);

std::unique_ptr<Transport> makeTcpTransport(const TcpOptions& options);
// The transport as configured by the environment.
Status createTcpTransport(std::unique_ptr<Transport>* out);

}  // namespace braid::transport
