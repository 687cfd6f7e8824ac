// The TCP endpoint's wire format, per message, on every stream j of N, slice size S:
//   stream 0 first carries a 16-byte header (magic, message sequence number, size);
//   slice k of the payload ([k*S, (k+1)*S) clipped to the size) travels on stream k % N.
// Each stream carries its part of message m before its part of m+1, so the receiver can place
// bytes straight into the posted buffer (or, for a RecvSink, stage one slice per stream and
// hand slices over in offset order).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <vector>

#include "base/fifo.h"
#include "base/net/socket.h"
#include "transport/tcp/tcp_wire.h"
#include "transport/transport.h"

namespace braid::transport {

class TcpEndpoint final : public Endpoint {
 public:
  struct StreamSockets {
    net::Socket send;  // the same socket serves both directions, except for a connection to self
    net::Socket recv;
  };
  TcpEndpoint(std::vector<StreamSockets> streams, size_t sliceBytes, int peerRank);

  Status postSend(const void* data, size_t bytes) override;
  using Endpoint::postRecv;
  Status postRecv(void* data, size_t bytes, RecvSink* sink, bool streamed) override;
  Status progress() override;
  uint64_t sendsCompleted() const override { return sendBase_; }
  uint64_t recvsCompleted() const override { return recvBase_; }
  bool busy() const override { return !sends_.empty() || !recvs_.empty(); }
  void addWakeups(WaitSet& set) override;  // every stream with an operation to move
  std::string describe() const override;
  bool sample(LinkSample* out) const override;  // TCP_INFO of every stream

 private:
  static constexpr size_t kHeaderBytes = tcp::kHeaderBytes;

  struct SendOp {
    const uint8_t* data;
    size_t bytes;
  };
  struct RecvOp {
    uint8_t* data;
    size_t bytes;
    RecvSink* sink;
    size_t delivered = 0;  // sink only: bytes handed over, in order
  };
  struct Stream {
    net::Socket* send = nullptr;  // in fds_
    net::Socket* recv = nullptr;
    uint64_t sendMsg = 0, recvMsg = 0;  // absolute index of the message being moved
    size_t sendPos = 0, recvPos = 0;    // position in this stream's part (header included)
    uint8_t headerOut[kHeaderBytes] = {};
    uint8_t headerIn[kHeaderBytes] = {};
    // Sink receives: the slice being received on this stream, held until it is delivered.
    std::vector<uint8_t> stage;
    uint64_t stageMsg = 0;
    size_t stageSlice = SIZE_MAX;  // SIZE_MAX: empty
    size_t stageGot = 0;
  };

  // Several small messages moved by one system call (see batchSends).
  static constexpr size_t kBatch = 8;
  static constexpr size_t kBatchMaxBytes = 4096;
  struct Batch {
    size_t count = 0, iovs = 0;
    uint8_t headers[kBatch][kHeaderBytes];
    size_t length[kBatch];  // header and payload
    iovec iov[2 * kBatch];
    // Appends a message: its header slot, then its payload; returns the header slot.
    uint8_t* add(void* payload, size_t bytes) {
      uint8_t* h = headers[count];
      iov[iovs++] = {h, kHeaderBytes};
      if (bytes) iov[iovs++] = {payload, bytes};
      length[count++] = kHeaderBytes + bytes;
      return h;
    }
  };
  static void putHeader(uint8_t* h, uint64_t message, size_t bytes);
  void batchSends(const Stream& s, Batch* b) const;
  void batchRecvs(const Stream& s, Batch* b) const;

  size_t partBytes(size_t stream, size_t bytes) const;  // payload part, header excluded
  // Where position `pos` of a stream's payload part lands: buffer offset and contiguous length.
  void locate(size_t stream, size_t bytes, size_t pos, size_t* offset, size_t* length) const;
  size_t sliceLength(size_t bytes, size_t slice) const;
  // Fills iovecs for this stream's payload part from `pos` up to `partEnd`; returns the count.
  size_t gather(size_t stream, size_t bytes, size_t pos, size_t partEnd, uint8_t* base, iovec* iov,
                size_t maxIov) const;
  Status checkRecv(ssize_t n, size_t stream);  // error for a closed or broken socket
  Status sendFailed(int err, size_t stream);   // the same for a failed sendmsg

  Status pumpSend(size_t j, bool* moved);
  Status pumpRecv(size_t j, bool* moved);
  Status checkHeader(Stream& s, const RecvOp& op);
  void deliver(bool* moved);
  void retire();
  void settleAfterFailure();
  Status fail(Status st);

  std::vector<StreamSockets> fds_;
  std::vector<Stream> streams_;
  const size_t slice_;
  const int peerRank_;
  Fifo<SendOp> sends_;
  Fifo<RecvOp> recvs_;
  uint64_t sendBase_ = 0, recvBase_ = 0;  // absolute index of the fronts = completed counts
  Status error_;
};

}  // namespace braid::transport
