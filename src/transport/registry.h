// The transports a communicator may use, in preference order: the first one whose
// canConnect() accepts a peer serves that peer.
#pragma once

#include <memory>
#include <vector>

#include "transport/transport.h"

namespace braid::transport {

// Fails when the environment configures a transport wrongly (naming the variable).
Status createTransports(std::vector<std::unique_ptr<Transport>>* out);

}  // namespace braid::transport
