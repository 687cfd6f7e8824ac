// Bootstrap internals shared by the root, the ranks and the tests: the unique-id codec and the
// root thread itself (the wire formats are in wire.h).
#pragma once

#include <cstdint>

#include "base/net/socket.h"
#include "base/status.h"
#include "core/bootstrap/wire.h"
#include "nccl.h"

namespace braid::bootstrap {

// How long any single connection may take to deliver its hello before it is dropped.
constexpr int64_t kHelloDeadlineMs = 5000;

struct IdContents {
  uint64_t magic = 0;
  net::SocketAddress root;
};
Status decodeUniqueId(const ncclUniqueId& id, IdContents* out);
void encodeUniqueId(const IdContents& in, ncclUniqueId* id);

// Listens on `addr` (port 0: ephemeral) and serves one rendezvous on a detached thread that
// exits once every rank has its table, or after `idleTimeoutMs` without a new valid hello.
Status startRoot(const net::SocketAddress& addr, uint64_t magic, int64_t idleTimeoutMs,
                 net::SocketAddress* bound);
// Root threads still running in this process (tests check that none leak).
int liveRoots();
// A root that fails its rendezvous tells the admitted ranks one after another. A rank that
// hears it in the root's own process waits here (at most `limitMs`) until every such root has
// told all of its ranks, so that its process, should it exit on the error, cuts off nobody.
void awaitFailureNotices(int64_t limitMs);

}  // namespace braid::bootstrap
