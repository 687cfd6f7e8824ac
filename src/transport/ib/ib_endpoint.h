// The ib transport's endpoint: reliable-connected queue pairs to one peer, and messages moved
// by RDMA WRITE WITH IMMEDIATE into the peer's receive slots.
//
// Each side registers `slots` receive slots of `slotBytes` and as many send slots. A message
// travels as one or more fragments, a fragment per slot: a 16-byte header (the message's size,
// the fragment's index) and up to slotBytes - 16 bytes of payload, copied into the send slot of
// the same number and written into the peer's receive slot, fragment k in slot k % slots, on
// queue pair k % qps. The immediate names the slot, so the receiver learns of each fragment
// from its completion queue; it hands fragments over in order into the posted receives (or
// their sinks) and gives the slots back with a credit message (SEND WITH IMMEDIATE, no
// payload: the number of slots freed). A sender writes fragment k only when the peer has freed
// slot k % slots and its own write from that send slot has completed. Closing sends a last
// immediate with the number of fragments written, so everything written before the close is
// delivered and a receive that cannot be satisfied then fails (ncclRemoteError).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/fifo.h"
#include "transport/ib/ib_device.h"
#include "transport/transport.h"

namespace braid::transport::ib {

struct Settings {
  int gidIndex = -1;  // NCCL_IB_GID_INDEX; -1: the port's RoCEv2 IPv4 GID
  int trafficClass = 0;
  int serviceLevel = 0;
  int timeout = 20;  // 4.096 us x 2^timeout before a retry
  int retryCount = 7;
  int qps = 1;
  int pkeyIndex = 0;
  int slots = 8;
  size_t slotBytes = 256 * 1024;
};

// One side's half of the connection handle (Transport::listen's blob).
struct Handle {
  static constexpr uint32_t kMagic = 0x42524942;  // "BRIB"
  static constexpr uint32_t kVersion = 1;
  static constexpr int kMaxQps = 16;
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  uint32_t qps = 0;
  uint32_t slots = 0;
  uint64_t slotBytes = 0;
  uint32_t mtu = 0;  // ibv_mtu
  uint32_t psn = 0;
  uint16_t lid = 0;
  uint8_t roce = 0;
  uint8_t pad = 0;
  uint32_t rkey = 0;  // of the receive slots
  uint64_t slotsAddr = 0;
  uint8_t gid[16] = {};
  uint32_t qpn[kMaxQps] = {};
};

// The verbs objects of one connection, made at listen and connected at connect.
class Connection {
 public:
  ~Connection();
  static Status create(std::shared_ptr<Device> device, const Settings& settings, int peer,
                       std::unique_ptr<Connection>* out);
  Handle handle() const;
  // Brings the queue pairs to ready-to-send against the peer's handle.
  Status connect(const Handle& remote);

 private:
  friend class IbEndpoint;
  Connection() = default;

  std::shared_ptr<Device> device_;
  Settings settings_;
  int peer_ = -1;
  uint32_t psn_ = 0;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;
  // The slots: receive then send, one page-aligned allocation, one registration.
  uint8_t* memory_ = nullptr;
  size_t memoryBytes_ = 0;
  ibv_mr* mr_ = nullptr;
  Handle remote_{};
};

class IbEndpoint final : public Endpoint {
 public:
  IbEndpoint(std::unique_ptr<Connection> connection, int peerRank);
  ~IbEndpoint() override;

  Status postSend(const void* data, size_t bytes) override;
  using Endpoint::postRecv;
  Status postRecv(void* data, size_t bytes, RecvSink* sink, bool streamed) override;
  Status progress() override;
  uint64_t sendsCompleted() const override { return sendBase_; }
  uint64_t recvsCompleted() const override { return recvBase_; }
  bool busy() const override { return !sends_.empty() || !recvs_.empty(); }
  void addWakeups(WaitSet& set) override;
  std::string describe() const override;

 private:
  static constexpr size_t kHeaderBytes = 16;
  static constexpr uint32_t kCloseBit = 0x80000000u;
  static constexpr int kMaxCreditSends = 4;  // credit messages in flight at once

  struct SendOp {
    const uint8_t* data;
    size_t bytes;
    size_t done = 0;  // payload bytes copied into fragments
  };
  struct RecvOp {
    uint8_t* data;
    size_t bytes;
    RecvSink* sink;
    size_t done = 0;
  };
  // What a completion's wr_id says.
  enum Kind : uint64_t { kData = 0, kCredit = 1, kClose = 2, kRecv = 3 };

  uint8_t* recvSlot(size_t i) const;
  uint8_t* sendSlot(size_t i) const;
  Status fail(Status st);
  Status postRecvWr(int qp);
  Status handle(const ibv_wc& wc);
  Status poll();
  Status deliver();
  Status pushSends();
  Status returnCredits();
  void drainEvents();
  // Waits (at most `ms`) until every write and credit has completed, for the destructor.
  void settle(int ms);

  std::unique_ptr<Connection> c_;
  int peer_;
  int slots_;
  size_t slotBytes_;
  Status error_;
  bool failed_ = false;

  Fifo<SendOp> sends_;
  Fifo<RecvOp> recvs_;
  uint64_t sendBase_ = 0, recvBase_ = 0;

  uint64_t written_ = 0;          // fragments written (posted)
  uint64_t granted_ = 0;          // slots the peer has freed, in all
  std::vector<uint8_t> writing_;  // per send slot: its write has not completed
  int creditSends_ = 0;           // credit messages not yet completed
  bool closeSent_ = false, closeDone_ = false;

  std::vector<uint8_t> arrived_;  // per receive slot: holds a fragment not yet handed over
  uint64_t consumed_ = 0;         // fragments handed over
  uint64_t arrivedCount_ = 0;     // fragments arrived, in all
  uint64_t freed_ = 0;            // slots handed over and not yet given back
  bool peerClosed_ = false;
  uint32_t peerWrote_ = 0;  // the close's count of fragments (low 31 bits)

  std::vector<ibv_wc> stash_;  // completions found while arming for a sleep
  bool armed_ = false;         // notification requested: events to drain
};

}  // namespace braid::transport::ib
