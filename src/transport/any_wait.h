// Sleeping on sockets and doorbells at once. poll() waits on descriptors and futex_waitv on
// futexes, and neither on the other's kind, so a rank with peers over TCP and peers in shared
// memory (two or more ranks a host, and more than one host) could only yield while it waited.
// io_uring waits on both in one call: a poll request per descriptor and one futex_waitv request
// for the bells (Linux 6.7), submitted together; the first to complete ends the wait and the
// rest are cancelled. Built where liburing is (BRAID_HAVE_URING); elsewhere, and where the
// kernel lacks either request, waitForAny says it cannot and the caller yields as before.
#pragma once

#include <poll.h>

#include <chrono>
#include <span>

#include "transport/shm/doorbell.h"

namespace braid::transport {

enum class AnyWait {
  kCannot,    // no io_uring here, or it cannot wait on futexes: nothing was waited for
  kWoken,     // a descriptor was ready or a bell rang (or its value had moved already)
  kTimedOut,  // neither, within the timeout
};

// Sleeps until one of `fds` is ready for its events or one of `bells` rang since its value was
// read (raiseFlag), for at most `timeout`. The bells' flags must be up (the caller lowers them).
AnyWait waitForAny(std::span<const pollfd> fds, std::span<const BellWait> bells,
                   std::chrono::microseconds timeout);

// False where waitForAny cannot wait (known after its first try, or at once without liburing).
bool canWaitForAny();

}  // namespace braid::transport
