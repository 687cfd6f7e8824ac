// Bootstrap: the out-of-band channel ranks use to find each other before any transport exists.
// A root listener (started by ncclGetUniqueId, or by rank 0 under NCCL_COMM_ID) collects every
// rank's address and hands back the full table; after that the ranks talk among themselves
// over TCP, and the root is gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/waiter.h"
#include "nccl.h"

namespace braid {

// The id's wire layout (inside ncclUniqueId::internal, zero-padded to 128 bytes):
//   uint64_t magic; then the root's socket address (family, big-endian port, address).
// Starts a root listener thread in this process that serves exactly one rendezvous.
Status createUniqueId(ncclUniqueId* id);
// NCCL_COMM_ID=host:port: the id every process computes the same way, without a root yet.
Status uniqueIdFromCommId(const char* hostPort, ncclUniqueId* id);
// Rejects ids that cannot have come from createUniqueId / uniqueIdFromCommId.
Status validateUniqueId(const ncclUniqueId& id);
// Human-readable "magic 0x... root 10.0.0.1:41234" for logs and error messages.
std::string describeUniqueId(const ncclUniqueId& id);

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  // Rendezvous through the root named by `id`. When `hostRoot` is set (rank 0 under
  // NCCL_COMM_ID) this call starts the root listener itself first. Bounded by `waiter`.
  static Status create(const ncclUniqueId& id, int rank, int nranks, bool hostRoot,
                       const Waiter& waiter, std::unique_ptr<Bootstrap>* out);

  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // data holds nranks slices of `bytes`; this rank's slice is filled in, the others arrive.
  virtual Status allGather(void* data, size_t bytes) = 0;
  virtual Status barrier() = 0;
  // Point-to-point messages between ranks (used by split, shrink, mismatch checks).
  virtual Status send(int peer, uint64_t tag, const void* data, size_t bytes) = 0;
  virtual Status recv(int peer, uint64_t tag, void* data, size_t bytes) = 0;
  // recv for exchanges that are part of a collective call, which wait as the call does: at most
  // `timeoutMs` (0: no limit) instead of the bootstrap's own limit, and no longer than until a
  // message with `stopTag` has come from any rank (another rank announcing it gave up). That
  // message is then taken (*stopFrom = its sender, *stop = its bytes) and nothing is received;
  // otherwise *stopFrom = -1.
  virtual Status recvUnless(int peer, uint64_t tag, void* data, size_t bytes, int64_t timeoutMs,
                            uint64_t stopTag, int* stopFrom, std::vector<uint8_t>* stop) = 0;
  // Non-blocking: a message with `tag` from any rank, if one has arrived (*from = its rank),
  // else *from = -1, also while another thread's operation holds the bootstrap. Used to hear
  // about another rank's failure while waiting on data.
  virtual Status poll(uint64_t tag, int* from, std::vector<uint8_t>* data) = 0;
  // Makes every blocked and future call return an error (ncclCommAbort).
  virtual void abort() = 0;
};

}  // namespace braid
