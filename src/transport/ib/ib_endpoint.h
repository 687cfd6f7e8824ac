// The ib transport's endpoint: reliable-connected queue pairs to one peer, and messages moved
// by RDMA WRITE WITH IMMEDIATE into the peer's receive slots, or, between registered buffers,
// straight from the sender's buffer into the receiver's.
//
// Each side registers `slots` receive slots of `slotBytes` and as many send slots. A message
// travels as one or more fragments, a fragment per slot: a 32-byte header (the message's size,
// the fragment's index, its payload, where a direct write took over, the offers read) and up to
// slotBytes - 32 bytes of payload, copied into the send slot of the same number (or, from a
// registered buffer, gathered from it in place) and written into the peer's receive slot,
// fragment k in slot k % slots, on queue pair k % qps. The immediate names the slot, so the
// receiver learns of each fragment from its completion queue; it hands fragments over in order
// into the posted receives (or their sinks) and gives the slots back with a credit message
// (SEND WITH IMMEDIATE, no payload: the number of slots freed). A sender writes fragment k only
// when the peer has freed slot k % slots and its own write from that send slot has completed.
//
// Direct writes: a receive of at least BRAID_IB_DIRECT_MIN_BYTES into a registered buffer
// (ncclCommRegister; ib_memory.h), without a sink, is offered to the peer: its sequence number,
// address, size and key, written into one of `kOffers` offer slots on the peer. A sender whose
// message is that receive's, from a registered buffer, writes the rest of it (all of it when the
// offer came first) with plain RDMA WRITEs into the offered buffer, then one fragment without
// payload saying from where the direct write took over; it follows the writes on their queue
// pair, so the data is in place when the receiver sees it. Offers are hints: one that comes late,
// or whose size differs (a mismatch the fragments report), is dropped. The receiver writes an
// offer slot again only once the sender's fragments say it has read the old one.
//
// Closing sends a last immediate with the number of fragments written, so everything written
// before the close is delivered and a receive that cannot be satisfied then fails
// (ncclRemoteError).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/fifo.h"
#include "transport/ib/ib_device.h"
#include "transport/ib/ib_memory.h"
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
  size_t directMinBytes = 64 * 1024;  // BRAID_IB_DIRECT_MIN_BYTES
};

// One side's half of the connection handle (Transport::listen's blob).
struct Handle {
  static constexpr uint32_t kMagic = 0x42524942;  // "BRIB"
  static constexpr uint32_t kVersion = 2;
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
  uint32_t rkey = 0;  // of the receive slots and the offer slots after them
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
  // The slots: receive, send, offers in, offers out; one page-aligned allocation, one
  // registration.
  uint8_t* memory_ = nullptr;
  size_t memoryBytes_ = 0;
  ibv_mr* mr_ = nullptr;
  Handle remote_{};
};

class IbEndpoint final : public Endpoint {
 public:
  // `regions`: the transport's registered buffers (may be null: no direct writes).
  IbEndpoint(std::unique_ptr<Connection> connection, int peerRank,
             std::shared_ptr<const MemoryRegions> regions);
  ~IbEndpoint() override;

  Status postSend(const void* data, size_t bytes) override;
  using Endpoint::postRecv;
  Status postRecv(void* data, size_t bytes, RecvSink* sink, bool streamed) override;
  Status progress() override;
  uint64_t sendsCompleted() const override { return sendBase_; }
  uint64_t recvsCompleted() const override { return recvBase_; }
  bool busy() const override {
    return !sends_.empty() || !recvs_.empty() || sendBase_ < sendPosted_;
  }
  void addWakeups(WaitSet& set) override;
  std::string describe() const override;

  // Payload bytes this endpoint sent by direct writes, and received by them, and the offers it
  // has read from the peer (for tests).
  uint64_t directBytesSent() const { return directSent_; }
  uint64_t directBytesReceived() const { return directReceived_; }
  uint64_t offersReceived() const { return offersRead_; }

  static constexpr size_t kHeaderBytes = 32;
  static constexpr int kOffers = 8;  // offer slots each way
  static constexpr size_t kOfferBytes = 32;

 private:
  static constexpr uint32_t kCloseBit = 0x80000000u;
  static constexpr uint32_t kOfferBit = 0x40000000u;
  static constexpr uint64_t kNoDirect = ~uint64_t{0};
  static constexpr int kMaxCreditSends = 4;        // credit messages in flight at once
  static constexpr int kMaxDirectWrites = 4;       // direct writes in flight at once
  static constexpr size_t kDirectChunk = 4 << 20;  // the most one direct write carries

  struct SendOp {
    const uint8_t* data = nullptr;
    size_t bytes = 0;
    uint64_t seq = 0;
    size_t done = 0;      // payload bytes posted (in fragments or direct writes)
    bool looked = false;  // registration looked up
    bool registered = false;
    RegionKeys keys;
    bool direct = false;  // writing into the peer's offered buffer from `directFrom`
    size_t directFrom = 0;
    uint64_t remoteAddr = 0;
    uint32_t remoteKey = 0;
  };
  struct RecvOp {
    uint8_t* data = nullptr;
    size_t bytes = 0;
    RecvSink* sink = nullptr;
    uint64_t seq = 0;
    bool offerable = false;  // a registered buffer without a sink: may be written directly
    RegionKeys keys;
    size_t done = 0;
  };
  struct Offer {
    uint64_t seq;  // the receive's number among the peer's receives
    uint64_t addr;
    uint64_t bytes;
    uint32_t rkey;
  };
  // What a completion's wr_id says: the kind in the top byte; for kData and kDataInPlace the
  // slot in the low byte and (kDataInPlace) the send's number above it, for kDirect the send's
  // number, for kOffer the offer slot.
  enum Kind : uint64_t {
    kData = 0,
    kCredit = 1,
    kClose = 2,
    kRecv = 3,
    kDataInPlace = 4,  // a fragment whose payload was gathered from the sender's buffer
    kDirect = 5,
    kOffer = 6,
  };

  uint8_t* recvSlot(size_t i) const;
  uint8_t* sendSlot(size_t i) const;
  uint8_t* offerIn(size_t j) const;
  uint8_t* offerOut(size_t j) const;
  Status fail(Status st);
  Status postRecvWr(int qp);
  Status handle(const ibv_wc& wc);
  Status poll();
  Status deliver();
  Status pushSends();
  Status writeFragment(SendOp& op, size_t payload, uint64_t directFrom);
  Status writeDirect(SendOp& op);
  void takeOffer(SendOp& op);
  Status sendOffers();
  Status returnCredits();
  void retireSends();
  bool canWriteFragment() const;
  bool canOffer() const;
  void drainEvents();
  // Waits (at most `ms`) until every write and credit has completed, for the destructor.
  void settle(int ms);

  std::unique_ptr<Connection> c_;
  std::shared_ptr<const MemoryRegions> regions_;
  int peer_;
  int slots_;
  size_t slotBytes_;
  Status error_;
  bool failed_ = false;

  Fifo<SendOp> sends_;  // not yet wholly posted
  Fifo<RecvOp> recvs_;
  uint64_t sendBase_ = 0, recvBase_ = 0;  // sends and receives completed
  uint64_t sendPosted_ = 0, recvPosted_ = 0;
  // Per send from sendBase_ on: its writes from the caller's buffer not yet completed. A send
  // counts as completed once wholly posted with none left.
  Fifo<uint32_t> inPlace_;
  int directWrites_ = 0;  // direct writes in flight

  // Offers from the peer: slots arrived and not yet read, read and not yet used or dropped.
  std::vector<uint8_t> offerArrived_;
  uint64_t offersRead_ = 0;
  Fifo<Offer> offers_;
  // Offers to the peer: the next receive to consider, offers written, the peer's count of
  // offers read (from its fragments), and per offer slot whether its write is in flight.
  uint64_t offerNext_ = 0;
  uint64_t offersSent_ = 0;
  uint64_t peerOffersRead_ = 0;
  std::vector<uint8_t> offerWriting_;
  uint64_t directSent_ = 0, directReceived_ = 0;

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
