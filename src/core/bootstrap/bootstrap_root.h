// Bootstrap internals shared by the root, the ranks and the tests: the wire layout of the
// root's hello and reply, the unique-id codec, and the root thread itself.
#pragma once

#include <cstdint>

#include "base/net/socket.h"
#include "base/status.h"
#include "nccl.h"

namespace braid::bootstrap {

// Rank -> root: magic u64, rank u32, nranks u32, the rank's listener address (wire form).
constexpr size_t kRootHelloBytes = 16 + net::SocketAddress::kWireBytes;
// Root -> rank: magic u64, nranks u32, reserved u32, then nranks addresses (wire form).
constexpr size_t kRootReplyHeaderBytes = 16;
// Ranks accept at most this many ranks; bigger is a corrupt or hostile hello.
constexpr uint32_t kMaxRanks = 1u << 20;
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

}  // namespace braid::bootstrap
