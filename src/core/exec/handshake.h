// The signature handshake, the part on every small call's path (run.h says how Run's members
// are laid out): held-back signatures, the check of a received one, and the small first data
// message a signature carries. Signatures are described in queues.h; which peers a plan checks
// with is handshake.cc's. Inline, since the run loop calls these once or more per message.
#pragma once

#include "base/small_copy.h"
#include "base/strfmt.h"
#include "core/comm/comm.h"
#include "core/exec/run.h"
#include "core/exec/signature.h"

namespace braid::exec {

// A collective's signature to a peer its plan sends data to later waits for that first data
// message, so that both leave together (one system call on TCP, where each message costs the
// kernel's network path on both ends; with ranks sharing cores that CPU is the time). Mismatch
// detection does not depend on it: a rank's signature goes at once to every peer it sends no
// data to, and all held-back signatures go after kFlushSignaturesAfter of waiting, so ranks
// stuck on each other's mismatched calls still see every signature.
inline bool Run::readyToSend(const ChannelQueue& q, size_t k) const {
  const StepRef ref = q.sends[k];
  if (ref.step < kSignature) return ready(ref);
  if (idle_.flushSignatures() || k + 1 >= q.sends.size()) return true;
  const StepRef next = q.sends[k + 1];
  if (next.plan != ref.plan || next.step >= kSignature) return true;
  return ready(next);
}

inline Status Run::checkSignature(const ChannelQueue& q, StepRef ref) const {
  const SignatureSlot& s = q.signatures[ref.step - kSignature];
  const int me = plans_[ref.plan].comm->rank;
  const Plan& p = plans_[ref.plan];
  if (s.in[0] != s.expected[0])
    return invalidUsage("rank %d called %s where rank %d called %s", q.peer,
                        describeSignature(s.in[0]).c_str(), me, describe(p).c_str());
  if ((s.in[1] & kNumberMask) != s.expected[1])
    return invalidUsage(
        "rank %d is at its operation #%llu with rank %d, which is at #%llu: one of "
        "them skipped or added a call",
        q.peer, static_cast<unsigned long long>(s.in[1] & kNumberMask), me,
        static_cast<unsigned long long>(s.expected[1]));
  return Status::Ok();
}

// Whether refs[k] (a send or receive queue) is a small data message right after its own plan's
// signature: the sender's and the receiver's queues agree on it, being the same call's.
inline bool Run::inlineCandidate(const std::vector<StepRef>& refs, size_t k) const {
  if (k == 0 || k >= refs.size()) return false;
  const StepRef sig = refs[k - 1], data = refs[k];
  if (sig.step < kSignature || data.step >= kSignature || sig.plan != data.plan) return false;
  const algos::Step& st = stepOf(data);
  return bytesOf(data.plan, st.kind == algos::StepKind::Send ? st.src : st.dst) <= kInlineBytes;
}

// The signature slot whose message may carry receive k's data, or null.
inline const SignatureSlot* Run::inlineCarrier(const ChannelQueue& q, size_t k) const {
  if (!inlineCandidate(q.recvs, k)) return nullptr;
  const SignatureSlot& slot = q.signatures[q.recvs[k - 1].step - kSignature];
  return slot.announcement ? nullptr : &slot;
}

// Makes a signature ready to go: its operation number, and the plan's next send inside it
// when that is small and ready. True when the data went along (it then completes with the
// signature).
inline bool Run::packSignature(ChannelQueue& q, SignatureSlot& slot) {
  slot.out[1] &= kNumberMask;
  const size_t k = q.sendsPosted + 1;
  if (slot.announcement || !inlineCandidate(q.sends, k) || !ready(q.sends[k])) return false;
  const algos::Region& src = stepOf(q.sends[k]).src;
  const size_t bytes = bytesOf(q.sends[k].plan, src);
  smallCopy(&slot.out[2], address(q.sends[k].plan, src), bytes);
  slot.out[1] |= static_cast<uint64_t>(bytes) << kInlineShift;
  return true;
}

// A receive whose data came with its signature: what the transport would have done with it.
inline Status Run::takeInline(const SignatureSlot& slot, StepRef ref) {
  const algos::Step& st = stepOf(ref);
  const size_t bytes = bytesOf(ref.plan, st.dst);
  if (slot.inlineIn() != bytes)
    return internalError("%zu bytes came with the signature for a receive of %zu bytes",
                         slot.inlineIn(), bytes);
  const void* data = &slot.in[2];
  if (st.kind == algos::StepKind::RecvReduce) {
    const Plan& plan = plans_[ref.plan];
    ReduceSink(address(ref.plan, st.dst), address(ref.plan, st.src), state_[ref.plan].typeSize,
               plan.type, plan.op, st.incomingFirst)
        .consume(0, data, bytes);
  } else {
    smallCopy(address(ref.plan, st.dst), data, bytes);
  }
  return Status::Ok();
}

}  // namespace braid::exec
