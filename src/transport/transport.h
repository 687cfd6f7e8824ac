// The transport interface. Transports move bytes between two ranks; they know nothing of
// collectives, schedules or data types. The executor (src/core) drives them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/waiter.h"
#include "transport/link_cost.h"
#include "transport/memory.h"

namespace braid::transport {

class WaitSet;

using Blob = std::vector<uint8_t>;

// What a rank tells the others about itself at init; transports decide reachability from it.
struct PeerInfo {
  int rank = -1;
  int32_t pid = 0;
  uint64_t hostHash = 0;     // hostname + boot id, or NCCL_HOSTID: equal means same host
  uint64_t processHash = 0;  // equal means same process (threads as ranks)
  char hostName[64] = {};    // NCCL_HOSTID, else the hostname: how the cluster map names it
  uint64_t machineHash = 0;  // the kernel's boot id: equal means the same CPUs, whatever
                             // NCCL_HOSTID says (emulated hosts in namespaces share them)
  int32_t cores = 1;         // CPUs this process may run on (its affinity mask)
  int32_t ibPorts = 0;       // active RDMA ports the ib transport can use (Transport::advertise)
  int32_t deviceIpc = 0;     // runs device collectives among one host's ranks on the devices
                             // where all do (core/device/ipc_path.h)
};

// Receives the bytes of a posted receive as they arrive, in place of a memcpy into the buffer
// (for example to reduce straight out of a shared-memory ring). `data` is valid only during the
// call. Pieces arrive in increasing offset order and cover [0, bytes) exactly once.
class RecvSink {
 public:
  virtual ~RecvSink() = default;
  virtual void consume(size_t offset, const void* data, size_t bytes) = 0;
};

// What the kernel knows of a connection's network path (TCP_INFO), summed or maxed over its
// sockets; a transport without such a path leaves it unset.
struct LinkSample {
  uint64_t retransmits = 0;  // segments sent again, since the connection opened (summed)
  uint32_t rttUs = 0;        // smoothed round-trip time (the slowest socket)
  uint32_t cwnd = 0;         // congestion window in segments (summed)
  // Bytes the peer acknowledged (summed) and microseconds the path had this side's data to carry
  // and the receiver's window open (the longest socket's), since the connection opened; their
  // ratio is the path's own rate, whatever the caller waited for between messages. 0 where the
  // kernel does not report them.
  uint64_t bytesAcked = 0;
  uint64_t sendingUs = 0;
};

// A reliable, bidirectional, FIFO message channel to one peer. Non-blocking; never throws.
// The k-th postRecv receives the k-th message the peer posted with postSend; the sizes must be
// equal (a mismatch is an error, reported by progress()). A send buffer may be reused once
// sendsCompleted() counts it; a receive buffer holds the data once recvsCompleted() counts it.
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual Status postSend(const void* data, size_t bytes) = 0;
  // `streamed`: the caller will not read `data` again soon (say the final output of a call too
  // large for the caches), so a transport that copies may write it around the cache.
  virtual Status postRecv(void* data, size_t bytes, RecvSink* sink, bool streamed) = 0;
  Status postRecv(void* data, size_t bytes, RecvSink* sink) {
    return postRecv(data, bytes, sink, false);
  }
  // Moves as much data as it can without blocking. Errors: peer gone, channel broken, size
  // mismatch. After an error the endpoint is unusable.
  virtual Status progress() = 0;
  virtual uint64_t sendsCompleted() const = 0;
  virtual uint64_t recvsCompleted() const = 0;
  // True when posted operations are waiting for the peer (used to decide whether to yield).
  virtual bool busy() const = 0;
  // For a caller that would rather sleep than spin while it waits (transport/wait.h): adds to
  // `set` what wakes this endpoint when progress() can move data (descriptors, a doorbell), or
  // says that it can only be spun on.
  virtual void addWakeups(WaitSet& set);
  virtual std::string describe() const = 0;  // for logs, e.g. "SHM/ring 4 MiB"
  // The kernel's view of the path (a system call per socket: the caller rations it); false
  // where there is none (shared memory, loopback).
  virtual bool sample(LinkSample* /*out*/) const { return false; }
};

// Connection setup runs in three phases on every rank, with bootstrap exchanges between them:
//   1. listen(peer) for every peer this transport serves; the blobs go to those peers;
//   2. connect(peer, blobFromPeer) for every such peer (must not wait for the peer's phase 2
//      indefinitely: bounded by the waiter);
//   3. finishConnect() after a bootstrap barrier (e.g. unlink shared-memory names).
class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string_view name() const = 0;
  virtual bool canConnect(const PeerInfo& self, const PeerInfo& peer) const = 0;
  // Adds to this rank's PeerInfo, before the ranks exchange them, what peers need to know to
  // decide canConnect (say that it has a usable device).
  virtual void advertise(PeerInfo* /*self*/) const {}
  // What a message between two ranks this transport serves costs, for the cost model (the
  // topology's link inside a host, or between hosts where no map or probe says otherwise).
  virtual LinkCost linkCost() const = 0;
  // Memory registration (transport/memory.h), optional: the handle of [base, base + bytes) that
  // peers can address, or none (id 0) where this transport cannot share it; the default shares
  // nothing. A handle stays valid until deregisterMemory.
  virtual Status registerMemory(const void* base, size_t bytes, MemoryHandle* handle) {
    *handle = {};
    return Status::Ok();
  }
  virtual void deregisterMemory(const MemoryHandle& handle) {}
  virtual Status listen(const PeerInfo& self, const PeerInfo& peer, Blob* handle) = 0;
  virtual Status connect(const PeerInfo& self, const PeerInfo& peer, const Blob& peerHandle,
                         const Waiter& waiter, std::unique_ptr<Endpoint>* endpoint) = 0;
  virtual Status finishConnect() { return Status::Ok(); }
};

}  // namespace braid::transport
