#include "core/exec/executor.h"

#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

#include "core/exec/codec_steps.h"
#include "core/comm/comm.h"
#include "transport/shm/doorbell.h"
#include "core/exec/queues.h"
#include "core/exec/tuning.h"
#include "base/log.h"
#include "core/exec/signature.h"
#include "base/small_copy.h"
#include "base/thread_local.h"
#include "kernels/reduce.h"

namespace braid {
namespace {

using namespace exec;
using algos::Buffer;
using algos::Region;
using algos::Step;
using algos::StepKind;

// One execution. A thread keeps its Run between calls so that the vectors below keep their
// capacity: a small collective then allocates nothing.
class Run {
 public:
  Status go(std::span<Plan> plans);

 private:
  struct PlanState {
    std::vector<uint32_t> unmet;
    std::vector<ReduceSink> sinks;
    std::vector<char> scratchOwner;
    std::vector<char> packed;   // compressed messages (Buffer::Packed)
    std::vector<float> accum;   // fp32 sums (Buffer::Accum)
    size_t typeSize = 0;
    bool largeOutput = false;  // the call's own data exceeds kStreamOutputBytes
    char* scratch = nullptr;
    bool done = false;  // finished during set-up (a send to self)
  };

  Status setUp();
  bool canReplay() const;
  void replay();
  Status loop();

  char* address(uint32_t plan, const Region& r) const {
    const Plan& p = plans_[plan];
    const PlanState& s = state_[plan];
    switch (r.buffer) {
      case Buffer::Send: return const_cast<char*>(static_cast<const char*>(p.sendbuff)) + r.offset * s.typeSize;
      case Buffer::Recv: return static_cast<char*>(p.recvbuff) + r.offset * s.typeSize;
      case Buffer::Scratch: return s.scratch + r.offset * s.typeSize;
      case Buffer::Packed: return const_cast<char*>(s.packed.data()) + r.offset;
      case Buffer::Accum: return reinterpret_cast<char*>(const_cast<float*>(s.accum.data()) + r.offset);
    }
    return nullptr;
  }
  size_t bytesOf(uint32_t plan, const Region& r) const {
    return r.count * algos::unitBytes(r.buffer, state_[plan].typeSize);
  }
  const Step& stepOf(StepRef ref) const { return plans_[ref.plan].schedule->steps[ref.step]; }
  bool ready(StepRef ref) const {
    return ref.step >= kSignature || state_[ref.plan].unmet[ref.step] == 0;
  }
  bool readyToSend(const ChannelQueue& q, size_t k) const;
  ChannelQueue* queueFor(ncclComm* comm, int peer);
  Status addSignatures(uint32_t plan);
  Status announceReceives();
  void addSignature(ChannelQueue& q, uint32_t plan, bool sends, bool receives, bool announcement = false);
  Status checkSignature(const ChannelQueue& q, StepRef ref) const;
  bool inlineCandidate(const std::vector<StepRef>& refs, size_t k) const;
  const SignatureSlot* inlineCarrier(const ChannelQueue& q, size_t k) const;
  Status postSend(ChannelQueue& q, StepRef ref, bool* inlined);
  Status postRecv(ChannelQueue& q, StepRef ref);
  bool streamed(StepRef ref) const;
  Status takeInline(const SignatureSlot& slot, StepRef ref);
  bool postRecvs(ChannelQueue& q, Status* st);
  void scaleInput(Plan& plan);
  void snapshotOverlappingSends();
  Status sendToSelf();

  void complete(StepRef ref);
  Status runLocal(StepRef ref);
  Status pump(ChannelQueue& q, bool* moved);
  bool sleepUntilReady();
  bool onlySignaturesLeft(const ChannelQueue& q) const;
  bool raiseBells();
  void lowerBells();
  Status failed(const Plan& plan, const Status& status);
  void abandon(ncclResult_t code);

  std::span<Plan> plans_;
  std::vector<PlanState> state_;    // [0, plans_.size()) in use
  std::vector<ChannelQueue> queues_;  // [0, nQueues_) in use
  size_t nQueues_ = 0;
  std::vector<StepRef> localReady_;
  std::vector<pollfd> pollFds_;
  std::vector<BellWait> bells_;  // raised for a sleep; lowered once anything moves
  std::vector<Waiter> waiters_;
  uint32_t spinRounds_ = 0;
  size_t pending_ = 0;
  bool flushSignatures_ = false;  // waited kFlushSignaturesAfter: held-back signatures go

  // A kept plan (Plan::keptId) that ran alone and succeeded as this Run's last execution: its
  // queues are still set up, and a repeat only resets them (replay()). 0: none.
  uint64_t replayId_ = 0;
  std::vector<uint32_t> replayUnmet_;    // the plan's dependency counts before it starts
  std::vector<StepRef> replayLocal_;     // its local steps ready at the start
  size_t replayPending_ = 0;
};

void Run::complete(StepRef ref) {
  --pending_;
  if (ref.step >= kSignature) return;
  const algos::Schedule& s = *plans_[ref.plan].schedule;
  auto& unmet = state_[ref.plan].unmet;
  for (uint32_t i = s.dependentsBegin[ref.step]; i < s.dependentsBegin[ref.step + 1]; ++i) {
    uint32_t d = s.dependents[i];
    if (--unmet[d] == 0 && s.steps[d].peer < 0) localReady_.push_back({ref.plan, d});
  }
}

Status Run::runLocal(StepRef ref) {
  const Step& step = stepOf(ref);
  const Plan& plan = plans_[ref.plan];
  // Accum holds fp32 whatever the operation's type.
  const ncclDataType_t dstType = step.dst.buffer == Buffer::Accum ? ncclFloat32 : plan.type;
  if (step.kind == StepKind::Copy) {
    const bool fromAccum = step.src.buffer == Buffer::Accum;
    const size_t bytes = bytesOf(ref.plan, step.dst);
    char* dst = address(ref.plan, step.dst);
    const char* src = address(ref.plan, step.src);
    if (fromAccum != (step.dst.buffer == Buffer::Accum)) convertCopy(fromAccum, plan.type, src, dst, step.dst.count);
    else if (bytes <= 64) smallCopy(dst, src, bytes);  // (overlap-safe too)
    else std::memmove(dst, src, bytes);
  } else if (step.kind == StepKind::Reduce) {
    char* dst = address(ref.plan, step.dst);
    kernels::reduce(dst, dst, address(ref.plan, step.src), step.dst.count, plan.type, plan.op);
  } else if (step.kind == StepKind::FinishAvg) {
    kernels::finishAvg(address(ref.plan, step.dst), step.dst.count, dstType, plan.comm->nranks);
  } else {
    BRAID_TRY(runCodecStep(step, plan, address(ref.plan, step.src), address(ref.plan, step.dst), ref.step));
  }
  complete(ref);
  return Status::Ok();
}

// The queue of (comm, peer), set up on first use; null when there is no connection.
ChannelQueue* Run::queueFor(ncclComm* comm, int peer) {
  for (size_t i = 0; i < nQueues_; ++i)
    if (queues_[i].comm == comm && queues_[i].peer == peer) return &queues_[i];
  if (peer < 0 || peer >= comm->nranks || !comm->channels[peer].endpoint) return nullptr;
  if (nQueues_ == queues_.size()) queues_.emplace_back();
  ChannelQueue& q = queues_[nQueues_++];
  q.comm = comm;
  q.peer = peer;
  q.sends.clear();
  q.recvs.clear();
  q.sendsPosted = q.sendsDone = q.recvsPosted = q.recvsDone = 0;
  q.signatures.clear();
  return &q;
}

// A collective checks its signature with other ranks, so that each of them sees a mismatch
// (a rank that only talks to ranks that agree with it would otherwise finish happily).
// Broadcast, Reduce, Gather and Scatter check with every rank: a rank there may finish without
// anything from the rank whose call differs. A call whose every output needs every input
// (algos::needsEveryInput) checks only with the peers it exchanges data with, in both
// directions: the rank whose call differs, or the first rank on each side of a group of ranks
// that differ from the rest, is then checked by a peer that stops, and tells every rank
// (broadcastFailure); a rank no such peer checks waits for data that passes one and hears it.
// A schedule with no peers checks with every rank. Point-to-point operations check only
// their peer. (A ring of 8: 16 signatures a call instead of 56; on the emulated cluster that
// was most of a small call's time, bench/results/netcluster_small_messages.md.)
Status Run::addSignatures(uint32_t plan) {
  const Plan& p = plans_[plan];
  const bool p2p = p.coll == algos::Collective::Send || p.coll == algos::Collective::Recv;
  auto check = [&](int peer) {
    ChannelQueue* q = queueFor(p.comm, peer);
    if (!q) return failed(p, internalError("no connection to rank %d", peer));
    addSignature(*q, plan, p.coll != algos::Collective::Recv, p.coll != algos::Collective::Send);
    return Status::Ok();
  };
  if (algos::needsEveryInput(p.coll) && !p.schedule->peers.empty()) {
    for (int peer : p.schedule->peers) BRAID_TRY(check(peer));
    return Status::Ok();
  }
  for (int peer = 0; peer < p.comm->nranks; ++peer)
    if (peer != p.comm->rank && (!p2p || peer == p.root)) BRAID_TRY(check(peer));
  return Status::Ok();
}

// Every Recv's announcement to its sender, and every Send's wait for one, ahead of everything
// else of this execution on their channels.
Status Run::announceReceives() {
  for (uint32_t p = 0; p < plans_.size(); ++p) {
    const Plan& plan = plans_[p];
    const bool send = plan.coll == algos::Collective::Send, recv = plan.coll == algos::Collective::Recv;
    if (!plan.comm->checkMismatch || state_[p].done || !(send || recv)) continue;
    ChannelQueue* q = queueFor(plan.comm, plan.root);
    if (!q) return failed(plan, internalError("no connection to rank %d", plan.root));
    addSignature(*q, p, recv, send, true);
  }
  return Status::Ok();
}

void Run::addSignature(ChannelQueue& q, uint32_t plan, bool sends, bool receives, bool announcement) {
  const Plan& p = plans_[plan];
  PeerChannel& ch = p.comm->channels[q.peer];
  SignatureSlot slot{};
  slot.plan = plan;
  slot.sends = sends;
  slot.receives = receives;
  slot.announcement = announcement;
  StepRef ref{plan, kSignature + static_cast<uint32_t>(q.signatures.size())};
  if (sends) {
    slot.out[0] = signatureOf(p);
    slot.out[1] = announcement ? ++ch.announcementsSent : ++ch.signaturesSent;
    q.sends.push_back(ref);
    ++pending_;
  }
  if (receives) {
    slot.expected[0] = expectedSignature(p, p.comm->rank);
    slot.expected[1] = announcement ? ++ch.announcementsReceived : ++ch.signaturesReceived;
    q.recvs.push_back(ref);
    ++pending_;
  }
  q.signatures.push_back(slot);
}

Status Run::checkSignature(const ChannelQueue& q, StepRef ref) const {
  const SignatureSlot& s = q.signatures[ref.step - kSignature];
  const int me = plans_[ref.plan].comm->rank;
  const Plan& p = plans_[ref.plan];
  if (s.in[0] != s.expected[0])
    return invalidUsage("rank %d called %s where rank %d called %s", q.peer,
                        describeSignature(s.in[0]).c_str(), me, describe(p).c_str());
  if ((s.in[1] & kNumberMask) != s.expected[1])
    return invalidUsage("rank %d is at its operation #%llu with rank %d, which is at #%llu: one of "
                        "them skipped or added a call", q.peer,
                        static_cast<unsigned long long>(s.in[1] & kNumberMask), me,
                        static_cast<unsigned long long>(s.expected[1]));
  return Status::Ok();
}

// Whether refs[k] (a send or receive queue) is a small data message right after its own plan's
// signature: the sender's and the receiver's queues agree on it, being the same call's.
bool Run::inlineCandidate(const std::vector<StepRef>& refs, size_t k) const {
  if (k == 0 || k >= refs.size()) return false;
  const StepRef sig = refs[k - 1], data = refs[k];
  if (sig.step < kSignature || data.step >= kSignature || sig.plan != data.plan) return false;
  const Step& st = stepOf(data);
  return bytesOf(data.plan, st.kind == StepKind::Send ? st.src : st.dst) <= kInlineBytes;
}

// The signature slot whose message may carry receive k's data, or null.
const SignatureSlot* Run::inlineCarrier(const ChannelQueue& q, size_t k) const {
  if (!inlineCandidate(q.recvs, k)) return nullptr;
  const SignatureSlot& slot = q.signatures[q.recvs[k - 1].step - kSignature];
  return slot.announcement ? nullptr : &slot;
}

// A signature takes the next send along when that is its plan's, small and ready (*inlined).
Status Run::postSend(ChannelQueue& q, StepRef ref, bool* inlined) {
  transport::Endpoint* ep = q.comm->channels[q.peer].endpoint.get();
  *inlined = false;
  if (ref.step >= kSignature) {
    SignatureSlot& slot = q.signatures[ref.step - kSignature];
    slot.out[1] &= kNumberMask;
    const size_t k = q.sendsPosted + 1;
    if (!slot.announcement && inlineCandidate(q.sends, k) && ready(q.sends[k])) {
      const Region& src = stepOf(q.sends[k]).src;
      const size_t bytes = bytesOf(q.sends[k].plan, src);
      smallCopy(&slot.out[2], address(q.sends[k].plan, src), bytes);
      slot.out[1] |= static_cast<uint64_t>(bytes) << kInlineShift;
      *inlined = true;
    }
    return ep->postSend(slot.out, kSignatureBytes);
  }
  const Step& st = stepOf(ref);
  return ep->postSend(address(ref.plan, st.src), bytesOf(ref.plan, st.src));
}

// A receive whose data came with its signature: what the transport would have done with it.
Status Run::takeInline(const SignatureSlot& slot, StepRef ref) {
  const Step& st = stepOf(ref);
  const size_t bytes = bytesOf(ref.plan, st.dst);
  if (slot.inlineIn() != bytes)
    return internalError("%zu bytes came with the signature for a receive of %zu bytes",
                         slot.inlineIn(), bytes);
  const void* data = &slot.in[2];
  if (st.kind == StepKind::RecvReduce) {
    const Plan& plan = plans_[ref.plan];
    ReduceSink(address(ref.plan, st.dst), address(ref.plan, st.src), state_[ref.plan].typeSize, plan.type,
               plan.op, st.incomingFirst)
        .consume(0, data, bytes);
  } else {
    smallCopy(address(ref.plan, st.dst), data, bytes);
  }
  return Status::Ok();
}

Status Run::postRecv(ChannelQueue& q, StepRef ref) {
  transport::Endpoint* ep = q.comm->channels[q.peer].endpoint.get();
  if (ref.step >= kSignature)
    return ep->postRecv(q.signatures[ref.step - kSignature].in, kSignatureBytes, nullptr);
  const Step& st = stepOf(ref);
  const bool stream = streamed(ref);
  transport::RecvSink* sink = nullptr;
  if (st.kind == StepKind::RecvReduce) {
    const Plan& plan = plans_[ref.plan];
    PlanState& ps = state_[ref.plan];
    ps.sinks.emplace_back(address(ref.plan, st.dst), address(ref.plan, st.src), ps.typeSize,
                          plan.type, plan.op, st.incomingFirst, stream);
    sink = &ps.sinks.back();
  }
  return ep->postRecv(address(ref.plan, st.dst), bytesOf(ref.plan, st.dst), sink, stream);
}

// Whether a receive of a call too large for the caches writes around the cache: a Recv into the
// output that no later step reads (the transport's copy; 2 ranks, 64-256 MiB: +5%), or, from
// kStreamReduceBytes, a RecvReduce into the output from another buffer (the sink's reduce), whose
// destination lines are not cached and come back, if at all, only after a step larger than the
// caches (in place they were just read, and writing them back costs less).
bool Run::streamed(StepRef ref) const {
  const Step& st = stepOf(ref);
  const algos::Schedule& s = *plans_[ref.plan].schedule;
  if (!state_[ref.plan].largeOutput || st.dst.buffer != Buffer::Recv) return false;
  if (st.kind == StepKind::RecvReduce)
    return st.src.buffer != Buffer::Recv &&
           plans_[ref.plan].count * state_[ref.plan].typeSize >= kStreamReduceBytes;
  return st.kind == StepKind::Recv && s.dependentsBegin[ref.step] == s.dependentsBegin[ref.step + 1];
}

// Posts what is ready on one channel (in order), moves data, and retires completions.
// A collective's signature to a peer its plan sends data to later waits for that first data
// message, so that both leave together (one system call on TCP, where each message costs the
// kernel's network path on both ends; with ranks sharing cores that CPU is the time). Mismatch
// detection does not depend on it: a rank's signature goes at once to every peer it sends no
// data to, and all held-back signatures go after kFlushSignaturesAfter of waiting, so ranks
// stuck on each other's mismatched calls still see every signature.
bool Run::readyToSend(const ChannelQueue& q, size_t k) const {
  const StepRef ref = q.sends[k];
  if (ref.step < kSignature) return ready(ref);
  if (flushSignatures_ || k + 1 >= q.sends.size()) return true;
  const StepRef next = q.sends[k + 1];
  if (next.plan != ref.plan || next.step >= kSignature) return true;
  return ready(next);
}

Status Run::pump(ChannelQueue& q, bool* moved) {
  PeerChannel& ch = q.comm->channels[q.peer];
  transport::Endpoint* ep = ch.endpoint.get();
  while (q.sendsPosted < q.sends.size() && readyToSend(q, q.sendsPosted)) {
    bool inlined;
    BRAID_TRY(postSend(q, q.sends[q.sendsPosted], &inlined));
    q.sendSeq[q.sendsPosted++] = ++ch.sendsPosted;
    // The data went inside the signature: it completes when the signature does.
    if (inlined) q.sendSeq[q.sendsPosted++] = ch.sendsPosted;
    *moved = true;
  }
  Status st;
  const size_t posted = q.recvsPosted;
  if (!postRecvs(q, &st)) return st;
  if (q.recvsPosted != posted) *moved = true;
  Status progress;
  if (q.sendsDone < q.sendsPosted || q.recvsDone < q.recvsPosted) progress = ep->progress();
  while (q.sendsDone < q.sendsPosted && ep->sendsCompleted() >= q.sendSeq[q.sendsDone]) {
    complete(q.sends[q.sendsDone++]);
    *moved = true;
  }
  // Received signatures are checked before anything else is believed: after a mismatch, a
  // transport error (say, a size mismatch on the next message) is only a consequence. A
  // signature that carried data lets the receive behind it be taken at once (postRecvs).
  for (bool again = true; again;) {
    again = false;
    while (q.recvsDone < q.recvsPosted && ep->recvsCompleted() >= q.recvSeq[q.recvsDone]) {
      StepRef ref = q.recvs[q.recvsDone++];
      if (ref.step >= kSignature) {
        BRAID_TRY(checkSignature(q, ref));
        again = q.recvsPosted == q.recvsDone && q.recvsPosted < q.recvs.size();
      }
      complete(ref);
      *moved = true;
    }
    if (again && !postRecvs(q, &st)) return st;
  }
  return progress;
}

// Posts the receives that are ready, in order. One that may come inside the signature before it
// waits for that signature; if data came with it, it is taken from there (completing with the
// signature) instead of posted. False (and *st) on failure.
bool Run::postRecvs(ChannelQueue& q, Status* st) {
  PeerChannel& ch = q.comm->channels[q.peer];
  while (q.recvsPosted < q.recvs.size() && ready(q.recvs[q.recvsPosted])) {
    const size_t k = q.recvsPosted;
    if (q.recvInline[k]) {
      if (q.recvsDone < k) break;  // its signature has not arrived
      const SignatureSlot& carrier = q.signatures[q.recvs[k - 1].step - kSignature];
      if (carrier.inlineIn() > 0) {
        *st = takeInline(carrier, q.recvs[k]);
        if (!st->ok()) return false;
        q.recvSeq[q.recvsPosted++] = q.recvSeq[k - 1];
        continue;
      }
    }
    *st = postRecv(q, q.recvs[k]);
    if (!st->ok()) return false;
    q.recvSeq[q.recvsPosted++] = ++ch.recvsPosted;
  }
  return true;
}

// PreMulSum: the input, times the scalar, into a buffer of the plan's own.
void Run::scaleInput(Plan& plan) {
  plan.privateInput.resize(plan.inputCount * kernels::typeSize(plan.type));
  const void* scalar = plan.scalarPtr ? plan.scalarPtr : &plan.scalarBits;
  kernels::scale(plan.privateInput.data(), plan.sendbuff, plan.inputCount, plan.type, scalar);
  plan.sendbuff = plan.privateInput.data();
}

// Operations of a group run concurrently, so a send whose buffer a receive of the same group
// overwrites (in-place send/recv, as nccl-tests' sendrecv does) sends a snapshot instead.
void Run::snapshotOverlappingSends() {
  auto range = [](const Plan& p, const void* base) {
    const char* b = static_cast<const char*>(base);
    return std::make_pair(b, b + p.count * kernels::typeSize(p.type));
  };
  for (Plan& send : plans_) {
    if (send.coll != algos::Collective::Send) continue;
    auto [s0, s1] = range(send, send.sendbuff);
    for (const Plan& recv : plans_) {
      if (recv.coll != algos::Collective::Recv || recv.comm != send.comm) continue;
      auto [r0, r1] = range(recv, recv.recvbuff);
      if (s0 < r1 && r0 < s1) {
        send.privateInput.assign(s0, s1);
        send.sendbuff = send.privateInput.data();
        break;
      }
    }
  }
}

// NCCL lets a rank send to itself (a ring of pairs on one rank, an all-to-all made of Send/Recv
// pairs): there is no connection to itself, so the k-th self Send of a communicator is copied
// into its k-th self Recv here. Sends were snapshotted already where a Recv overwrites them.
Status Run::sendToSelf() {
  // Other ranks of the group may be waiting on this one: they hear of the mismatch as of any
  // other (the loop below never runs to tell them).
  auto mismatch = [&](const Plan& plan, const Status& st) {
    if (plan.comm->checkMismatch)
      plan.comm->broadcastFailure(strfmt("rank %d: %s", plan.comm->rank, st.message().c_str()));
    return failed(plan, st);
  };
  for (uint32_t r = 0; r < plans_.size(); ++r) {
    Plan& recv = plans_[r];
    if (recv.coll != algos::Collective::Recv || recv.root != recv.comm->rank) continue;
    uint32_t s = 0;
    for (; s < plans_.size(); ++s) {
      const Plan& send = plans_[s];
      if (send.coll == algos::Collective::Send && send.comm == recv.comm &&
          send.root == send.comm->rank && !state_[s].done)
        break;
    }
    if (s == plans_.size())
      return mismatch(recv, invalidUsage("a receive from this rank itself needs a matching ncclSend "
                                       "to itself in the same group"));
    const Plan& send = plans_[s];
    if (send.count != recv.count || send.type != recv.type)
      return mismatch(recv, invalidUsage("%s from itself meets %s", describe(recv).c_str(),
                                         describe(send).c_str()));
    std::memmove(recv.recvbuff, send.sendbuff, recv.count * kernels::typeSize(recv.type));
    state_[r].done = state_[s].done = true;
  }
  for (uint32_t s = 0; s < plans_.size(); ++s) {
    const Plan& send = plans_[s];
    if (send.coll == algos::Collective::Send && send.root == send.comm->rank && !state_[s].done)
      return mismatch(send, invalidUsage("a send to this rank itself needs a matching ncclRecv from "
                                       "itself in the same group"));
  }
  return Status::Ok();
}

Status Run::failed(const Plan& plan, const Status& status) {
  plan.comm->markFailed(status.code());
  return status.withContext(strfmt("rank %d: %s", plan.comm->rank, describe(plan).c_str()));
}

Status Run::go(std::span<Plan> plans) {
  plans_ = plans;
  flushSignatures_ = false;
  Status st;
  if (canReplay()) {
    replay();
  } else {
    replayId_ = 0;
    pending_ = 0;
    nQueues_ = 0;
    localReady_.clear();
    st = setUp();
    if (st.ok() && plans.size() == 1 && plans[0].keptId) {
      replayId_ = plans[0].keptId;
      replayUnmet_ = state_[0].unmet;
      replayLocal_ = localReady_;
      replayPending_ = pending_;
    }
  }
  if (st.ok()) st = loop();
  lowerBells();
  if (!st.ok()) {
    replayId_ = 0;
    abandon(st.code());
  }
  plans_ = {};
  return st;
}

// The same kept plan again, right after its last run here succeeded: the queues, signature
// slots and buffers set up for it are still in place (nothing else ran on this thread since).
bool Run::canReplay() const {
  return replayId_ != 0 && plans_.size() == 1 && plans_[0].keptId == replayId_;
}

// What setUp() would have done for that plan, from what it left: dependency counts, the local
// steps ready at the start, and fresh numbers for the signatures (each call is a new operation
// on its pairs of ranks).
void Run::replay() {
  const Plan& plan = plans_[0];
  PlanState& ps = state_[0];
  std::copy(replayUnmet_.begin(), replayUnmet_.end(), ps.unmet.begin());
  ps.sinks.clear();
  if (plan.schedule->accumCount > 0) ps.accum.assign(plan.schedule->accumCount, 0.0f);
  localReady_.assign(replayLocal_.begin(), replayLocal_.end());
  pending_ = replayPending_;
  for (size_t i = 0; i < nQueues_; ++i) {
    ChannelQueue& q = queues_[i];
    PeerChannel& ch = q.comm->channels[q.peer];
    q.sendsPosted = q.sendsDone = q.recvsPosted = q.recvsDone = 0;
    for (SignatureSlot& slot : q.signatures) {
      if (slot.sends) slot.out[1] = slot.announcement ? ++ch.announcementsSent : ++ch.signaturesSent;
      if (slot.receives)
        slot.expected[1] = slot.announcement ? ++ch.announcementsReceived : ++ch.signaturesReceived;
    }
  }
  for (Waiter& w : waiters_) w.restart();
}

// A failed run leaves operations posted on endpoints, naming the caller's buffers, which the
// caller may free as soon as we return; a peer thread must not go on reading them (loopback
// copies straight out of a sender's buffer). So the endpoints that still hold operations are
// closed, and their communicators are failed: nothing can be matched on them any more.
void Run::abandon(ncclResult_t code) {
  for (size_t i = 0; i < nQueues_; ++i) {
    ChannelQueue& q = queues_[i];
    q.comm->markFailed(code);
    if (q.sendsDone < q.sendsPosted || q.recvsDone < q.recvsPosted)
      q.comm->channels[q.peer].endpoint.reset();
  }
}

Status Run::setUp() {
  if (state_.size() < plans_.size()) state_.resize(plans_.size());
  for (uint32_t p = 0; p < plans_.size(); ++p) state_[p].done = false;
  if (plans_.size() > 1) snapshotOverlappingSends();
  BRAID_TRY(sendToSelf());
  BRAID_TRY(announceReceives());
  for (uint32_t p = 0; p < plans_.size(); ++p) {
    Plan& plan = plans_[p];
    if (state_[p].done) continue;
    if (plan.preMul) scaleInput(plan);
    const algos::Schedule& s = *plan.schedule;
    PlanState& ps = state_[p];
    ps.typeSize = kernels::typeSize(plan.type);
    ps.largeOutput = plan.count * ps.typeSize >= kStreamOutputBytes;
    ps.unmet.resize(s.steps.size());
    ps.sinks.clear();
    if (s.scratchCount > 0) {
      if (ps.scratchOwner.size() < s.scratchCount * ps.typeSize)
        ps.scratchOwner.resize(s.scratchCount * ps.typeSize);
      ps.scratch = ps.scratchOwner.data();
    }
    if (ps.packed.size() < s.packedBytes) ps.packed.resize(s.packedBytes);
    if (s.accumCount > 0) ps.accum.assign(s.accumCount, 0.0f);
    if (plan.comm->checkMismatch) BRAID_TRY(addSignatures(p));
    size_t reduces = 0;
    for (uint32_t i = 0; i < s.steps.size(); ++i) {
      const Step& st = s.steps[i];
      ps.unmet[i] = st.depCount;
      reduces += st.kind == StepKind::RecvReduce;
      if (st.peer < 0) {
        if (st.depCount == 0) localReady_.push_back({p, i});
        continue;
      }
      ChannelQueue* q = queueFor(plan.comm, st.peer);
      if (!q) return failed(plan, internalError("no connection to rank %d", st.peer));
      (st.kind == StepKind::Send ? q->sends : q->recvs).push_back({p, i});
    }
    ps.sinks.reserve(reduces);  // sinks are referenced by endpoints: never reallocate
    pending_ += s.steps.size();
  }
  for (size_t i = 0; i < nQueues_; ++i) {
    ChannelQueue& q = queues_[i];
    q.sendSeq.resize(q.sends.size());
    q.recvSeq.resize(q.recvs.size());
    q.recvInline.resize(q.recvs.size());
    for (size_t k = 0; k < q.recvs.size(); ++k) q.recvInline[k] = inlineCarrier(q, k) != nullptr;
  }
  waiters_.clear();
  spinRounds_ = ~0u;
  for (const Plan& plan : plans_) {
    waiters_.emplace_back(plan.comm->timeoutMs, &plan.comm->abortFlag);
    spinRounds_ = std::min(spinRounds_, plan.comm->spinRounds);
  }
  return Status::Ok();
}

// Instead of yielding: when every endpoint this run waits on can be waited on (TCP), sleeps in
// poll() until one of them can move data, for at most kSleep. Ranks that outnumber the cores
// then leave them to the ranks that have work, instead of taking turns spinning. False (and no
// sleep) when some endpoint cannot be waited on.
bool Run::sleepUntilReady() {
  // Channels on which only signatures are left to arrive (peers this rank exchanges no data
  // with: every collective checks signatures with every peer) do not wake it while data is
  // awaited elsewhere; they are read when it wakes anyway, at most kSleep later (8 ranks on 2
  // cores over TCP, 16 B: rhd 15-20% faster).
  size_t n = 0;
  for (int pass = 0; pass < 2 && n == 0; ++pass) {
    for (size_t i = 0; i < nQueues_; ++i) {
      const ChannelQueue& q = queues_[i];
      const transport::Endpoint* ep = q.comm->channels[q.peer].endpoint.get();
      if (!ep->busy() || (pass == 0 && onlySignaturesLeft(q))) continue;
      constexpr int kRoom = 128;  // two per stream, 64 streams at most
      if (pollFds_.size() < n + kRoom) pollFds_.resize(n + kRoom);
      const int got = ep->waitFds(pollFds_.data() + n, kRoom);
      if (got < 0) return false;
      n += static_cast<size_t>(got);
    }
  }
  if (n == 0) return false;
  ::poll(pollFds_.data(), n, static_cast<int>(kSleep.count() / 1000));
  return true;
}

bool Run::onlySignaturesLeft(const ChannelQueue& q) const {
  if (q.sendsDone < q.sends.size()) return false;
  for (size_t k = q.recvsDone; k < q.recvs.size(); ++k)
    if (q.recvs[k].step < kSignature) return false;
  return true;
}

// The same for shared memory: raises this rank's flag on the doorbell of every endpoint it waits
// on. The loop then looks for work once more and, finding none, sleeps until a peer rings one.
// False (flags lowered) when some endpoint has no doorbell.
bool Run::raiseBells() {
  if (!canWaitForBells()) return false;
  for (size_t i = 0; i < nQueues_; ++i) {
    transport::Endpoint* ep = queues_[i].comm->channels[queues_[i].peer].endpoint.get();
    if (!ep->busy()) continue;
    Doorbell* d = ep->doorbell();
    if (!d) {
      lowerBells();
      return false;
    }
    bells_.push_back(raiseFlag(d));
  }
  if (bells_.empty()) return false;
  fenceRingers();
  return true;
}

void Run::lowerBells() {
  for (const BellWait& b : bells_) lowerFlag(b.doorbell);
  bells_.clear();
}

// Spins while data moves; when nothing moves, yields the core (ranks often outnumber cores), or
// sleeps until a socket is ready or a peer rings, where that is possible, and checks for
// timeouts and aborts now and then.
Status Run::loop() {
  uint32_t idle = 0;
  Waiter::Clock::time_point idleSince{};  // when this wait's first periodic check came
  bool idleTimed = false;
  Waiter::Clock::time_point yieldingSince{};
  Waiter::Clock::time_point lastListen{};  // set when the first long wait starts
  while (pending_ > 0) {
    bool moved = false;
    while (!localReady_.empty()) {
      StepRef ref = localReady_.back();
      localReady_.pop_back();
      Status st = runLocal(ref);
      if (!st.ok()) return failed(plans_[ref.plan], st);
      moved = true;
    }
    for (size_t i = 0; i < nQueues_; ++i) {
      ChannelQueue& q = queues_[i];
      Status st = pump(q, &moved);
      if (!st.ok()) {
        const Plan& plan = plans_[q.sends.empty() ? q.recvs[0].plan : q.sends[0].plan];
        // Only a signature check fails with InvalidUsage here: mismatched calls. Ranks that do
        // not talk to the culprit would wait forever, so everyone is told.
        if (st.code() == ncclInvalidUsage) {
          plan.comm->broadcastFailure(st.message());
          return failed(plan, st);
        }
        // A peer that found mismatched calls closes its connections after telling everyone:
        // what it said is the real error, not the closed connection.
        std::string text;
        if (plan.comm->checkMismatch && plan.comm->heardFailure(&text))
          return failed(plan, invalidUsage("%s", text.c_str()));
        return failed(plan, st.withContext(strfmt("with rank %d", q.peer)));
      }
    }
    if (moved) {
      if (!bells_.empty()) lowerBells();
      idle = 0;
      continue;
    }
    if (idle++ == 0) {  // a wait starts now: timeouts measure time without progress
      for (Waiter& w : waiters_) w.restart();
      idleTimed = false;
    }
    bool slept = false;
    if (!bells_.empty()) {  // raised last round, and nothing moved since
      slept = waitForBells(bells_, kSleep);
      lowerBells();
      if (!slept) sched_yield();
    } else if (idle > spinRounds_) {
      slept = sleepUntilReady();
      if (!slept) {
        // Doorbells only after a while: a futex wake costs tens of microseconds here, more
        // than most waits for a small message last.
        const auto now = Waiter::Clock::now();
        if (idle == spinRounds_ + 1) yieldingSince = now;
        if (now - yieldingSince < kBellsAfter || !raiseBells()) sched_yield();
      }
    }
    if ((idle & 255) == 0 || slept) {
      for (size_t p = 0; p < plans_.size(); ++p) {
        Status st = waiters_[p].check("waiting for peers");
        if (!st.ok()) return failed(plans_[p], st);
        // Revoked is not failed: the communicator stays usable for shrink and split.
        if (plans_[p].comm->revoked.load(std::memory_order_relaxed))
          return invalidUsage("rank %d: %s: the communicator was revoked (ncclCommRevoke)",
                              plans_[p].comm->rank, describe(plans_[p]).c_str());
      }
      // Listening for another rank's failure costs system calls: every few milliseconds of
      // waiting, measured by the clock (idle rounds last anything from nanoseconds to a
      // scheduler slice, depending on how many ranks share the cores).
      auto now = Waiter::Clock::now();
      // Timed from the wait's first check (within 256 idle rounds or one sleep), so that
      // short waits read no clock.
      if (!idleTimed) {
        idleSince = now;
        idleTimed = true;
      } else if (!flushSignatures_ && now - idleSince >= kFlushSignaturesAfter) {
        flushSignatures_ = true;
      }
      if (lastListen == Waiter::Clock::time_point{}) lastListen = now;
      if (now - lastListen >= std::chrono::milliseconds(2)) {
        lastListen = now;
        std::string text;
        for (size_t p = 0; p < plans_.size(); ++p)
          if (plans_[p].comm->checkMismatch && plans_[p].comm->heardFailure(&text))
            return failed(plans_[p], invalidUsage("%s", text.c_str()));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

std::string describe(const Plan& plan) { return describeSignature(signatureOf(plan)); }

Status execute(std::span<Plan> plans) {
  return perThread<Run>().go(plans);
}

}  // namespace braid
