#include "transport/tcp/tcp_endpoint.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "transport/tcp/tcp_info.h"
#include "transport/tcp/tcp_wire.h"
#include "transport/wait.h"

namespace braid::transport {
namespace {

// progress() rounds; each round drains every socket until it would block, so a handful is
// enough to let sink deliveries free staging buffers and reads continue.
constexpr int kProgressRounds = 8;

// Limits on one sendmsg/recvmsg: enough to amortise the call, small enough to keep streams
// taking turns.
constexpr size_t kMaxIov = 16;
constexpr size_t kMaxBytesPerCall = 8u << 20;

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

// A pump that received at least this much acknowledges it at once. A sender waits for the ACK of
// its last message's tail only where its next message needs more than the rest of its congestion
// window: at least 10 segments (the initial window, and the window after an idle spell), so
// never for messages of a few KiB, whose immediate ACK would cost a packet each way (8-byte
// AllReduce between two emulated hosts: 6 us with no immediate ACKs, 9-12 us with one after
// every receive; bench/results/tcp_quickack.md has the commands).
constexpr size_t kAckNowBytes = 8192;

}  // namespace

TcpEndpoint::TcpEndpoint(std::vector<StreamSockets> streams, size_t sliceBytes, int peerRank)
    : fds_(std::move(streams)), streams_(fds_.size()), slice_(sliceBytes), peerRank_(peerRank) {
  for (size_t j = 0; j < fds_.size(); ++j) {
    streams_[j].send = &fds_[j].send;
    streams_[j].recv = fds_[j].recv.valid() ? &fds_[j].recv : &fds_[j].send;
  }
}

std::string TcpEndpoint::describe() const {
  const bool tls = !fds_.empty() && fds_[0].send.encrypted();
  return strfmt("TCP/%zu stream%s%s, slice %zu KiB, peer rank %d", streams_.size(),
                streams_.size() == 1 ? "" : "s", tls ? " (TLS)" : "", slice_ >> 10, peerRank_);
}

bool TcpEndpoint::sample(LinkSample* out) const {
  LinkSample sum;
  bool any = false;
  for (const StreamSockets& stream : fds_) {
    TcpInfo info;
    if (!readTcpInfo(stream.send.fd(), &info)) continue;
    any = true;
    sum.retransmits += info.retransmits;
    sum.rttUs = std::max(sum.rttUs, info.rttUs);
    sum.cwnd += info.cwnd;
    // A message is striped over the streams, which send side by side: their bytes add up, their
    // sending time is the longest of theirs.
    sum.bytesAcked += info.bytesAcked;
    sum.sendingUs = std::max(sum.sendingUs, info.sendingUs);
  }
  if (any) *out = sum;
  return any;
}

size_t TcpEndpoint::sliceLength(size_t bytes, size_t slice) const {
  return std::min(slice_, bytes - slice * slice_);
}

size_t TcpEndpoint::partBytes(size_t stream, size_t bytes) const {
  const size_t n = streams_.size();
  const size_t slices = (bytes + slice_ - 1) / slice_;
  if (stream >= slices) return 0;
  const size_t count = (slices - 1 - stream) / n + 1;
  size_t part = count * slice_;
  if ((slices - 1) % n == stream) part -= slice_ - sliceLength(bytes, slices - 1);
  return part;
}

void TcpEndpoint::locate(size_t stream, size_t bytes, size_t pos, size_t* offset,
                         size_t* length) const {
  const size_t slice = stream + (pos / slice_) * streams_.size();
  const size_t inSlice = pos % slice_;
  *offset = slice * slice_ + inSlice;
  *length = sliceLength(bytes, slice) - inSlice;
}

size_t TcpEndpoint::gather(size_t stream, size_t bytes, size_t pos, size_t partEnd, uint8_t* base,
                           iovec* iov, size_t maxIov) const {
  size_t count = 0, queued = 0;
  while (pos < partEnd && count < maxIov && queued < kMaxBytesPerCall) {
    size_t offset, length;
    locate(stream, bytes, pos, &offset, &length);
    if (count > 0 &&
        static_cast<uint8_t*>(iov[count - 1].iov_base) + iov[count - 1].iov_len == base + offset) {
      iov[count - 1].iov_len += length;  // one stream: consecutive slices are adjacent
    } else {
      iov[count++] = {base + offset, length};
    }
    pos += length;
    queued += length;
  }
  return count;
}

Status TcpEndpoint::checkRecv(ssize_t n, size_t j) {
  if (n == 0) return fail(remoteError("stream %zu: peer closed the connection", j));
  if (n > 0) return Status::Ok();
  const int err = errno;
  if (wouldBlock(err) || err == EINTR) return Status::Ok();
  if (err == ECONNRESET) return fail(remoteError("stream %zu: connection reset by peer", j));
  return fail(systemError("stream %zu: recv: %s", j, streams_[j].recv->errorText(err).c_str()));
}

Status TcpEndpoint::postSend(const void* data, size_t bytes) {
  if (!error_.ok()) return error_;
  if (bytes && !data) return invalidArgument("%s", "TCP postSend: null buffer");
  sends_.push_back({static_cast<const uint8_t*>(data), bytes});
  return Status::Ok();
}

Status TcpEndpoint::postRecv(void* data, size_t bytes, RecvSink* sink,
                             bool /*streamed: the kernel copies*/) {
  if (!error_.ok()) return error_;
  if (bytes && !data && !sink) return invalidArgument("%s", "TCP postRecv: null buffer");
  recvs_.push_back({static_cast<uint8_t*>(data), bytes, sink});
  return Status::Ok();
}

// A sendmsg that failed for good: the peer is gone, or the socket broke.
Status TcpEndpoint::sendFailed(int err, size_t j) {
  if (err == EPIPE || err == ECONNRESET)
    return fail(remoteError("stream %zu: peer closed the connection", j));
  return fail(systemError("stream %zu: send: %s", j, streams_[j].send->errorText(err).c_str()));
}

Status TcpEndpoint::fail(Status st) {
  error_ = st.withContext(strfmt("TCP connection to rank %d", peerRank_));
  return error_;
}

void TcpEndpoint::putHeader(uint8_t* h, uint64_t message, size_t bytes) {
  tcp::encodeHeader(message, bytes, h);
}

// A stream's next messages when several small ones wait whole on stream 0: they leave in one
// sendmsg (one system call and, usually, one packet: a call's signature and its first data
// message, say). The sequence continues in pumpSend when only part of them went out.
void TcpEndpoint::batchSends(const Stream& s, Batch* b) const {
  for (uint64_t m = s.sendMsg; m - sendBase_ < sends_.size() && b->count < kBatch; ++m) {
    const SendOp& op = sends_[m - sendBase_];
    if (op.bytes > kBatchMaxBytes || op.bytes > slice_) break;
    putHeader(b->add(const_cast<uint8_t*>(op.data), op.bytes), m, op.bytes);
  }
}

// The same for receives: small posted receives without a sink, read in one recvmsg. Their sizes
// are known (a message must match its posted receive); should a header disagree, the endpoint
// fails, so bytes read past a shorter message do no harm.
void TcpEndpoint::batchRecvs(const Stream& s, Batch* b) const {
  for (uint64_t m = s.recvMsg; m - recvBase_ < recvs_.size() && b->count < kBatch; ++m) {
    const RecvOp& op = recvs_[m - recvBase_];
    if (op.sink || op.bytes > kBatchMaxBytes || op.bytes > slice_) break;
    b->add(op.data, op.bytes);
  }
}

Status TcpEndpoint::pumpSend(size_t j, bool* moved) {
  Stream& s = streams_[j];
  const size_t header = j == 0 ? kHeaderBytes : 0;
  for (;;) {
    if (s.sendMsg - sendBase_ >= sends_.size()) return Status::Ok();
    if (header && s.sendPos == 0 && s.sendMsg + 1 - sendBase_ < sends_.size()) {
      Batch b;
      batchSends(s, &b);
      if (b.count >= 2) {
        ssize_t n = s.send->sendv(b.iov, b.iovs);
        if (n < 0) {
          const int err = errno;
          if (wouldBlock(err)) return Status::Ok();
          if (err == EINTR) continue;
          return sendFailed(err, j);
        }
        *moved = true;
        for (size_t k = 0; k < b.count; ++k) {
          if (static_cast<size_t>(n) < b.length[k]) {  // this one went out in part
            std::memcpy(s.headerOut, b.headers[k], kHeaderBytes);
            s.sendPos = static_cast<size_t>(n);
            break;
          }
          n -= static_cast<ssize_t>(b.length[k]);
          ++s.sendMsg;
        }
        continue;
      }
    }
    const SendOp& op = sends_[s.sendMsg - sendBase_];
    const size_t total = header + partBytes(j, op.bytes);
    if (s.sendPos == 0 && header) putHeader(s.headerOut, s.sendMsg, op.bytes);
    if (s.sendPos < total) {
      iovec iov[kMaxIov];
      size_t count = 0;
      if (s.sendPos < header) iov[count++] = {s.headerOut + s.sendPos, header - s.sendPos};
      count += gather(j, op.bytes, std::max(s.sendPos, header) - header, total - header,
                      const_cast<uint8_t*>(op.data), iov + count, kMaxIov - count);
      ssize_t n = s.send->sendv(iov, count);
      if (n < 0) {
        const int err = errno;
        if (wouldBlock(err)) return Status::Ok();
        if (err == EINTR) continue;
        return sendFailed(err, j);
      }
      s.sendPos += static_cast<size_t>(n);
      *moved = true;
      if (s.sendPos < total) continue;
    }
    ++s.sendMsg;  // this stream's part of the message is out (possibly an empty part)
    s.sendPos = 0;
  }
}

Status TcpEndpoint::checkHeader(Stream& s, const RecvOp& op) {
  Status st = tcp::checkHeader(s.headerIn, s.recvMsg, op.bytes);
  return st.ok() ? st : fail(std::move(st));
}

Status TcpEndpoint::pumpRecv(size_t j, bool* moved) {
  Stream& s = streams_[j];
  const size_t header = j == 0 ? kHeaderBytes : 0;
  // What this pump took off the socket is acknowledged before it returns, not on the kernel's
  // delayed-ACK timer (net::Socket::ackNow), where it matters (kAckNowBytes): the pump took that
  // much, or it took the tail of a message part that large (tail is set only after a receive).
  struct AckOnReturn {
    net::Socket* socket;
    size_t took = 0;
    bool tail = false;
    ~AckOnReturn() {
      if (took >= kAckNowBytes || tail) socket->ackNow();
    }
  } ack{s.recv};
  for (;;) {
    if (s.recvMsg - recvBase_ >= recvs_.size()) return Status::Ok();
    if (header && s.recvPos == 0 && s.recvMsg + 1 - recvBase_ < recvs_.size()) {
      Batch b;
      batchRecvs(s, &b);
      if (b.count >= 2) {
        ssize_t n = s.recv->recvv(b.iov, b.iovs);
        BRAID_TRY(checkRecv(n, j));
        if (n < 0) {
          if (errno == EINTR) continue;
          return Status::Ok();  // would block
        }
        *moved = true;
        ack.took += static_cast<size_t>(n);
        for (size_t k = 0; k < b.count && n > 0; ++k) {
          const RecvOp& op = recvs_[s.recvMsg - recvBase_];
          const size_t got = std::min(static_cast<size_t>(n), b.length[k]);
          std::memcpy(s.headerIn, b.headers[k], std::min(got, kHeaderBytes));
          if (got >= kHeaderBytes) BRAID_TRY(checkHeader(s, op));
          n -= static_cast<ssize_t>(got);
          if (got < b.length[k]) {  // this one arrived in part
            s.recvPos = got;
            break;
          }
          ++s.recvMsg;
        }
        continue;
      }
    }
    const RecvOp& op = recvs_[s.recvMsg - recvBase_];
    const size_t total = header + partBytes(j, op.bytes);
    if (s.recvPos < total) {
      iovec iov[kMaxIov];
      size_t count = 0;
      bool staged = false;
      if (s.recvPos < header) {
        iov[count++] = {s.headerIn + s.recvPos, header - s.recvPos};
        // Header and payload in one call; should the header then disagree on the size, the
        // endpoint fails anyway, so bytes read past a shorter message do no harm.
        if (!op.sink)
          count += gather(j, op.bytes, 0, total - header, op.data, iov + count, kMaxIov - count);
      } else if (!op.sink) {
        count = gather(j, op.bytes, s.recvPos - header, total - header, op.data, iov, kMaxIov);
      } else {
        size_t offset, length;
        locate(j, op.bytes, s.recvPos - header, &offset, &length);
        const size_t slice = offset / slice_;
        if (s.stageSlice == SIZE_MAX) {  // stage is free: it now holds this slice
          if (s.stage.size() < slice_) s.stage.resize(slice_);
          s.stageMsg = s.recvMsg;
          s.stageSlice = slice;
          s.stageGot = 0;
        } else if (s.stageMsg != s.recvMsg || s.stageSlice != slice) {
          return Status::Ok();  // an earlier slice still waits for delivery
        }
        iov[count++] = {s.stage.data() + (offset - slice * slice_), length};
        staged = true;
      }
      ssize_t n = s.recv->recvv(iov, count);
      BRAID_TRY(checkRecv(n, j));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::Ok();  // would block
      }
      const bool headerWasIncomplete = s.recvPos < header;
      s.recvPos += static_cast<size_t>(n);
      if (staged) s.stageGot += static_cast<size_t>(n);
      *moved = true;
      ack.took += static_cast<size_t>(n);
      if (headerWasIncomplete && s.recvPos >= header) BRAID_TRY(checkHeader(s, op));
      if (s.recvPos < total) continue;
      ack.tail = ack.tail || total >= kAckNowBytes;
    }
    ++s.recvMsg;
    s.recvPos = 0;
  }
}

void TcpEndpoint::deliver(bool* moved) {
  while (!recvs_.empty()) {
    RecvOp& op = recvs_.front();
    if (!op.sink || op.delivered == op.bytes) return;
    const size_t slice = op.delivered / slice_;
    Stream& s = streams_[slice % streams_.size()];
    if (s.stageSlice != slice || s.stageMsg != recvBase_) return;
    const size_t inSlice = op.delivered - slice * slice_;
    if (s.stageGot > inSlice) {
      op.sink->consume(op.delivered, s.stage.data() + inSlice, s.stageGot - inSlice);
      op.delivered += s.stageGot - inSlice;
      *moved = true;
    }
    if (op.delivered < slice * slice_ + sliceLength(op.bytes, slice)) return;
    s.stageSlice = SIZE_MAX;  // slice handed over; the stream may receive its next one
  }
}

void TcpEndpoint::retire() {
  uint64_t sent = UINT64_MAX, received = UINT64_MAX;
  for (const Stream& s : streams_) {
    sent = std::min(sent, s.sendMsg);
    received = std::min(received, s.recvMsg);
  }
  while (sendBase_ < sent && !sends_.empty()) {
    sends_.pop_front();
    ++sendBase_;
  }
  while (recvBase_ < received && !recvs_.empty()) {
    const RecvOp& op = recvs_.front();
    if (op.sink && op.delivered < op.bytes) return;
    recvs_.pop_front();
    ++recvBase_;
  }
}

// A receive that fails (say, on the size in the next message's header) still completes the
// messages that arrived whole before it: the caller then reads them (a mismatch check's
// signature, which says more than the size that followed it). Streams with nothing of those
// messages to read pass over their empty parts, as pumpRecv would have.
void TcpEndpoint::settleAfterFailure() {
  for (size_t j = 1; j < streams_.size(); ++j) {
    Stream& s = streams_[j];
    while (s.recvPos == 0 && s.recvMsg - recvBase_ < recvs_.size() &&
           partBytes(j, recvs_[s.recvMsg - recvBase_].bytes) == 0)
      ++s.recvMsg;
  }
  bool moved = false;
  deliver(&moved);
  retire();
}

// A stream waits to write while it has a part of a posted message left to send, and to read
// while a posted receive has a part left on it. Bytes TLS already holds are not announced by
// the socket: the caller must not sleep on it then.
void TcpEndpoint::addWakeups(WaitSet& set) {
  for (const Stream& s : streams_) {
    const bool out = s.sendMsg - sendBase_ < sends_.size();
    const bool in = s.recvMsg - recvBase_ < recvs_.size();
    if (in && s.recv->pending()) {
      set.cannotSleep();
      return;
    }
    if (s.send == s.recv) {
      if (out || in)
        set.addFd(s.send->fd(),
                  s.send->pollEvents(static_cast<short>((out ? POLLOUT : 0) | (in ? POLLIN : 0))));
      continue;
    }
    if (out) set.addFd(s.send->fd(), s.send->pollEvents(POLLOUT));
    if (in) set.addFd(s.recv->fd(), s.recv->pollEvents(POLLIN));
  }
}

Status TcpEndpoint::progress() {
  if (!error_.ok()) return error_;
  for (int round = 0; round < kProgressRounds; ++round) {
    bool moved = false;
    for (size_t j = 0; j < streams_.size(); ++j) {
      BRAID_TRY(pumpSend(j, &moved));
      Status st = pumpRecv(j, &moved);
      if (!st.ok()) {
        settleAfterFailure();
        return st;
      }
    }
    deliver(&moved);
    retire();
    if (!moved) break;
  }
  return Status::Ok();
}

}  // namespace braid::transport
