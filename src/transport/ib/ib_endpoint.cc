#include "transport/ib/ib_endpoint.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>

#include "base/strfmt.h"
#include "transport/ib/verbs.h"
#include "transport/wait.h"

namespace braid::transport::ib {
namespace {

constexpr uint64_t kKindShift = 56;
constexpr int kCreditSendsMax = 4;   // IbEndpoint::kMaxCreditSends, for the queue sizes
constexpr int kDirectWritesMax = 4;  // IbEndpoint::kMaxDirectWrites
constexpr int kOffers = IbEndpoint::kOffers;

// A fragment per slot, the credit messages, the close, the direct writes and the offers.
int sendDepth(const Settings& s) {
  return s.slots + kCreditSendsMax + 2 + kDirectWritesMax + kOffers;
}
// Every slot may hold an unpolled fragment and every freed slot an unpolled credit message;
// every offer slot an unpolled offer.
int recvDepth(const Settings& s) { return 2 * s.slots + 2 + kOffers; }

uint64_t wrId(uint64_t kind, uint64_t value) { return kind << kKindShift | value; }

}  // namespace

Connection::~Connection() {
  const Verbs* v = verbs();
  if (!v) return;
  for (ibv_qp* qp : qps_)
    if (qp) v->destroyQp(qp);
  if (cq_) v->destroyCq(cq_);
  if (channel_) v->destroyCompChannel(channel_);
  if (mr_) v->deregMr(mr_);
  std::free(memory_);
}

Status Connection::create(std::shared_ptr<Device> device, const Settings& s, int peer,
                          std::unique_ptr<Connection>* out) {
  const Verbs* v = verbs();
  if (!v || !device) return systemError("ib: no RDMA device is open for rank %d", peer);
  std::unique_ptr<Connection> c(new Connection);
  c->device_ = std::move(device);
  c->settings_ = s;
  c->peer_ = peer;
  c->psn_ = std::random_device{}() & 0xffffff;
  ibv_context* ctx = c->device_->context;
  c->channel_ = v->createCompChannel(ctx);
  if (!c->channel_) return systemError("ib: ibv_create_comp_channel: %s", std::strerror(errno));
  const int flags = fcntl(c->channel_->fd, F_GETFL);
  if (flags < 0 || fcntl(c->channel_->fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return systemError("ib: completion channel: fcntl: %s", std::strerror(errno));
  const int cqe = s.qps * (sendDepth(s) + recvDepth(s));
  c->cq_ = v->createCq(ctx, cqe, nullptr, c->channel_, 0);
  if (!c->cq_) return systemError("ib: ibv_create_cq(%d): %s", cqe, std::strerror(errno));

  c->memoryBytes_ =
      2 * static_cast<size_t>(s.slots) * s.slotBytes + 2 * kOffers * IbEndpoint::kOfferBytes;
  if (posix_memalign(reinterpret_cast<void**>(&c->memory_), 4096, c->memoryBytes_) != 0)
    return systemError("ib: cannot allocate %zu bytes of slots", c->memoryBytes_);
  c->mr_ = v->regMr(c->device_->pd, c->memory_, c->memoryBytes_,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!c->mr_)
    return systemError(
        "ib: ibv_reg_mr of %zu bytes: %s (is the locked-memory limit, ulimit -l, "
        "too low?)",
        c->memoryBytes_, std::strerror(errno));

  for (int q = 0; q < s.qps; ++q) {
    ibv_qp_init_attr init{};
    init.send_cq = c->cq_;
    init.recv_cq = c->cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = static_cast<uint32_t>(sendDepth(s));
    init.cap.max_recv_wr = static_cast<uint32_t>(recvDepth(s));
    init.cap.max_send_sge = 2;  // a fragment's header, and its payload in the caller's buffer
    init.cap.max_recv_sge = 1;
    ibv_qp* qp = v->createQp(c->device_->pd, &init);
    if (!qp) return systemError("ib: ibv_create_qp: %s", std::strerror(errno));
    c->qps_.push_back(qp);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = static_cast<uint16_t>(s.pkeyIndex);
    a.port_num = static_cast<uint8_t>(c->device_->port.number);
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    const int rc =
        v->modifyQp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc != 0) return systemError("ib: queue pair to INIT: %s", std::strerror(rc));
  }
  *out = std::move(c);
  return Status::Ok();
}

Handle Connection::handle() const {
  Handle h;
  h.qps = static_cast<uint32_t>(qps_.size());
  h.slots = static_cast<uint32_t>(settings_.slots);
  h.slotBytes = settings_.slotBytes;
  h.mtu = static_cast<uint32_t>(device_->port.mtu);
  h.psn = psn_;
  h.lid = device_->port.lid;
  h.roce = device_->port.roce ? 1 : 0;
  h.rkey = mr_->rkey;
  h.slotsAddr = reinterpret_cast<uint64_t>(memory_);
  std::memcpy(h.gid, device_->port.gid.raw, sizeof h.gid);
  for (size_t q = 0; q < qps_.size(); ++q) h.qpn[q] = qps_[q]->qp_num;
  return h;
}

Status Connection::connect(const Handle& remote) {
  const Verbs& v = *verbs();
  remote_ = remote;
  const Port& port = device_->port;
  const ibv_mtu mtu = std::min(port.mtu, static_cast<ibv_mtu>(remote.mtu));
  for (size_t q = 0; q < qps_.size(); ++q) {
    ibv_qp* qp = qps_[q];
    // Every receive the peer's writes and credits can need, before it can send any.
    for (int i = 0; i < recvDepth(settings_); ++i) {
      ibv_recv_wr wr{};
      ibv_recv_wr* bad = nullptr;
      wr.wr_id = wrId(3, q);  // IbEndpoint::kRecv
      const int rc = ibv_post_recv(qp, &wr, &bad);
      if (rc != 0) return systemError("ib: ibv_post_recv: %s", std::strerror(rc));
    }
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = mtu;
    a.dest_qp_num = remote.qpn[q];
    a.rq_psn = remote.psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = static_cast<uint8_t>(port.number);
    a.ah_attr.sl = static_cast<uint8_t>(settings_.serviceLevel);
    if (remote.roce) {
      a.ah_attr.is_global = 1;
      std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid, sizeof remote.gid);
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(port.gidIndex);
      a.ah_attr.grh.hop_limit = 255;
      a.ah_attr.grh.traffic_class = static_cast<uint8_t>(settings_.trafficClass);
    } else {
      a.ah_attr.dlid = remote.lid;
    }
    int rc = v.modifyQp(qp, &a,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc != 0)
      return systemError("ib: queue pair to rank %d: ready-to-receive: %s", peer_,
                         std::strerror(rc));
    ibv_qp_attr r{};
    r.qp_state = IBV_QPS_RTS;
    r.timeout = static_cast<uint8_t>(settings_.timeout);
    r.retry_cnt = static_cast<uint8_t>(settings_.retryCount);
    r.rnr_retry = 7;  // without end: credits keep receives posted, so this only rides out a race
    r.sq_psn = psn_;
    r.max_rd_atomic = 1;
    rc = v.modifyQp(qp, &r,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc != 0)
      return systemError("ib: queue pair to rank %d: ready-to-send: %s", peer_, std::strerror(rc));
  }
  return Status::Ok();
}

IbEndpoint::IbEndpoint(std::unique_ptr<Connection> connection, int peerRank,
                       std::shared_ptr<const MemoryRegions> regions)
    : c_(std::move(connection)),
      regions_(std::move(regions)),
      peer_(peerRank),
      slots_(c_->settings_.slots),
      slotBytes_(c_->settings_.slotBytes),
      offerArrived_(kOffers),
      offerWriting_(kOffers),
      writing_(static_cast<size_t>(slots_)),
      arrived_(static_cast<size_t>(slots_)) {
  static_assert(kMaxCreditSends == kCreditSendsMax);
  static_assert(kMaxDirectWrites == kDirectWritesMax);
}

IbEndpoint::~IbEndpoint() {
  // Closed with operations still posted: the caller gave up on this peer (a failed call closes
  // such endpoints, core/exec/run.cc), which may well be gone; waiting on it would only delay
  // the error. A clean close first lets the writes of completed sends finish.
  if (failed_ || busy()) return;
  settle(1000);
  if (failed_ || peerClosed_) return;
  // The close: the peer delivers every fragment written before it, then fails what is left.
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = wrId(kClose, 0);
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(kCloseBit | static_cast<uint32_t>(written_ & ~uint64_t{kCloseBit}));
  if (ibv_post_send(c_->qps_[0], &wr, &bad) != 0) return;
  closeSent_ = true;
  // Short: where both ends close at once, one may be gone before it acknowledges the other.
  settle(250);
}

void IbEndpoint::settle(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  auto inFlight = [](const std::vector<uint8_t>& v) {
    return std::any_of(v.begin(), v.end(), [](uint8_t w) { return w != 0; });
  };
  auto pending = [&] {
    if (closeSent_ && !closeDone_) return true;
    return inFlight(writing_) || inFlight(offerWriting_);
  };
  while (!failed_ && pending() && std::chrono::steady_clock::now() < end)
    if (!poll().ok()) break;
}

uint8_t* IbEndpoint::recvSlot(size_t i) const { return c_->memory_ + i * slotBytes_; }
uint8_t* IbEndpoint::sendSlot(size_t i) const {
  return c_->memory_ + (static_cast<size_t>(slots_) + i) * slotBytes_;
}
uint8_t* IbEndpoint::offerIn(size_t j) const {
  return c_->memory_ + 2 * static_cast<size_t>(slots_) * slotBytes_ + j * kOfferBytes;
}
uint8_t* IbEndpoint::offerOut(size_t j) const { return offerIn(kOffers + j); }

Status IbEndpoint::fail(Status st) {
  if (!failed_) {
    failed_ = true;
    error_ = std::move(st);
  }
  return error_;
}

Status IbEndpoint::postRecvWr(int qp) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = wrId(kRecv, static_cast<uint64_t>(qp));
  const int rc = ibv_post_recv(c_->qps_[static_cast<size_t>(qp)], &wr, &bad);
  if (rc != 0)
    return fail(systemError("ib: ibv_post_recv for rank %d: %s", peer_, std::strerror(rc)));
  return Status::Ok();
}

Status IbEndpoint::postSend(const void* data, size_t bytes) {
  if (failed_) return error_;
  SendOp op{};
  op.data = static_cast<const uint8_t*>(data);
  op.bytes = bytes;
  op.seq = sendPosted_++;
  sends_.push_back(op);
  inPlace_.push_back(0);
  return Status::Ok();
}

Status IbEndpoint::postRecv(void* data, size_t bytes, RecvSink* sink, bool /*streamed*/) {
  if (failed_) return error_;
  RecvOp op{};
  op.data = static_cast<uint8_t*>(data);
  op.bytes = bytes;
  op.sink = sink;
  op.seq = recvPosted_++;
  const size_t min = std::max<size_t>(c_->settings_.directMinBytes, 1);
  op.offerable = !sink && regions_ && bytes >= min && regions_->find(data, bytes, &op.keys);
  recvs_.push_back(op);
  return Status::Ok();
}

Status IbEndpoint::handle(const ibv_wc& wc) {
  const uint64_t kind = wc.wr_id >> kKindShift;
  const uint64_t value = wc.wr_id & ((uint64_t{1} << kKindShift) - 1);
  if (wc.status != IBV_WC_SUCCESS) {
    const char* what = kind == kData || kind == kDataInPlace ? "an RDMA write to"
                       : kind == kDirect                     ? "a direct RDMA write to"
                       : kind == kOffer                      ? "an offer to"
                       : kind == kCredit                     ? "a credit message to"
                       : kind == kClose                      ? "the close message to"
                                                             : "a receive from";
    return fail(remoteError("ib: %s rank %d failed: %s (status %d, vendor error 0x%x)", what, peer_,
                            verbs()->wcStatusStr(wc.status), static_cast<int>(wc.status),
                            wc.vendor_err));
  }
  switch (kind) {
    case kData: writing_[value] = 0; break;
    case kDataInPlace:
      writing_[value & 0xff] = 0;
      --inPlace_[(value >> 8) - sendBase_];
      break;
    case kDirect:
      --directWrites_;
      --inPlace_[value - sendBase_];
      break;
    case kOffer: offerWriting_[value] = 0; break;
    case kCredit: --creditSends_; break;
    case kClose: closeDone_ = true; break;
    case kRecv: {
      const uint32_t imm = ntohl(wc.imm_data);
      if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && (imm & kOfferBit)) {
        const uint32_t j = imm & ~kOfferBit;
        if (j != offersRead_ % kOffers || offerArrived_[j])
          return fail(remoteError("ib: rank %d wrote offer slot %u out of turn", peer_, j));
        // Read it now: the peer writes the slot again only after this side's fragments say so.
        const uint8_t* p = offerIn(j);
        Offer o{};
        std::memcpy(&o.seq, p, 8);
        std::memcpy(&o.addr, p + 8, 8);
        std::memcpy(&o.bytes, p + 16, 8);
        std::memcpy(&o.rkey, p + 24, 4);
        offers_.push_back(o);
        ++offersRead_;
      } else if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        if (imm >= static_cast<uint32_t>(slots_) || arrived_[imm])
          return fail(
              remoteError("ib: rank %d wrote into receive slot %u out of turn", peer_, imm));
        arrived_[imm] = 1;
        ++arrivedCount_;
      } else if (!(wc.wc_flags & IBV_WC_WITH_IMM)) {
        return fail(remoteError("ib: rank %d sent a message Braid does not send", peer_));
      } else if (imm & kCloseBit) {
        peerClosed_ = true;
        peerWrote_ = imm & ~kCloseBit;
      } else {
        granted_ += imm;
      }
      return postRecvWr(static_cast<int>(value));
    }
    default:
      return fail(internalError("ib: completion of unknown kind %llu",
                                static_cast<unsigned long long>(kind)));
  }
  return Status::Ok();
}

Status IbEndpoint::poll() {
  for (const ibv_wc& wc : stash_) BRAID_TRY(handle(wc));
  stash_.clear();
  ibv_wc wcs[32];
  for (;;) {
    const int n = ibv_poll_cq(c_->cq_, 32, wcs);
    if (n < 0) return fail(systemError("ib: ibv_poll_cq for rank %d failed", peer_));
    for (int i = 0; i < n; ++i) BRAID_TRY(handle(wcs[i]));
    if (n < 32) {
      retireSends();
      return Status::Ok();
    }
  }
}

void IbEndpoint::retireSends() {
  const uint64_t unposted = sends_.empty() ? sendPosted_ : sends_.front().seq;
  while (sendBase_ < unposted && inPlace_.front() == 0) {
    inPlace_.pop_front();
    ++sendBase_;
  }
}

Status IbEndpoint::deliver() {
  while (!recvs_.empty()) {
    const size_t slot = consumed_ % static_cast<uint64_t>(slots_);
    if (!arrived_[slot]) break;
    RecvOp& op = recvs_.front();
    const uint8_t* p = recvSlot(slot);
    uint64_t message = 0, directFrom = 0;
    uint32_t index = 0, payload = 0, offersRead = 0;
    std::memcpy(&message, p, 8);
    std::memcpy(&index, p + 8, 4);
    std::memcpy(&payload, p + 12, 4);
    std::memcpy(&directFrom, p + 16, 8);
    std::memcpy(&offersRead, p + 24, 4);
    if (index != static_cast<uint32_t>(consumed_) || payload > slotBytes_ - kHeaderBytes)
      return fail(remoteError("ib: rank %d wrote a fragment out of order (%u, expected %u)", peer_,
                              index, static_cast<uint32_t>(consumed_)));
    if (message != op.bytes)
      return fail(
          invalidUsage("ib: rank %d sent a message of %llu bytes where the receive "
                       "posted for it takes %zu",
                       peer_, static_cast<unsigned long long>(message), op.bytes));
    if (payload > op.bytes - op.done)
      return fail(
          remoteError("ib: rank %d wrote past the end of a %zu-byte message", peer_, op.bytes));
    // The peer's count of offers read, modulo 2^32 (it only grows, by at most kOffers).
    peerOffersRead_ += static_cast<uint32_t>(offersRead - static_cast<uint32_t>(peerOffersRead_));
    if (directFrom != kNoDirect) {
      if (!op.offerable || payload != 0 || directFrom != op.done || op.seq >= offerNext_)
        return fail(remoteError(
            "ib: rank %d wrote directly into a receive it was not offered (message %llu)", peer_,
            static_cast<unsigned long long>(op.seq)));
      directReceived_ += op.bytes - op.done;
      op.done = op.bytes;
    } else if (payload) {
      if (op.sink)
        op.sink->consume(op.done, p + kHeaderBytes, payload);
      else
        std::memcpy(op.data + op.done, p + kHeaderBytes, payload);
    }
    op.done += payload;  // none after a direct write (checked above)
    arrived_[slot] = 0;
    ++consumed_;
    ++freed_;
    if (op.done == op.bytes) {
      recvs_.pop_front();
      ++recvBase_;
    }
  }
  return Status::Ok();
}

bool IbEndpoint::canOffer() const {
  if (offersSent_ >= peerOffersRead_ + kOffers || offerWriting_[offersSent_ % kOffers])
    return false;
  for (uint64_t seq = std::max(offerNext_, recvBase_); seq < recvPosted_; ++seq)
    if (recvs_[seq - recvBase_].offerable) return true;
  return false;
}

Status IbEndpoint::sendOffers() {
  offerNext_ = std::max(offerNext_, recvBase_);
  while (offerNext_ < recvPosted_) {
    const RecvOp& op = recvs_[offerNext_ - recvBase_];
    if (!op.offerable) {
      ++offerNext_;
      continue;
    }
    const size_t j = offersSent_ % kOffers;
    if (offersSent_ >= peerOffersRead_ + kOffers || offerWriting_[j]) break;
    uint8_t* p = offerOut(j);
    const uint64_t addr = reinterpret_cast<uint64_t>(op.data), bytes = op.bytes;
    std::memcpy(p, &op.seq, 8);
    std::memcpy(p + 8, &addr, 8);
    std::memcpy(p + 16, &bytes, 8);
    std::memcpy(p + 24, &op.keys.rkey, 4);
    ibv_sge sge{reinterpret_cast<uint64_t>(p), static_cast<uint32_t>(kOfferBytes), c_->mr_->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = wrId(kOffer, j);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(kOfferBit | static_cast<uint32_t>(j));
    wr.wr.rdma.remote_addr =
        c_->remote_.slotsAddr + 2 * static_cast<uint64_t>(slots_) * slotBytes_ + j * kOfferBytes;
    wr.wr.rdma.rkey = c_->remote_.rkey;
    const int rc = ibv_post_send(c_->qps_[0], &wr, &bad);
    if (rc != 0)
      return fail(systemError("ib: offer to rank %d: ibv_post_send: %s", peer_, std::strerror(rc)));
    offerWriting_[j] = 1;
    ++offersSent_;
    ++offerNext_;
  }
  return Status::Ok();
}

Status IbEndpoint::returnCredits() {
  if (freed_ == 0 || creditSends_ >= kMaxCreditSends) return Status::Ok();
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = wrId(kCredit, 0);
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(static_cast<uint32_t>(freed_));
  const int rc = ibv_post_send(c_->qps_[0], &wr, &bad);
  if (rc != 0)
    return fail(
        systemError("ib: credit message to rank %d: ibv_post_send: %s", peer_, std::strerror(rc)));
  ++creditSends_;
  freed_ = 0;
  return Status::Ok();
}

bool IbEndpoint::canWriteFragment() const {
  return written_ < granted_ + static_cast<uint64_t>(slots_) &&
         !writing_[written_ % static_cast<uint64_t>(slots_)];
}

// Matches the front send with the peer's offers: those for earlier receives are stale (their
// messages went through the slots) and dropped; one for this send, of its size, makes the rest
// of it a direct write, where the send's own buffer is registered.
void IbEndpoint::takeOffer(SendOp& op) {
  while (!offers_.empty() && offers_.front().seq < op.seq) offers_.pop_front();
  if (op.direct || offers_.empty() || offers_.front().seq != op.seq) return;
  const Offer o = offers_.front();
  offers_.pop_front();
  if (!op.registered || o.bytes != op.bytes) return;  // a mismatch: the fragments report it
  op.direct = true;
  op.directFrom = op.done;
  op.remoteAddr = o.addr;
  op.remoteKey = o.rkey;
}

// One fragment from `op`: `payload` bytes from op.done (copied into the send slot, or gathered
// from a registered buffer in place), or, ending a direct write, none.
Status IbEndpoint::writeFragment(SendOp& op, size_t payload, uint64_t directFrom) {
  const size_t slot = written_ % static_cast<uint64_t>(slots_);
  uint8_t* p = sendSlot(slot);
  const uint64_t message = op.bytes;
  const uint32_t index = static_cast<uint32_t>(written_);
  const uint32_t length = static_cast<uint32_t>(payload);
  const uint32_t offersRead = static_cast<uint32_t>(offersRead_);
  std::memcpy(p, &message, 8);
  std::memcpy(p + 8, &index, 4);
  std::memcpy(p + 12, &length, 4);
  std::memcpy(p + 16, &directFrom, 8);
  std::memcpy(p + 24, &offersRead, 4);
  std::memset(p + 28, 0, 4);
  // From a registered buffer (sends of BRAID_IB_DIRECT_MIN_BYTES and more) the payload is
  // gathered in place; the send then completes when the write does.
  const bool inPlace = payload > 0 && op.registered;
  ibv_sge sge[2] = {
      {reinterpret_cast<uint64_t>(p), static_cast<uint32_t>(kHeaderBytes), c_->mr_->lkey},
      {reinterpret_cast<uint64_t>(op.data + op.done), length, op.keys.lkey}};
  if (inPlace) {
    ++inPlace_[op.seq - sendBase_];
  } else {
    if (payload) std::memcpy(p + kHeaderBytes, op.data + op.done, payload);
    sge[0].length = static_cast<uint32_t>(kHeaderBytes + payload);
  }
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = inPlace ? wrId(kDataInPlace, op.seq << 8 | slot) : wrId(kData, slot);
  wr.sg_list = sge;
  wr.num_sge = inPlace ? 2 : 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(static_cast<uint32_t>(slot));
  wr.wr.rdma.remote_addr = c_->remote_.slotsAddr + slot * slotBytes_;
  wr.wr.rdma.rkey = c_->remote_.rkey;
  const size_t qp = written_ % c_->qps_.size();
  const int rc = ibv_post_send(c_->qps_[qp], &wr, &bad);
  if (rc != 0) {
    if (inPlace) --inPlace_[op.seq - sendBase_];
    return fail(
        systemError("ib: RDMA write to rank %d: ibv_post_send: %s", peer_, std::strerror(rc)));
  }
  writing_[slot] = 1;
  ++written_;
  op.done += payload;
  return Status::Ok();
}

// The next piece of a direct write, on the queue pair the fragment that ends it will take.
Status IbEndpoint::writeDirect(SendOp& op) {
  const size_t bytes = std::min(op.bytes - op.done, kDirectChunk);
  ibv_sge sge{reinterpret_cast<uint64_t>(op.data + op.done), static_cast<uint32_t>(bytes),
              op.keys.lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = wrId(kDirect, op.seq);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = op.remoteAddr + op.done;
  wr.wr.rdma.rkey = op.remoteKey;
  const size_t qp = written_ % c_->qps_.size();
  const int rc = ibv_post_send(c_->qps_[qp], &wr, &bad);
  if (rc != 0)
    return fail(systemError("ib: direct RDMA write to rank %d: ibv_post_send: %s", peer_,
                            std::strerror(rc)));
  ++inPlace_[op.seq - sendBase_];
  ++directWrites_;
  directSent_ += bytes;
  op.done += bytes;
  return Status::Ok();
}

Status IbEndpoint::pushSends() {
  const size_t room = slotBytes_ - kHeaderBytes;
  const size_t min = std::max<size_t>(c_->settings_.directMinBytes, 1);
  while (!sends_.empty() && !peerClosed_) {
    SendOp& op = sends_.front();
    if (!op.looked) {
      op.looked = true;
      op.registered = regions_ && op.bytes >= min && regions_->find(op.data, op.bytes, &op.keys);
    }
    takeOffer(op);
    if (op.direct && op.done < op.bytes) {
      if (directWrites_ >= kMaxDirectWrites) break;
      BRAID_TRY(writeDirect(op));
      continue;
    }
    if (!canWriteFragment()) break;
    if (op.direct)
      BRAID_TRY(writeFragment(op, 0, op.directFrom));
    else
      BRAID_TRY(writeFragment(op, std::min(op.bytes - op.done, room), kNoDirect));
    if (op.done == op.bytes) sends_.pop_front();
  }
  retireSends();
  return Status::Ok();
}

void IbEndpoint::drainEvents() {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (verbs()->getCqEvent(c_->channel_, &cq, &context) == 0) verbs()->ackCqEvents(cq, 1);
}

Status IbEndpoint::progress() {
  if (failed_) return error_;
  if (armed_) {
    drainEvents();
    armed_ = false;
  }
  BRAID_TRY(poll());
  BRAID_TRY(deliver());
  BRAID_TRY(returnCredits());
  BRAID_TRY(sendOffers());
  BRAID_TRY(pushSends());
  // A closed peer: once everything it wrote has arrived and been handed over, what is still
  // waiting can never complete.
  if (peerClosed_ && static_cast<uint32_t>(arrivedCount_ & ~uint64_t{kCloseBit}) == peerWrote_ &&
      consumed_ == arrivedCount_ && (!recvs_.empty() || !sends_.empty()))
    return fail(
        remoteError("ib: rank %d closed the connection with %zu receive(s) and %zu "
                    "send(s) still waiting here",
                    peer_, recvs_.size(), sends_.size()));
  return Status::Ok();
}

void IbEndpoint::addWakeups(WaitSet& set) {
  const bool deliverable =
      !recvs_.empty() && arrived_[consumed_ % static_cast<uint64_t>(slots_)] != 0;
  const bool creditable = freed_ > 0 && creditSends_ < kMaxCreditSends;
  // The front send can move: a direct write with room for another piece, or else a free slot
  // or an offer for it not yet taken.
  bool writable = false;
  if (!sends_.empty()) {
    const SendOp& op = sends_.front();
    if (op.direct && op.done < op.bytes)
      writable = directWrites_ < kMaxDirectWrites;
    else
      writable =
          canWriteFragment() || (!op.direct && !offers_.empty() && offers_.front().seq <= op.seq);
  }
  if (failed_ || deliverable || creditable || writable || canOffer() || !stash_.empty()) {
    set.cannotSleep();
    return;
  }
  // Arm, then look once more: a completion that came before the arming raises no event.
  armed_ = true;
  if (ibv_req_notify_cq(c_->cq_, 0) != 0) {
    set.cannotSleep();
    return;
  }
  ibv_wc wcs[16];
  const int n = ibv_poll_cq(c_->cq_, 16, wcs);
  if (n != 0) {
    if (n > 0) stash_.assign(wcs, wcs + n);
    set.cannotSleep();
    return;
  }
  set.addFd(c_->channel_->fd, POLLIN);
}

std::string IbEndpoint::describe() const {
  return strfmt("IB/%s, %zu QP%s, %d x %zu KiB slots", c_->device_->port.describe().c_str(),
                c_->qps_.size(), c_->qps_.size() == 1 ? "" : "s", slots_, slotBytes_ / 1024);
}

}  // namespace braid::transport::ib
