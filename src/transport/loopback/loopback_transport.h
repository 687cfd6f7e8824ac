// Between ranks that are threads of one process: the shm rings over anonymous memory, and large
// messages copied once, straight from the sender's buffer into the receiver's.
#pragma once

#include <memory>

#include "transport/registry.h"
#include "transport/transport.h"

namespace braid::transport {

extern const TransportEntry kLoopbackTransport;  // "loopback"; its rings read BRAID_SHM_BUFFSIZE
std::unique_ptr<Transport> makeLoopbackTransport();

}  // namespace braid::transport
