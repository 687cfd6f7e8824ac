// The Endpoint both local transports share: one ring per direction, FIFO queues of posted
// operations, and a direct path for large messages in which the ring carries only a descriptor
// (address, length) and the receiver copies straight from the sender's buffer (memcpy between
// threads, process_vm_readv between processes), then acknowledges.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/fifo.h"
#include "transport/shm/ring.h"
#include "transport/shm/segment.h"
#include "transport/shm/shared_memory.h"
#include "transport/transport.h"

namespace braid::transport {

// Runs f, turning an exception (in practice std::bad_alloc) into a Status: none may escape.
template <typename F>
Status noThrow(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return systemError("%s: %s", what, e.what());
  } catch (...) {
    return {ncclInternalError, std::string(what) + ": unknown exception"};
  }
}

// What the endpoint needs to know about the other side beyond the rings.
class PeerAccess {
 public:
  virtual ~PeerAccess() = default;
  // Copies n bytes at the peer's address `addr` into dst (direct path).
  virtual Status read(uint64_t addr, void* dst, size_t n) = 0;
  // Non-null when the peer's memory is ours (threads): a sink then reads it in place.
  virtual const void* local(uint64_t addr) { return nullptr; }
  // The peer's address `addr`, inside memory it registered as `handle`, mapped into ours; null
  // when it cannot be mapped (the caller then reads instead).
  virtual const void* mapped(const MemoryHandle& handle, uint64_t addr) { return nullptr; }
  // Called now and then while waiting: true when the peer can no longer make progress.
  virtual bool gone() { return false; }
  virtual std::string describe() const = 0;
};

struct RingEndpointConfig {
  std::shared_ptr<Segment> txMemory;  // a ring we produce into
  std::shared_ptr<Segment> rxMemory;  // a ring we consume from
  std::unique_ptr<PeerAccess> peer;
  size_t directMinBytes = 0;  // 0: never use the direct path (for any buffer)
  // Messages from this size whose buffer lies in memory the transport registered (`registered`
  // finds its handle; shared memory: ncclMemAlloc allocations) go by reference when the consumer
  // can map it (0: never).
  size_t zeroCopyMinBytes = 0;
  bool (*registered)(const void* data, size_t bytes, MemoryHandle* handle) = nullptr;
  // Between threads a sender's buffer may be freed right after its endpoint is destroyed, so a
  // receiver copies from it only under the lock its destructor takes (null between processes,
  // where a stale read fails or is detected instead of crashing).
  std::shared_ptr<std::mutex> txDirectLock, rxDirectLock;
  std::string name;  // "SHM", "LOOPBACK"
};

class RingEndpoint final : public Endpoint {
 public:
  static Status create(RingEndpointConfig config, std::unique_ptr<Endpoint>* out);
  ~RingEndpoint() override;

  Status postSend(const void* data, size_t bytes) override;
  using Endpoint::postRecv;
  Status postRecv(void* data, size_t bytes, RecvSink* sink, bool streamed) override;
  Status progress() override;
  uint64_t sendsCompleted() const override { return sendsDone_; }
  uint64_t recvsCompleted() const override { return recvsDone_; }
  bool busy() const override { return !sends_.empty() || !recvs_.empty(); }
  void addWakeups(WaitSet& set) override;  // the doorbell of the ring we consume from
  std::string describe() const override;

 private:
  struct SendOp {
    const char* data;
    size_t bytes;
    size_t written = 0;  // payload bytes in the ring (or all of them, once direct is posted)
    bool headerDone = false;
    uint64_t directSeq = 0;  // nonzero: completes when the consumer acknowledged this many
  };
  struct RecvOp {
    char* data;
    size_t bytes;
    RecvSink* sink;
    size_t received = 0;
    bool headerDone = false;
    uint64_t directAddr = 0;
    MemoryHandle handle{};  // id 0: not in registered memory
    bool direct = false;
    bool whole = false;     // the payload was in the ring before the header was stamped
    bool streamed = false;  // write data with non-temporal stores (see Endpoint::postRecv)
  };

  explicit RingEndpoint(RingEndpointConfig config);
  bool pumpSends();
  Status pumpRecvs(bool* moved);
  Status directRecv(RecvOp& op, bool* moved);
  Status fail(Status st);
  Status idle(bool peerClosed);

  RingEndpointConfig config_;
  RingWriter tx_;
  RingReader rx_;
  Fifo<SendOp> sends_;
  Fifo<RecvOp> recvs_;
  size_t sendCursor_ = 0;  // index in sends_ of the first op not fully written
  uint64_t sendsDone_ = 0, recvsDone_ = 0;
  uint64_t directPosted_ = 0;   // direct descriptors we wrote
  uint64_t directAcked_ = 0;    // direct transfers we finished as consumer
  uint64_t directAckSeen_ = 0;  // the peer's acknowledgements of our direct sends
  std::vector<char> bounce_;    // direct path into a sink across processes
  Status error_;
  std::chrono::steady_clock::time_point lastCheck_;
  uint32_t idleSpins_ = 0;
};

}  // namespace braid::transport
