#include "core/device/piece_gate.h"

#include <algorithm>

#include "algos/schedule.h"
#include "kernels/reduce.h"

namespace braid::device {

PieceGate::~PieceGate() {
  for (Event ev : inputs_) ops_.destroy(ev);
}

Status PieceGate::start(const Plan& plan, void* inHost, const void* inDevice, size_t inBytes,
                        void* outDevice, const void* outHost, size_t outBytes) {
  in_ = {static_cast<const char*>(inHost), inBytes};
  out_ = {static_cast<const char*>(outHost), outBytes};
  outDevice_ = static_cast<char*>(outDevice);
  for (size_t at = 0; at < inBytes; at += piece_) {
    BRAID_TRY(ops_.copyToHost(static_cast<char*>(inHost) + at,
                              static_cast<const char*>(inDevice) + at,
                              std::min(piece_, inBytes - at), stream_));
    Event ev = nullptr;
    const Status st = ops_.record(stream_, &ev);
    if (ev) inputs_.push_back(ev);
    BRAID_TRY(st);
  }
  const algos::Schedule& s = *plan.schedule;
  const size_t unit = kernels::typeSize(plan.type);
  auto at = [&](const algos::Region& r) -> Span {
    if (r.buffer != algos::Buffer::Send && r.buffer != algos::Buffer::Recv) return {};
    const char* base = r.buffer == algos::Buffer::Send ? static_cast<const char*>(plan.sendbuff)
                                                       : static_cast<const char*>(plan.recvbuff);
    return {base + r.offset * unit, r.count * unit};
  };
  needs_.assign(s.steps.size(), -1);
  writes_.assign(s.steps.size(), {1, 0});
  writers_.assign((outBytes + piece_ - 1) / piece_, 0);
  sent_.assign(writers_.size(), false);
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const algos::Step& st = s.steps[i];
    for (const Span& touched : {at(st.src), at(st.dst)})
      if (const Range r = pieces(in_, touched); r.first <= r.last)
        needs_[i] = std::max(needs_[i], r.last);
    if (st.kind == algos::StepKind::Send) continue;
    writes_[i] = pieces(out_, at(st.dst));
    for (int32_t p = writes_[i].first; p <= writes_[i].last; ++p) ++writers_[p];
  }
  for (size_t p = 0; p < writers_.size(); ++p)
    if (writers_[p] == 0) sendBack(p);
  return status_;
}

bool PieceGate::open(uint32_t step) {
  const int32_t need = needs_[step];
  while (int32_t(landed_) <= need) {
    bool done = false;
    const Status st = ops_.query(inputs_[landed_], &done);
    if (!st.ok() && status_.ok()) status_ = st.withContext("copying the inputs to staging");
    // A failed copy lets the steps run (on what is there) so that the run ends; the batch fails
    // with the copy's error.
    if (!done && st.ok()) return false;
    ++landed_;
  }
  return true;
}

void PieceGate::finished(uint32_t step) {
  const Range w = writes_[step];
  for (int32_t p = w.first; p <= w.last; ++p)
    if (--writers_[p] == 0) sendBack(size_t(p));
}

Status PieceGate::finish(bool ran) {
  if (ran)
    for (size_t p = 0; p < sent_.size(); ++p)
      if (!sent_[p]) sendBack(p);
  return status_;
}

PieceGate::Range PieceGate::pieces(const Span& whole, const Span& part) const {
  const char* lo = std::max(whole.p, part.p);
  const char* hi = std::min(whole.p + whole.bytes, part.p + part.bytes);
  if (!whole.p || !part.p || lo >= hi) return {1, 0};
  return {int32_t((lo - whole.p) / piece_), int32_t((hi - 1 - whole.p) / piece_)};
}

void PieceGate::sendBack(size_t p) {
  sent_[p] = true;
  const size_t at = p * piece_;
  const Status st =
      ops_.copyToDevice(outDevice_ + at, out_.p + at, std::min(piece_, out_.bytes - at), stream_);
  if (!st.ok() && status_.ok()) status_ = st.withContext("copying the results back");
}

}  // namespace braid::device
