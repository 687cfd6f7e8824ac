#include "transport/registry.h"

namespace braid::transport {

std::vector<std::unique_ptr<Transport>> createTransports() { return {}; }

}  // namespace braid::transport
