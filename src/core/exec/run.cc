#include "core/exec/run.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/futex.h"
#include "base/log.h"
#include "base/small_copy.h"
#include "base/thread_local.h"
#include "core/comm/comm.h"
#include "core/comm/peer_loss.h"
#include "core/exec/codec_steps.h"
#include "core/exec/handshake.h"
#include "core/exec/signature.h"
#include "core/exec/tuning.h"
#include "kernels/reduce.h"

namespace braid::exec {

using algos::Buffer;
using algos::Region;
using algos::Step;
using algos::StepKind;

namespace {

using Clock = std::chrono::steady_clock;

// Timing a run costs two clock reads, a tenth of an 8-byte AllReduce between two processes
// (bench/results/ab_call_timing_latency_np2.md: 0.34 us a call untimed, 0.37 timed), so a run is
// timed only where that is noise: when one of its calls moves kTimedBytes or more per rank, or
// when its communicator adapts (which needs every call's end; its calls cross hosts, where a
// call takes tens of microseconds at least).
constexpr size_t kTimedBytes = size_t{64} << 10;

// The kernel's view of a connection (TCP_INFO: a system call per socket) is read at the end of
// a timed run at most this often.
constexpr int64_t kSampleEveryNs = 100'000'000;

size_t bytesOf(const Plan& plan) { return plan.count * kernels::typeSize(plan.type); }

// The communicator whose adaptation watches the plan (a host stream's twin runs the calls of
// the communicator it serves).
ncclComm* owner(const Plan& plan) { return plan.comm->twinOf ? plan.comm->twinOf : plan.comm; }

bool timed(std::span<const Plan> plans) {
  for (const Plan& plan : plans)
    if (bytesOf(plan) >= kTimedBytes || owner(plan)->adapt.enabled()) return true;
  return false;
}

// The adaptation's online model (core/adapt/adapt.h): a large host call that ran alone, its time
// against the cost model's price.
void observe(const Plan& plan, uint64_t ns) {
  const size_t bytes = bytesOf(plan);
  if (plan.onDevice || plan.estimateUs <= 0 || bytes < adapt::kMinBytes) return;
  adapt::Adaptation& adaptation = owner(plan)->adapt;
  if (adaptation.enabled())
    adaptation.observe(static_cast<double>(ns) * 1e-3, plan.estimateUs, bytes);
}

}  // namespace

Status Run::go(std::span<Plan> plans, const Options& options) {
  const bool timeIt = timed(plans);
  const Clock::time_point start = timeIt ? Clock::now() : Clock::time_point{};
  timing_ = timeIt;
  start_ = start;
  stallSince_ = {};
  plans_ = plans;
  holdWhile_ = options.holdWhile;
  background_ = options.background;
  localGated_.clear();
  gated_ = std::any_of(plans.begin(), plans.end(), [](const Plan& p) { return p.gate; });
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
  wakeups_.clear();
  if (!st.ok()) {
    replayId_ = 0;
    abandon(st.code());
  }
  uint64_t callNs = 0;  // timed runs only
  if (timeIt) {
    const Clock::time_point end = Clock::now();
    const auto ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
    callNs = ns;
    if (st.ok() && plans.size() == 1) observe(plans[0], ns);
    const int64_t endNs =
        std::chrono::duration_cast<std::chrono::nanoseconds>(end.time_since_epoch()).count();
    if (st.ok()) recordLinks(endNs);
    for (const Plan& plan : plans) {
      if (owner(plan)->adapt.enabled()) owner(plan)->adapt.ended(endNs);
      plan.comm->callStats.timed.add(1);
      plan.comm->callStats.nanoseconds.add(ns);
    }
  }
  for (const Plan& plan : plans)
    plan.comm->callStats.ended(plan.profilerTag, st.ok(), timeIt, callNs,
                               uint64_t(plan.count) * kernels::typeSize(plan.type));
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
    q.resetCounts();
    for (SignatureSlot& slot : q.signatures) {
      if (slot.sends)
        slot.out[1] = slot.announcement ? ++ch.announcementsSent : ++ch.signaturesSent;
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

void Run::complete(StepRef ref) {
  --pending_;
  if (ref.step >= kSignature) return;
  if (gated_)
    if (exec::StepGate* gate = plans_[ref.plan].gate) gate->finished(ref.step);
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
    if (fromAccum != (step.dst.buffer == Buffer::Accum))
      convertCopy(fromAccum, plan.type, src, dst, step.dst.count);
    else if (bytes <= 64)
      smallCopy(dst, src, bytes);  // (overlap-safe too)
    else
      std::memmove(dst, src, bytes);
  } else if (step.kind == StepKind::Reduce) {
    char* dst = address(ref.plan, step.dst);
    kernels::reduce(dst, dst, address(ref.plan, step.src), step.dst.count, plan.type, plan.op);
  } else if (step.kind == StepKind::FinishAvg) {
    kernels::finishAvg(address(ref.plan, step.dst), step.dst.count, dstType, plan.comm->nranks);
  } else {
    BRAID_TRY(runCodecStep(step, plan, address(ref.plan, step.src), address(ref.plan, step.dst),
                           ref.step));
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
  q.resetCounts();
  q.signatures.clear();
  return &q;
}

// A signature takes the next send along when that is its plan's, small and ready (*inlined).
// Both count what they post in the channel's telemetry (a send inside a signature travels as
// part of it, and is not a message of its own).
Status Run::postSend(ChannelQueue& q, StepRef ref, bool* inlined) {
  PeerChannel& ch = q.comm->channels[q.peer];
  if (ref.step >= kSignature) {
    SignatureSlot& slot = q.signatures[ref.step - kSignature];
    *inlined = packSignature(q, slot);
    BRAID_TRY(ch.endpoint->postSend(slot.out, kSignatureBytes));
    ch.stats.sent(kSignatureBytes);
    q.bytesSent += kSignatureBytes;
    return Status::Ok();
  }
  *inlined = false;
  const Step& st = stepOf(ref);
  const size_t bytes = bytesOf(ref.plan, st.src);
  BRAID_TRY(ch.endpoint->postSend(address(ref.plan, st.src), bytes));
  ch.stats.sent(bytes);
  q.bytesSent += bytes;
  return Status::Ok();
}

Status Run::postRecv(ChannelQueue& q, StepRef ref) {
  PeerChannel& ch = q.comm->channels[q.peer];
  if (ref.step >= kSignature) {
    BRAID_TRY(
        ch.endpoint->postRecv(q.signatures[ref.step - kSignature].in, kSignatureBytes, nullptr));
    ch.stats.received(kSignatureBytes);
    q.bytesReceived += kSignatureBytes;
    return Status::Ok();
  }
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
  const size_t bytes = bytesOf(ref.plan, st.dst);
  BRAID_TRY(ch.endpoint->postRecv(address(ref.plan, st.dst), bytes, sink, stream));
  ch.stats.received(bytes);
  q.bytesReceived += bytes;
  return Status::Ok();
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
  return st.kind == StepKind::Recv &&
         s.dependentsBegin[ref.step] == s.dependentsBegin[ref.step + 1];
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
  if (q.inFlight()) progress = ep->progress();
  const size_t sendsWere = q.sendsDone, recvsWere = q.recvsDone;
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
  if (timing_ && (q.sendsDone != sendsWere || q.recvsDone != recvsWere)) {
    q.lastDoneNs = sinceStart();
    if (q.firstInNs < 0 && q.recvsDone != recvsWere) q.firstInNs = q.lastDoneNs;
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

bool Run::onlySignaturesLeft(const ChannelQueue& q) const {
  if (q.sendsDone < q.sends.size()) return false;
  for (size_t k = q.recvsDone; k < q.recvs.size(); ++k)
    if (q.recvs[k].step < kSignature) return false;
  return true;
}

// When every endpoint this run waits on can be slept on, sleeps until one of them can move data
// (transport/wait.h), for at most kSleep, so that ranks that outnumber the cores leave them to
// the ranks that have work instead of taking turns spinning: in poll() at once on sockets alone;
// where doorbells are among them (shared memory, alone or beside sockets) only after the run
// yielded for kBellsAfter (a futex wake costs tens of microseconds here, more than most waits
// for a small message last), and then, since a ring is heard only once the flags are up, after
// one more look for work (the next round). Channels on which only signatures are left to
// arrive (peers this rank exchanges no data with: some collectives check signatures with every
// peer) do not wake it while data is awaited elsewhere; they are read when it wakes anyway, at
// most kSleep later (8 ranks on 2 cores over TCP, 16 B: rhd 15-20% faster). False when it did
// not sleep; the caller then yields.
bool Run::sleep() {
  for (int pass = 0; pass < 2 && wakeups_.method() == transport::WaitSet::Method::kNone; ++pass) {
    for (size_t i = 0; i < nQueues_; ++i) {
      const ChannelQueue& q = queues_[i];
      transport::Endpoint* ep = q.comm->channels[q.peer].endpoint.get();
      if (!ep->busy() || (pass == 0 && onlySignaturesLeft(q))) continue;
      ep->addWakeups(wakeups_);
    }
  }
  if (wakeups_.method() == transport::WaitSet::Method::kFds) {
    startStall();
    return wakeups_.sleep(kSleep);
  }
  const bool yielded = idle_.yieldedFor(kBellsAfter);
  if (!yielded || !wakeups_.arm()) wakeups_.clear();  // arm(): false without doorbells
  return false;
}

// Spins while data moves; when nothing moves, yields the core (ranks often outnumber cores), or
// sleeps until a socket is ready or a peer rings, where that is possible (sleep()), and checks
// for timeouts, aborts and failures now and then (idle.h says when).
Status Run::loop() {
  idle_.start(background_ ? 0 : spinRounds_);
  while (pending_ > 0) {
    bool moved = false;
    // A call of a higher priority class runs on this communicator: this run moves nothing,
    // neither posting nor progressing its messages, until it ends (it needs nothing from us).
    // Not a wait for peers: no timeout runs meanwhile.
    if (holdWhile_) {
      if (const uint32_t v = holdWhile_->load(std::memory_order_relaxed); v != 0) {
        futexWait(holdWhile_, v, kSleep);  // woken when the last call above ends
        for (Waiter& w : waiters_) w.restart();
        BRAID_TRY(periodicChecks());
        continue;
      }
    }
    if (gated_) releaseGated();
    while (!localReady_.empty()) {
      StepRef ref = localReady_.back();
      localReady_.pop_back();
      if (gated_ && !gateOpen(ref)) {
        localGated_.push_back(ref);
        continue;
      }
      Status st = runLocal(ref);
      if (!st.ok()) return failed(plans_[ref.plan], st);
      moved = true;
    }
    for (size_t i = 0; i < nQueues_; ++i) {
      ChannelQueue& q = queues_[i];
      Status st = pump(q, &moved);
      if (!st.ok()) {
        q.comm->channels[q.peer].stats.errors.add(1);
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
        return lostPeers(
            plan, st.withContext(strfmt("with %s", loss::describeRank(q.comm, q.peer).c_str())),
            {q.peer});
      }
    }
    if (moved) {
      if (wakeups_.armed()) wakeups_.clear();
      idle_.moved();
      if (stallSince_ != Clock::time_point{}) endStall();
      continue;
    }
    if (idle_.idleRound())  // a wait starts now: timeouts measure time without progress
      for (Waiter& w : waiters_) w.restart();
    bool slept = false;
    if (gated_ && gatesWaiting()) {  // memory still arriving: poll for it
      sched_yield();
    } else if (wakeups_.armed()) {  // armed last round, and nothing moved since
      startStall();
      slept = wakeups_.sleep(kSleep);
      if (!slept) sched_yield();
    } else if (!idle_.spinning()) {
      slept = sleep();
      if (!slept && !wakeups_.armed()) sched_yield();
    }
    if (idle_.checksDue(slept)) {
      startStall();
      BRAID_TRY(periodicChecks());
    }
  }
  return Status::Ok();
}

bool Run::gateOpen(StepRef ref) const {
  exec::StepGate* gate = plans_[ref.plan].gate;
  return !gate || gate->open(ref.step);
}

void Run::releaseGated() {
  std::erase_if(localGated_, [&](StepRef ref) {
    if (!gateOpen(ref)) return false;
    localReady_.push_back(ref);
    return true;
  });
}

bool Run::gatesWaiting() const {
  for (const Plan& plan : plans_)
    if (plan.gate && plan.gate->waiting()) return true;
  return false;
}

int64_t Run::sinceStart() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
}

// A timed run's stall is timed from where its wait first sleeps, or reaches its periodic checks
// (idle.h: after 256 idle rounds), not from its first idle round: a clock read in every short
// wait (yields on shared memory, thousands a call) slowed large calls measurably, where one
// before a sleep or at a check is lost in the system call or the checks beside it.
void Run::startStall() {
  if (timing_ && stallSince_ == Clock::time_point{}) stallSince_ = Clock::now();
}

void Run::endStall() {
  const auto ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - stallSince_).count());
  stallSince_ = {};
  for (size_t i = 0; i < nQueues_; ++i)
    if (queues_[i].inFlight()) queues_[i].stallNs += ns;
}

// A successful timed run's figures per connection: busy and stalled time, the lateness of each
// peer's first message behind the earliest peer's (where two peers or more sent to this rank),
// the online link model's sample, and now and then the kernel's view of the path.
void Run::recordLinks(int64_t endNs) {
  // Each communicator's earliest first arrival, and how many of its peers sent: one pass over
  // the queues (a run has few communicators, an AlltoAll as many queues as peers).
  firsts_.clear();
  for (size_t i = 0; i < nQueues_; ++i) {
    const ChannelQueue& q = queues_[i];
    if (q.firstInNs < 0) continue;
    auto it = std::find_if(firsts_.begin(), firsts_.end(),
                           [&](const FirstArrival& f) { return f.comm == q.comm; });
    if (it == firsts_.end()) {
      firsts_.push_back({q.comm, q.firstInNs, 1});
    } else {
      it->earliest = std::min(it->earliest, q.firstInNs);
      ++it->receiving;
    }
  }
  for (size_t i = 0; i < nQueues_; ++i) {
    const ChannelQueue& q = queues_[i];
    if (q.lastDoneNs < 0) continue;
    int64_t skew = -1;
    for (const FirstArrival& f : firsts_)
      if (f.comm == q.comm && f.receiving >= 2 && q.firstInNs >= 0) skew = q.firstInNs - f.earliest;
    PeerChannel& ch = q.comm->channels[q.peer];
    const algos::Topology& topo = q.comm->topology;
    const int level = topo.commonLevel(q.comm->rank, q.peer);
    const double modelUsPerMiB = static_cast<size_t>(level) < topo.link.size()
                                     ? topo.link[level].betaUsPerByte * 1048576.0
                                     : 0.0;
    const auto busy = static_cast<uint64_t>(q.lastDoneNs);
    ch.stats.record({busy, std::min(q.stallNs, busy), std::max(q.bytesSent, q.bytesReceived), skew},
                    level, modelUsPerMiB);
    if (endNs - ch.sampledAtNs >= kSampleEveryNs && ch.endpoint) {
      ch.sampledAtNs = endNs;
      transport::LinkSample sample;
      if (ch.endpoint->sample(&sample)) ch.stats.sampled(sample);
    }
  }
}

// Timeouts, aborts and revocation of every plan's communicator; now and then (IdlePolicy),
// failures other ranks announced.
Status Run::periodicChecks() {
  for (size_t p = 0; p < plans_.size(); ++p) {
    Status st = waiters_[p].check("waiting for peers");
    if (!st.ok() && waiters_[p].expired()) {
      std::vector<int> ranks;
      const std::string text = st.message() + awaited(plans_[p].comm, &ranks);
      return lostPeers(plans_[p], Status(st.code(), text), std::move(ranks));
    }
    if (!st.ok()) return failed(plans_[p], st);
    // Revoked is not failed: the communicator stays usable for shrink and split.
    if (plans_[p].comm->revoked.load(std::memory_order_relaxed))
      return invalidUsage("rank %d: %s: the communicator was revoked (ncclCommRevoke)",
                          plans_[p].comm->rank, describe(plans_[p]).c_str());
  }
  if (!idle_.check()) return Status::Ok();
  // Another rank gave up on its peers: this call cannot complete either.
  for (size_t p = 0; p < plans_.size(); ++p) {
    loss::Report report;
    if (!loss::heard(plans_[p].comm, &report)) continue;
    std::vector<int> ranks;
    const std::string own = awaited(plans_[p].comm, &ranks);
    // The culprits are found from the reporter too: the ranks this one awaits may all have
    // spoken while the silent one is only the reporter's peer.
    ranks.push_back(report.from);
    return lostPeers(plans_[p],
                     remoteError("rank %d gave up on its peers (%s)%s", report.from,
                                 report.text.c_str(), own.c_str()),
                     std::move(ranks),
                     strfmt("after %s gave up%s",
                            loss::describeRank(plans_[p].comm, report.from).c_str(), own.c_str()));
  }
  std::string text;
  for (size_t p = 0; p < plans_.size(); ++p)
    if (plans_[p].comm->checkMismatch && plans_[p].comm->heardFailure(&text))
      return failed(plans_[p], invalidUsage("%s", text.c_str()));
  return Status::Ok();
}

std::string Run::awaited(const ncclComm* comm, std::vector<int>* ranks) const {
  constexpr int kNamed = 8;  // a thousand-rank job's message names a few, then counts
  std::string out;
  int named = 0, more = 0;
  for (size_t i = 0; i < nQueues_; ++i) {
    const ChannelQueue& q = queues_[i];
    if (q.comm != comm) continue;
    std::string what;
    if (q.recvsDone < q.recvsPosted) {
      const StepRef ref = q.recvs[q.recvsDone];
      what = ref.step >= kSignature
                 ? std::string("its signature of this call")
                 : strfmt("message %zu of %zu from it (step %u, %s of %zu bytes)", q.recvsDone + 1,
                          q.recvs.size(), ref.step, algos::stepKindName(stepOf(ref).kind),
                          bytesOf(ref.plan, stepOf(ref).dst));
    } else if (q.sendsDone < q.sendsPosted) {
      const StepRef ref = q.sends[q.sendsDone];
      what = ref.step >= kSignature
                 ? std::string("it to take this rank's signature")
                 : strfmt("it to take message %zu of %zu (step %u, %zu bytes)", q.sendsDone + 1,
                          q.sends.size(), ref.step, bytesOf(ref.plan, stepOf(ref).src));
    } else {
      continue;
    }
    ranks->push_back(q.peer);
    if (named++ >= kNamed) {
      ++more;
      continue;
    }
    out += strfmt("%s %s: %s", named == 1 ? "; awaiting" : ";",
                  loss::describeRank(comm, q.peer).c_str(), what.c_str());
  }
  if (more > 0) out += strfmt("; and %d more ranks", more);
  return out;
}

Status Run::lostPeers(const Plan& plan, const Status& status, std::vector<int> awaited,
                      const std::string& diagnosis) {
  return failed(
      plan, loss::giveUp(plan.comm, std::move(awaited), progress(plan.comm), status, diagnosis));
}

loss::Progress Run::progress(const ncclComm* comm) const {
  // The peers this run talks to are told first.
  std::vector<bool> inRun(comm->channels.size(), false);
  for (size_t i = 0; i < nQueues_; ++i)
    if (queues_[i].comm == comm) inRun[static_cast<size_t>(queues_[i].peer)] = true;
  return loss::progress(comm, inRun);
}

Status Run::failed(const Plan& plan, const Status& status) {
  plan.comm->markFailed(status.code());
  return status.withContext(strfmt("rank %d: %s", plan.comm->rank, describe(plan).c_str()));
}

}  // namespace braid::exec

namespace braid {

std::string describe(const Plan& plan) { return describeSignature(signatureOf(plan)); }

// Flattened: the run's members (this file's, and handshake.h's) are inlined into one function, as
// GCC did when the run was one file-local class. Out of line an 8-byte AllReduce on one rank ran
// about 120 instructions a call more (`valgrind --tool=callgrind` on a loop of 100000 8-byte
// ncclAllReduce calls on one rank: 885 a call out of line, 766 as that class, 731 flattened).
[[gnu::flatten]] Status execute(std::span<Plan> plans, const exec::Options& options) {
  return perThread<exec::Run>().go(plans, options);
}

}  // namespace braid
