// A device plan staged piece by piece while it runs (the proxy's runStaged, stream_proxy.cc): the
// exec::StepGate through which the executor waits for the input's pieces and sends the output's
// back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "core/device/stream_ops.h"
#include "core/exec/executor.h"

namespace braid::device {

// A call is cut into at most this many pieces (a copy call and an event each), whatever
// BRAID_DEVICE_PIECE_BYTES says.
constexpr size_t kMaxPieces = 1024;

// One plan staged by the proxy on its own stream, piece by piece (BRAID_DEVICE_PIECE_BYTES: its
// default, 2 MiB, is tens of microseconds of a PCIe copy, so the first steps wait for little of
// the input, and large enough that a piece's copy call and event stay a small part of its copy),
// while it runs: every piece of the input is queued at once, each with an event, and a step
// starts once the pieces of the input it touches have landed; a piece of the output goes back as
// soon as no step that writes it is left, queued behind the input copies on the same stream (so a
// piece of an in-place buffer, which holds input until a step writes it, never goes back before
// that input arrived). The input's copy to the host and the output's copy back thus overlap the
// schedule's own messages.
class PieceGate final : public exec::StepGate {
 public:
  PieceGate(StreamOps& ops, cudaStream_t stream, size_t pieceBytes)
      : ops_(ops), stream_(stream), piece_(pieceBytes) {}
  PieceGate(const PieceGate&) = delete;
  PieceGate& operator=(const PieceGate&) = delete;
  ~PieceGate();

  // `plan` points at its staging; in (null: none) fills its input there, out (null: none) empties
  // its output. Queues the input's pieces, and the output's pieces that no step writes.
  Status start(const Plan& plan, void* inHost, const void* inDevice, size_t inBytes,
               void* outDevice, const void* outHost, size_t outBytes);

  bool open(uint32_t step) override;
  void finished(uint32_t step) override;
  bool waiting() const override { return landed_ < inputs_.size(); }

  // After the run: a successful one has sent every piece back; the first error on the way.
  Status finish(bool ran);

 private:
  struct Span {
    const char* p = nullptr;
    size_t bytes = 0;
  };
  struct Range {
    int32_t first, last;  // pieces; none when first > last
  };

  // The pieces of `whole` that `part` touches.
  Range pieces(const Span& whole, const Span& part) const;
  void sendBack(size_t p);

  StreamOps& ops_;
  cudaStream_t stream_;
  const size_t piece_;
  Span in_, out_;
  char* outDevice_ = nullptr;
  std::vector<Event> inputs_;      // one per input piece, completing in order (one stream)
  size_t landed_ = 0;              // input pieces known to have landed
  std::vector<int32_t> needs_;     // per step: the last input piece it touches (-1: none)
  std::vector<Range> writes_;      // per step: the output pieces it writes
  std::vector<uint32_t> writers_;  // per output piece: steps left that write it
  std::vector<bool> sent_;
  Status status_;
};

}  // namespace braid::device
