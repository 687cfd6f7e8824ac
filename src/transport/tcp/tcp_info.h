// The kernel's TCP_INFO of one socket, read through <linux/tcp.h>'s struct (glibc's
// <netinet/tcp.h> stops before the fields that time a connection's sending), in its own file
// because the two headers cannot meet in one translation unit.
#pragma once

#include <cstdint>

namespace braid::transport {

struct TcpInfo {
  uint64_t retransmits = 0;  // segments sent again since the connection opened
  uint32_t rttUs = 0;        // smoothed round-trip time
  uint32_t cwnd = 0;         // congestion window, segments
  // Bytes the peer acknowledged, and microseconds the socket had data to send that the
  // receiver's window let it send (TCP_INFO's busy time less its receive-window-limited time),
  // both since the connection opened; 0 where the kernel does not report them.
  uint64_t bytesAcked = 0;
  uint64_t sendingUs = 0;
};

// False where getsockopt fails.
bool readTcpInfo(int fd, TcpInfo* out);

}  // namespace braid::transport
