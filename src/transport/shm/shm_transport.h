// Shared memory between processes of one host: a /dev/shm ring per direction, created by the
// receiving side, plus single-copy transfers of large messages with process_vm_readv where the
// kernel allows it (probed at connect).
#pragma once

#include <memory>

#include "transport/transport.h"

namespace braid::transport {

std::unique_ptr<Transport> makeShmTransport();

}  // namespace braid::transport
