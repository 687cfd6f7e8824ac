#include "core/device/ipc_path.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/log.h"
#include "base/strfmt.h"
#include "core/bootstrap/bootstrap.h"
#include "core/comm/comm.h"
#include "core/variables.h"
#include "kernels/reduce.h"

namespace braid::device {

namespace {

// What a rank publishes of its mailbox at init.
struct Entry {
  uint8_t ok = 0;  // made and exported
  int32_t device = -1;
  uint64_t processHash = 0;
  uint64_t slotBytes = 0;
  void* address = nullptr;  // in its own process
  MemHandle handle;
};

}  // namespace

IpcPath::IpcPath(ncclComm* comm, std::shared_ptr<StreamOps> ops, size_t slotBytes)
    : ops_(std::move(ops)),
      slotBytes_(slotBytes),
      rank_(comm->rank),
      nranks_(comm->nranks),
      peers_(size_t(comm->nranks)) {}

size_t IpcPath::headerBytes() const { return (size_t(2 * nranks_) * 64 + 4095) / 4096 * 4096; }

char* IpcPath::slot(char* base, int from, uint64_t n) const {
  return base + headerBytes() + (size_t(from) * kSlots + n % kSlots) * slotBytes_;
}

Status IpcPath::join(ncclComm* comm, std::shared_ptr<StreamOps> ops, size_t slotBytes,
                     std::unique_ptr<IpcPath>* out) {
  out->reset();
  // Whole elements of every type in every slot, and slots apart by a cache line at least.
  slotBytes = std::max<size_t>(256, (slotBytes + 255) / 256 * 256);
  std::unique_ptr<IpcPath> path(new IpcPath(comm, std::move(ops), slotBytes));
  StreamOps& o = *path->ops_;
  const int rank = comm->rank, n = comm->nranks;
  const int caller = o.makeCurrent();

  std::vector<Entry> all(static_cast<size_t>(n));
  Entry& mine = all[size_t(rank)];
  const size_t bytes = path->mailboxBytes();
  void* mailbox = nullptr;
  Status st = o.allocShared(bytes, &mailbox);
  if (st.ok()) {
    path->mailbox_ = static_cast<char*>(mailbox);
    st = o.exportMemory(mailbox, &mine.handle);
  }
  mine.ok = st.ok();
  mine.device = comm->cudaDev;
  mine.processHash = comm->peers[size_t(rank)].processHash;
  mine.slotBytes = slotBytes;
  mine.address = mailbox;
  Status gathered = comm->bootstrap->allGather(all.data(), sizeof(Entry));
  if (!gathered.ok()) {
    o.restoreCurrent(caller);
    path->close(false);  // nothing was mapped: the mailbox can go
    return gathered;     // and init fails
  }

  // Map every peer's mailbox: the address itself within this process, the IPC handle across.
  for (int q = 0; q < n && st.ok(); ++q) {
    const Entry& e = all[size_t(q)];
    if (!e.ok)
      st = Status(ncclSystemError, strfmt("rank %d could not make its mailbox", q));
    else if (e.slotBytes != slotBytes)
      st =
          Status(ncclInvalidUsage,
                 strfmt("rank %d has %s=%llu, this rank %zu", q, env::kBraidDeviceIpcSlotBytes.name,
                        static_cast<unsigned long long>(e.slotBytes), slotBytes));
    if (!st.ok() || q == rank) continue;
    Peer& p = path->peers_[size_t(q)];
    if (e.processHash == mine.processHash) {
      p.base = static_cast<char*>(e.address);
      if (e.device != mine.device) st = o.enablePeerAccess(e.device);
    } else {
      void* mapped = nullptr;
      st = o.openMemory(e.handle, &mapped);
      p.base = static_cast<char*>(mapped);
      p.opened = st.ok();
    }
  }
  // Everyone takes the path or no one does.
  std::vector<uint8_t> ready(static_cast<size_t>(n), 0);
  ready[size_t(rank)] = st.ok();
  gathered = comm->bootstrap->allGather(ready.data(), 1);
  o.restoreCurrent(caller);
  if (!gathered.ok()) {
    path->close(false);  // no call ran: nothing to wait for, and nothing writes here yet
    return gathered;     // and init fails
  }
  const auto missing = std::find(ready.begin(), ready.end(), uint8_t(0));
  if (missing != ready.end()) {
    if (!st.ok())
      BRAID_WARN("rank %d: device collectives through host staging, not IPC: %s", rank,
                 st.message().c_str());
    else
      BRAID_WARN(
          "rank %d: device collectives through host staging, not IPC: rank %d could not "
          "map the mailboxes",
          rank, int(missing - ready.begin()));
    path->close(false);
    return Status::Ok();
  }
  BRAID_INFO(kInit,
             "rank %d: device collectives over CUDA IPC among %d ranks (%zu bytes of "
             "mailbox, %u slots of %zu bytes per peer)",
             rank, n, bytes, kSlots, slotBytes);
  *out = std::move(path);
  return Status::Ok();
}

IpcPath::~IpcPath() { close(true); }

void IpcPath::close(bool aborted, int64_t timeoutMs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  closed_ = true;
  if (plansRun_)
    BRAID_INFO(kProxy,
               "rank %d: %llu device calls over IPC, %llu pieces sent, %llu of them after "
               "waiting for a slot",
               rank_, static_cast<unsigned long long>(plansRun_),
               static_cast<unsigned long long>(piecesSent_),
               static_cast<unsigned long long>(creditWaits_));
  const int caller = ops_->makeCurrent();
  std::vector<cudaStream_t> streams;
  if (localStream_) streams.push_back(localStream_);
  for (Peer& p : peers_)
    for (cudaStream_t s : {p.sendStream, p.recvStream})
      if (s) streams.push_back(s);
  if (!aborted) {
    // Peers write into this mailbox until they consumed what this rank sent them (their
    // "consumed" words here): wait for that, and for every stream, before it goes.
    for (int q = 0; q < nranks_; ++q) {
      if (peers_[size_t(q)].sent == 0) continue;
      if (!localStream_ && streamFor(&localStream_).ok()) streams.push_back(localStream_);
      if (localStream_ && !ops_->waitValue(localStream_, word(mailbox_, size_t(nranks_ + q)),
                                           uint32_t(peers_[size_t(q)].sent))
                               .ok())
        BRAID_WARN("rank %d: could not wait for rank %d to consume its last pieces", rank_, q);
    }
    aborted = !drained(streams, timeoutMs);
    if (aborted) {
      BRAID_WARN(
          "rank %d: its device streams still wait after %lld ms (%s): a peer has not consumed "
          "what this rank sent, or not sent what it waits for; they are released as by an "
          "abort",
          rank_, static_cast<long long>(timeoutMs), env::kBraidTimeoutMs.name);
    } else {
      for (Peer& p : peers_)
        if (p.opened) ops_->closeMemory(p.base);
      if (mailbox_) ops_->freeShared(mailbox_);
    }
  }
  if (aborted) {
    releaseWaits(&streams);
    // The streams it released may still copy into the peers' mailboxes, and peers may still
    // write into this one: the mappings and the mailbox stay.
  }
  for (cudaStream_t s : streams) ops_->destroyStream(s);
  ops_->restoreCurrent(caller);
}

// Whether every stream ran what is queued on it: waited for however long that takes where
// `timeoutMs` is 0, else polled until `timeoutMs` passed.
bool IpcPath::drained(const std::vector<cudaStream_t>& streams, int64_t timeoutMs) {
  std::vector<Event> ends;
  for (cudaStream_t s : streams) {
    Event e = nullptr;
    if (ops_->record(s, &e).ok())
      ends.push_back(e);
    else if (e)
      ops_->destroy(e);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  bool all = true;
  for (Event e : ends) {
    bool done = timeoutMs <= 0;
    if (done) {
      ops_->synchronize(e);
    } else {
      while (ops_->query(e, &done).ok() && !done && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    all = all && done;
    ops_->destroy(e);
  }
  return all;
}

// Every wait of this rank's streams is on a word of its own mailbox, for at most the pieces it
// queued to receive from a peer (delivered) or to send to it (consumed). Setting those words to
// those counts, on a stream that waits for nothing else, lets every queued wait pass, so the
// streams run to their ends and the callers' streams behind them go on; the data of calls cut
// short is undefined, as after NCCL's abort. Nothing waits for it: an abort must not hang on a
// peer, and a watchdog aborting one communicator after another must not hang on the next one's.
void IpcPath::releaseWaits(std::vector<cudaStream_t>* streams) {
  if (!mailbox_) return;
  cudaStream_t s = nullptr;
  Status st;
  for (int q = 0; q < nranks_ && st.ok(); ++q) {
    const Peer& p = peers_[size_t(q)];
    if (p.received == 0 && p.sent == 0) continue;
    if (!s) {
      st = ops_->makeStream(&s);
      if (!st.ok()) break;
      streams->push_back(s);
    }
    st = ops_->writeValue(s, word(mailbox_, size_t(q)), uint32_t(p.received));
    if (st.ok()) st = ops_->writeValue(s, word(mailbox_, size_t(nranks_ + q)), uint32_t(p.sent));
  }
  if (!st.ok())
    BRAID_WARN(
        "rank %d: could not release the device streams of its calls cut short by the "
        "abort (%s); streams still waiting for peers may never run on",
        rank_, st.message().c_str());
}

bool IpcPath::runs(const Plan& plan) const {
  if (!plan.onDevice || plan.preMul || plan.codec || plan.hostStream || plan.gate) return false;
  for (const algos::Step& st : plan.schedule->steps) {
    switch (st.kind) {
      case algos::StepKind::Send:
      case algos::StepKind::Recv:
      case algos::StepKind::RecvReduce:
        if (st.peer == rank_) return false;  // the executor's local copy between two plans
        break;
      case algos::StepKind::Copy:
      case algos::StepKind::Reduce:
      case algos::StepKind::FinishAvg: break;
      default: return false;
    }
  }
  return ops_->hasKernels(plan.type, plan.op);
}

Status IpcPath::streamFor(cudaStream_t* s) {
  if (!*s) BRAID_TRY(ops_->makeStream(s));
  return Status::Ok();
}

Status IpcPath::start(std::vector<Plan>& plans, std::vector<Queued>* queued) {
  queued->clear();
  queued->reserve(plans.size());
  // A plan not queued whole leaves its communicator out of step with its peers, which queued
  // theirs: its later calls would pair the wrong pieces, so the communicator fails (its calls
  // are refused, naming the error, until it is aborted, which releases the streams' waits).
  auto outOfStep = [&](size_t from, const Status& st) {
    for (size_t i = from; i < plans.size(); ++i) {
      BRAID_WARN("rank %d: a device call could not be queued whole (%s): the communicator fails",
                 plans[i].comm->rank, st.message().c_str());
      plans[i].comm->markFailed(st.code());
    }
    return st;
  };
  // Every plan's start on its caller's stream (and its scratch, in that stream's order) ...
  for (Plan& plan : plans) {
    IpcPath* path = plan.comm->deviceIpc;
    Queued q{path, plan.stream, nullptr, nullptr, {}, {}};
    const int caller = path->ops_->makeCurrent();
    Status st;
    const size_t scratch = plan.schedule->scratchCount * kernels::typeSize(plan.type);
    if (scratch) st = path->ops_->allocAsync(scratch, plan.stream, &q.scratch);
    if (st.ok()) st = path->ops_->record(plan.stream, &q.started);
    path->ops_->restoreCurrent(caller);
    queued->push_back(std::move(q));
    if (!st.ok()) return outOfStep(0, st);
  }
  // ... then every plan's steps, which wait for it.
  for (size_t i = 0; i < plans.size(); ++i) {
    Queued& q = (*queued)[i];
    const int caller = q.path->ops_->makeCurrent();
    Status st;
    {
      std::lock_guard<std::mutex> lock(q.path->mu_);
      st = q.path->enqueue(plans[i], &q);
    }
    q.path->ops_->restoreCurrent(caller);
    plans[i].comm->callStats.ended(plans[i].profilerTag, st.ok(), false, 0,
                                   uint64_t(plans[i].count) * kernels::typeSize(plans[i].type));
    if (!st.ok()) return outOfStep(i, st);
  }
  return Status::Ok();
}

Status IpcPath::finish(std::vector<Queued>& queued) {
  Status first;
  for (Queued& q : queued) {
    StreamOps& o = *q.path->ops_;
    const int caller = o.makeCurrent();
    for (Event e : q.ends) {
      Status st = o.waitEvent(q.stream, e);
      if (first.ok() && !st.ok()) first = st;
      o.destroy(e);
    }
    if (q.scratch) {
      Status st = o.freeAsync(q.scratch, q.stream);
      if (first.ok() && !st.ok()) first = st;
    }
    if (q.started) o.destroy(q.started);
    o.restoreCurrent(caller);
  }
  return first;
}

// The plan's steps in program order, each on its stream: sends to a peer on that peer's send
// stream, receives from it on its receive stream, local steps on the local stream. A step waits
// for a dependency on another stream through an event recorded after it; one on its own stream
// precedes it there already.
Status IpcPath::enqueue(const Plan& plan, Queued* q) {
  const algos::Schedule& s = *plan.schedule;
  const size_t unit = kernels::typeSize(plan.type);
  auto at = [&](const algos::Region& r) {
    char* base = r.buffer == algos::Buffer::Send
                     ? const_cast<char*>(static_cast<const char*>(plan.sendbuff))
                 : r.buffer == algos::Buffer::Recv ? static_cast<char*>(plan.recvbuff)
                                                   : static_cast<char*>(q->scratch);
    return base + r.offset * unit;
  };
  // Which stream a step runs on: 2 * peer (+1 for receives), or -1 for the local stream.
  auto lane = [&](const algos::Step& st) {
    if (st.kind == algos::StepKind::Send) return 2 * st.peer;
    if (st.kind == algos::StepKind::Recv || st.kind == algos::StepKind::RecvReduce)
      return 2 * st.peer + 1;
    return -1;
  };
  std::vector<Event> events(s.steps.size(), nullptr);
  Status st;
  for (uint32_t i = 0; i < s.steps.size() && st.ok(); ++i) {
    const algos::Step& step = s.steps[i];
    const int l = lane(step);
    cudaStream_t* slotOf = l < 0     ? &localStream_
                           : (l & 1) ? &peers_[size_t(step.peer)].recvStream
                                     : &peers_[size_t(step.peer)].sendStream;
    st = streamFor(slotOf);
    if (!st.ok()) break;
    cudaStream_t stream = *slotOf;
    if (std::find(q->used.begin(), q->used.end(), stream) == q->used.end()) {
      q->used.push_back(stream);
      st = ops_->waitEvent(stream, q->started);
    }
    for (uint32_t k = step.depBegin; k < step.depBegin + step.depCount && st.ok(); ++k) {
      const uint32_t d = s.deps[k];
      if (lane(s.steps[d]) != l) st = ops_->waitEvent(stream, events[d]);
    }
    if (!st.ok()) break;
    switch (step.kind) {
      case algos::StepKind::Send:
        st = sendPieces(step.peer, at(step.src), step.src.count * unit, stream);
        break;
      case algos::StepKind::Recv:
      case algos::StepKind::RecvReduce:
        st = recvPieces(step, at(step.dst), at(step.src), unit, plan, stream);
        break;
      case algos::StepKind::Copy:
        if (at(step.src) != at(step.dst))
          st = ops_->deviceCopy(at(step.dst), at(step.src), step.dst.count * unit, stream);
        break;
      case algos::StepKind::Reduce:
        st = ops_->deviceReduce(at(step.dst), at(step.dst), at(step.src), step.dst.count, plan.type,
                                plan.op, stream);
        break;
      default:
        st = ops_->deviceFinishAvg(at(step.dst), step.dst.count, plan.type, nranks_, stream);
        break;
    }
    bool needed = false;
    for (uint32_t k = s.dependentsBegin[i]; k < s.dependentsBegin[i + 1] && !needed; ++k)
      needed = lane(s.steps[s.dependents[k]]) != l;
    if (st.ok() && needed) st = ops_->record(stream, &events[i]);
  }
  for (cudaStream_t stream : q->used) {
    Event e = nullptr;
    if (st.ok()) st = ops_->record(stream, &e);
    if (e && st.ok()) {
      q->ends.push_back(e);
    } else if (e) {
      ops_->destroy(e);  // not recorded: nothing to wait for
    }
  }
  for (Event e : events)
    if (e) ops_->destroy(e);
  ++plansRun_;
  return st;
}

// Each piece into the receiver's next slot once the receiver consumed the piece that slot held
// (this mailbox's consumed[peer]), then the receiver's delivered[rank] word. A message of no
// bytes is one empty piece, as on the receiving side.
Status IpcPath::sendPieces(int peer, const char* src, size_t bytes, cudaStream_t stream) {
  Peer& p = peers_[size_t(peer)];
  size_t off = 0;
  do {
    const size_t len = std::min(slotBytes_, bytes - off);
    const uint64_t n = p.sent;
    if (n >= kSlots) {
      BRAID_TRY(ops_->waitValue(stream, word(mailbox_, size_t(nranks_ + peer)),
                                uint32_t(n - kSlots + 1)));
      ++creditWaits_;
    }
    if (len) BRAID_TRY(ops_->deviceCopy(slot(p.base, rank_, n), src + off, len, stream));
    BRAID_TRY(ops_->writeValue(stream, word(p.base, size_t(rank_)), uint32_t(n + 1)));
    ++p.sent;
    ++piecesSent_;
    off += len;
  } while (off < bytes);
  return Status::Ok();
}

// Each piece once the sender delivered it (this mailbox's delivered[peer]), copied or reduced out
// of its slot into place, then the sender's consumed[rank] word, which frees the slot.
Status IpcPath::recvPieces(const algos::Step& st, char* dst, const char* src, size_t unit,
                           const Plan& plan, cudaStream_t stream) {
  Peer& p = peers_[size_t(st.peer)];
  const size_t bytes = st.dst.count * unit;
  size_t off = 0;
  do {
    const size_t len = std::min(slotBytes_, bytes - off);
    const uint64_t n = p.received;
    BRAID_TRY(ops_->waitValue(stream, word(mailbox_, size_t(st.peer)), uint32_t(n + 1)));
    const char* in = slot(mailbox_, st.peer, n);
    if (len && st.kind == algos::StepKind::Recv) {
      BRAID_TRY(ops_->deviceCopy(dst + off, in, len, stream));
    } else if (len) {
      const char* local = src + off;
      BRAID_TRY(ops_->deviceReduce(dst + off, st.incomingFirst ? in : local,
                                   st.incomingFirst ? local : in, len / unit, plan.type, plan.op,
                                   stream));
    }
    BRAID_TRY(ops_->writeValue(stream, word(p.base, size_t(nranks_ + rank_)), uint32_t(n + 1)));
    ++p.received;
    off += len;
  } while (off < bytes);
  return Status::Ok();
}

}  // namespace braid::device
