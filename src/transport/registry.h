// The transports a communicator may use, in preference order: the first one whose
// canConnect() accepts a peer serves that peer.
#pragma once

#include <memory>
#include <vector>

#include "transport/transport.h"

namespace braid::transport {

std::vector<std::unique_ptr<Transport>> createTransports();

}  // namespace braid::transport
