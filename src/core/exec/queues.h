// What the executor's run (core/exec/run.h) keeps per channel of an execution: the operations
// queued to one peer in posting order, the mismatch signatures exchanged with it (and the small
// data they carry), and the sink that reduces what arrives straight out of the transport.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "kernels/reduce.h"
#include "transport/transport.h"

struct ncclComm;

namespace braid::exec {

// Reduces data straight out of the transport as it arrives. Pieces may split an element (a
// ring wraps anywhere), so up to one partial element is carried between calls.
class ReduceSink final : public transport::RecvSink {
 public:
  // `streamed`: write the results around the cache (kernels::reduceStreamed).
  ReduceSink(char* dst, const char* src, size_t typeSize, ncclDataType_t type, ncclRedOp_t op,
             bool incomingFirst, bool streamed = false)
      : dst_(dst),
        src_(src),
        typeSize_(typeSize),
        type_(type),
        op_(op),
        incomingFirst_(incomingFirst),
        streamed_(streamed) {}

  void consume(size_t offset, const void* data, size_t bytes) override {
    const char* in = static_cast<const char*>(data);
    if (carried_ > 0) {
      size_t take = std::min(typeSize_ - carried_, bytes);
      std::memcpy(carry_ + carried_, in, take);
      carried_ += take;
      in += take;
      bytes -= take;
      offset += take;
      if (carried_ < typeSize_) return;
      size_t at = offset - typeSize_;
      apply(at, carry_, 1);
      carried_ = 0;
    }
    size_t whole = bytes / typeSize_;
    if (whole > 0) apply(offset, in, whole);
    size_t rest = bytes - whole * typeSize_;
    if (rest > 0) {
      std::memcpy(carry_, in + whole * typeSize_, rest);
      carried_ = rest;
    }
  }

 private:
  char* dst_;
  const char* src_;
  size_t typeSize_;
  ncclDataType_t type_;
  ncclRedOp_t op_;
  char carry_[16];
  size_t carried_ = 0;
  bool incomingFirst_;
  bool streamed_;

  void apply(size_t at, const void* incoming, size_t count) {
    const void* a = incomingFirst_ ? incoming : src_ + at;
    const void* b = incomingFirst_ ? src_ + at : incoming;
    if (streamed_)
      kernels::reduceStreamed(dst_ + at, a, b, count, type_, op_);
    else
      kernels::reduce(dst_ + at, a, b, count, type_, op_);
  }
};

struct StepRef {
  uint32_t plan;
  uint32_t step;  // a schedule step, or kSignature + index of the queue's signature slot
};
constexpr uint32_t kSignature = 0x80000000u;

// Before its first data message on a channel, each plan exchanges its call's signature with the
// peer (both directions), so mismatched calls are caught before any data is misread.
// A collective's signature goes both ways. Point-to-point: a Send's goes to its peer, where the
// matching Recv checks it; and at the start of each execution, before anything else on the
// channel, every Recv announces itself to its sender, whose Sends check the announcements in
// order. Exchanging both ways in call order would pair a Send with the peer's Send whenever two
// ranks send to and receive from each other; apart, the two streams pair k-th Send with k-th
// Recv, as NCCL matches them, whatever the order of the calls.
//
// A signature message has a fixed size whatever the call, so that mismatched calls still pair
// their signatures, and room for a small first data message of the same plan to ride along
// (kInlineBytes; an 8-byte AllReduce on 2 ranks then moves one message each way instead of two).
// The sender inlines its plan's next data message when that is ready and small; the top byte of
// the operation number says how many bytes came, and the receiver takes them from there in place
// of a receive (after the signature was checked, never before).
constexpr size_t kInlineBytes = 32;
constexpr size_t kSignatureBytes = 16 + kInlineBytes;
constexpr int kInlineShift = 56;
constexpr uint64_t kNumberMask = (uint64_t{1} << kInlineShift) - 1;

struct SignatureSlot {
  // signature, operation number on this pair (and inline bytes above kInlineShift), inline data
  uint64_t out[kSignatureBytes / 8];
  uint64_t in[kSignatureBytes / 8];
  uint64_t expected[2];
  uint32_t plan;
  bool sends, receives, announcement;

  size_t inlineIn() const { return in[1] >> kInlineShift; }
};

// The operations of every plan that go to one peer of one communicator, in the order they
// must be posted (FIFO matching: the peer posts its side in the same order).
struct ChannelQueue {
  ncclComm* comm;
  int peer;
  std::vector<StepRef> sends, recvs;
  std::vector<uint64_t> sendSeq, recvSeq;  // endpoint numbers of posted operations
  std::vector<uint8_t> recvInline;  // 1: receive k's data may come inside the signature before it
  size_t sendsPosted = 0, sendsDone = 0, recvsPosted = 0, recvsDone = 0;
  std::deque<SignatureSlot> signatures;  // a deque: endpoints hold pointers into it

  // This run's traffic on the connection, and in a timed run its clock (ns from the run's
  // start; -1: not yet): the first receive done, the last operation done, and the waits with
  // nothing moving while it had operations in flight (core/comm/link_stats.h).
  uint64_t bytesSent = 0, bytesReceived = 0;
  int64_t firstInNs = -1, lastDoneNs = -1;
  uint64_t stallNs = 0;

  bool inFlight() const { return sendsDone < sendsPosted || recvsDone < recvsPosted; }
  void resetCounts() {
    sendsPosted = sendsDone = recvsPosted = recvsDone = 0;
    bytesSent = bytesReceived = 0;
    firstInNs = lastDoneNs = -1;
    stallNs = 0;
  }
};

}  // namespace braid::exec
