// Tests that open sockets talk on IPv4 loopback only: including this sets NCCL_SOCKET_IFNAME and
// NCCL_SOCKET_FAMILY before any test runs.
#pragma once

#include <cstdlib>

namespace braid::testing {

inline const bool kLoopbackOnly = [] {
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  setenv("NCCL_SOCKET_FAMILY", "AF_INET", 1);
  return true;
}();

}  // namespace braid::testing
