#include "core/device/stream_proxy.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

#include "base/env.h"
#include "base/log.h"
#include "base/waiter.h"
#include "core/comm/comm.h"
#include "core/device/piece_gate.h"
#include "core/variables.h"
#include "kernels/reduce.h"

namespace braid::device {
namespace {

constexpr size_t kMinBlock = 64 << 10;
// Pinned staging one communicator keeps before new calls wait for earlier ones to finish on their
// streams (as NCCL's calls block when its queue is full): two 1 GiB out-of-place AllReduces.
constexpr size_t kStagingBudget = size_t(4) << 30;

size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

// How long the proxy polls an event before it sleeps between polls (waitEvents).
constexpr auto kSpin = std::chrono::microseconds(200);

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A byte count from the environment; a negative one is said and replaced by the default.
size_t bytesSetting(const env::Var& var) {
  int64_t v = env::getInt(var);
  if (v < 0) {
    BRAID_WARN("%s=%lld is negative; using the default %s", var.name, static_cast<long long>(v),
               var.defaultValue);
    v = std::strtoll(var.defaultValue, nullptr, 0);
  }
  return size_t(v);
}

}  // namespace

// ---- Reclaimer ----------------------------------------------------------------------------

// Staging and runtimes that outlive their proxies. Freeing pinned memory (a block, or a runtime's
// flag) waits for the whole device, where another communicator's stream may be held until that
// communicator's proxy runs; and an aborted communicator must not wait for its streams' copies
// back. So a proxy that goes parks its blocks here, with the events that guard those still in use
// and its StreamOps (which frees them). New pools draw on parked blocks whose events completed;
// the rest is freed once no proxy is left in the process, when no Braid wait holds any stream.
class Reclaimer {
 public:
  static Reclaimer& get() {
    static Reclaimer* r = new Reclaimer;  // never destroyed: what is parked at exit goes with it
    return *r;
  }

  void enter() {
    std::lock_guard<std::mutex> lock(mu_);
    ++live_;
  }
  // `kept`: blocks that no event guards (StagingPool::keep), never handed out again; freeing them
  // waits for the device, so for their copies too.
  void leave(std::shared_ptr<StreamOps> ops, std::vector<std::pair<char*, size_t>> blocks,
             std::vector<std::pair<char*, size_t>> kept, std::vector<Event> events) {
    std::lock_guard<std::mutex> lock(mu_);
    --live_;
    parked_.push_back({ops, std::move(events), std::move(blocks), true});
    if (!kept.empty()) parked_.push_back({std::move(ops), {}, std::move(kept), false});
    collectLocked();
  }
  // A parked block of at least `want` bytes whose copies are done, or false.
  bool take(size_t want, char** block, size_t* size) {
    std::lock_guard<std::mutex> lock(mu_);
    collectLocked();
    for (Parked& p : parked_) {
      if (!p.reusable || !p.events.empty()) continue;
      for (auto it = p.blocks.begin(); it != p.blocks.end(); ++it) {
        if (it->second < want) continue;
        *block = it->first;
        *size = it->second;
        p.blocks.erase(it);
        return true;
      }
    }
    return false;
  }

 private:
  struct Parked {
    std::shared_ptr<StreamOps> ops;
    std::vector<Event> events;  // until all completed, the blocks may still be read
    std::vector<std::pair<char*, size_t>> blocks;
    bool reusable;
  };

  void collectLocked() {
    for (Parked& p : parked_) {
      std::erase_if(p.events, [&](Event ev) {
        bool done = false;
        if (!p.ops->query(ev, &done).ok() || !done) return false;
        p.ops->destroy(ev);
        return true;
      });
    }
    if (live_ > 0) return;
    std::erase_if(parked_, [](Parked& p) {
      if (!p.events.empty()) return false;
      for (auto [ptr, bytes] : p.blocks) p.ops->freeStaging(ptr);
      return true;  // the runtime goes with its entry (with CUDA: its flag is freed)
    });
  }

  std::mutex mu_;
  int live_ = 0;
  std::vector<Parked> parked_;
};

// ---- StagingPool ----------------------------------------------------------------------------

size_t StagingPool::pinnedAfter(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  return pinned_ + std::bit_ceil(std::max(bytes, kMinBlock));
}

Status StagingPool::acquire(size_t bytes, bool mayAllocate, char** block, size_t* size) {
  const size_t want = std::bit_ceil(std::max(bytes, kMinBlock));
  *block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.lower_bound(want);
    if (it != free_.end()) {
      *size = it->first;
      *block = it->second;
      free_.erase(it);
      return Status::Ok();
    }
  }
  void* p = nullptr;
  if (Reclaimer::get().take(want, block, size)) {
    p = *block;
  } else {
    if (!mayAllocate) return Status::Ok();
    const auto t0 = std::chrono::steady_clock::now();
    BRAID_TRY(ops_.allocStaging(want, &p));
    const double took = secondsSince(t0);
    *size = want;
    BRAID_INFO(kAlloc, "device staging: %zu bytes of pinned host memory (%.1f ms)", want,
               took * 1e3);
    std::lock_guard<std::mutex> lock(mu_);
    ++allocs_;
    allocBytes_ += want;
    allocSeconds_ += took;
  }
  std::lock_guard<std::mutex> lock(mu_);
  all_.emplace_back(static_cast<char*>(p), *size);
  pinned_ += *size;
  *block = static_cast<char*>(p);
  return Status::Ok();
}

size_t StagingPool::pinned() {
  std::lock_guard<std::mutex> lock(mu_);
  return pinned_;
}

void StagingPool::allocations(uint64_t* count, uint64_t* bytes, double* seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  *count = allocs_;
  *bytes = allocBytes_;
  *seconds = allocSeconds_;
}

void StagingPool::release(char* block, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.emplace(size, block);
}

void StagingPool::keep(char* block) {
  std::lock_guard<std::mutex> lock(mu_);
  kept_.insert(block);
}

void StagingPool::takeAll(std::vector<std::pair<char*, size_t>>* reusable,
                          std::vector<std::pair<char*, size_t>>* kept) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& b : all_) (kept_.count(b.first) ? kept : reusable)->push_back(b);
  all_.clear();
  kept_.clear();
  free_.clear();
  pinned_ = 0;
}

// ---- Proxy ----------------------------------------------------------------------------------

Status Proxy::create(ncclComm* comm, std::unique_ptr<StreamOps> ops, Proxy** out) {
  std::unique_ptr<Proxy> proxy(new Proxy(comm, std::move(ops)));
  proxy->streamCopyMax_ = bytesSetting(env::kBraidDeviceStreamCopyBytes);
  proxy->pieceBytes_ = bytesSetting(env::kBraidDevicePieceBytes);
  __atomic_store_n(proxy->ops_->flag(), 0u, __ATOMIC_RELEASE);
  Reclaimer::get().enter();
  *out = proxy.release();
  return Status::Ok();
}

Proxy::~Proxy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (ownStream_) ops_->destroyStream(ownStream_);
  if (totals_.batches > 0 || onStream_.load() > 0) {
    uint64_t allocs, allocBytes;
    double allocSeconds;
    pool_.allocations(&allocs, &allocBytes, &allocSeconds);
    const double n = double(std::max<uint64_t>(totals_.batches, 1));
    BRAID_INFO(kProxy,
               "rank %d: device progress thread: %llu batches (%llu staged by the thread); per "
               "batch %.1f us awaiting the streams, %.1f us running, %.1f us copying; %llu "
               "pinned staging allocations, %llu bytes, %.1f ms; %llu calls as device kernels "
               "on their streams",
               comm_->rank, static_cast<unsigned long long>(totals_.batches),
               static_cast<unsigned long long>(totals_.byProxy), totals_.waitSeconds / n * 1e6,
               totals_.runSeconds / n * 1e6, totals_.copySeconds / n * 1e6,
               static_cast<unsigned long long>(allocs), static_cast<unsigned long long>(allocBytes),
               allocSeconds * 1e3, static_cast<unsigned long long>(onStream_.load()));
  }
  // Every stream was released (the thread wrote the flag for each batch). A destroy waits for the
  // copies back, as ncclCommDestroy waits for the communicator's work; after an abort, batches
  // whose copies have not finished are parked with their events instead.
  reap(!comm_->abortFlag.load());
  std::vector<Event> pending;
  for (auto& batch : retired_) {
    pending.insert(pending.end(), batch->inputsReady.begin(), batch->inputsReady.end());
    pending.insert(pending.end(), batch->outputsDone.begin(), batch->outputsDone.end());
  }
  retired_.clear();
  std::vector<std::pair<char*, size_t>> reusable, kept;
  pool_.takeAll(&reusable, &kept);
  Reclaimer::get().leave(ops_, std::move(reusable), std::move(kept), std::move(pending));
}

// Staging for one plan. Where sendbuff and recvbuff overlap (in place), one staging region keeps
// their distance, so the schedule built for the call's aliasing addresses the staging the same
// way. A buffer of pinned host memory is used where it is: the proxy starts once the stream has
// reached the call (inputs ready), and the stream goes on once the proxy is done, as with staging.
// (Copying it into staging would not do: a copy between two host buffers returns only once the
// stream has reached it.)
Proxy::Layout Proxy::layout(const Plan& plan) {
  Layout l;
  const auto send = reinterpret_cast<uintptr_t>(plan.sendbuff);
  const auto recv = reinterpret_cast<uintptr_t>(plan.recvbuff);
  const size_t sb = plan.sendBytes, rb = plan.recvBytes;
  l.overlap = sb && rb && send < recv + rb && recv < send + sb;
  l.deviceScalar = plan.preMul && plan.scalarPtr && ops_->isDeviceMemory(plan.scalarPtr);
  // Overlapping buffers are one allocation, so both are pinned or neither is.
  l.stageSend = sb && !plan.sendPinned;
  l.stageRecv = rb && !plan.recvPinned;
  if (l.overlap && l.stageSend) {
    l.lo = std::min(send, recv);
    l.bytes = align64(std::max(send + sb, recv + rb) - l.lo);
  } else if (!l.overlap) {
    l.bytes = (l.stageSend ? align64(sb) : 0) + (l.stageRecv ? align64(rb) : 0);
  }
  l.scalarAt = l.bytes;
  if (l.deviceScalar) l.bytes += 64;
  return l;
}

void Proxy::place(Plan& plan, const Layout& l, char* block, std::vector<Copy>* in,
                  std::vector<Copy>* out) {
  const auto send = reinterpret_cast<uintptr_t>(plan.sendbuff);
  const auto recv = reinterpret_cast<uintptr_t>(plan.recvbuff);
  const size_t sb = plan.sendBytes, rb = plan.recvBytes;
  // Pinned buffers as they are; staged ones below; unused ones null.
  char* hostSend =
      sb && !l.stageSend ? const_cast<char*>(static_cast<const char*>(plan.sendbuff)) : nullptr;
  char* hostRecv = rb && !l.stageRecv ? static_cast<char*>(plan.recvbuff) : nullptr;
  if (l.overlap && l.stageSend) {
    hostSend = block + (send - l.lo);
    hostRecv = block + (recv - l.lo);
  } else if (!l.overlap) {
    if (l.stageSend) hostSend = block;
    if (l.stageRecv) hostRecv = block + (l.stageSend ? align64(sb) : 0);
  }
  // A buffer unused on this rank keeps only its aliasing (Broadcast off the root, in place).
  if (!sb && send == recv) hostSend = hostRecv;
  if (!rb && recv == send) hostRecv = hostSend;

  if (l.stageSend) in->push_back({hostSend, plan.sendbuff, sb, plan.stream});
  if (l.deviceScalar) {
    in->push_back({block + l.scalarAt, plan.scalarPtr, kernels::typeSize(plan.type), plan.stream});
    plan.scalarPtr = block + l.scalarAt;
  }
  if (l.stageRecv) out->push_back({plan.recvbuff, hostRecv, rb, plan.stream});
  plan.sendbuff = hostSend;
  plan.recvbuff = hostRecv;
}

Status Proxy::acquire(size_t bytes, Block* block) {
  for (;;) {
    bool idle;
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle = queue_.empty() && retired_.empty();
    }
    // Nothing in flight to wait for: allocate even past the budget (one call may need more).
    const bool mayAllocate = idle || pool_.pinnedAfter(bytes) <= kStagingBudget;
    BRAID_TRY(pool_.acquire(bytes, mayAllocate, &block->ptr, &block->size));
    if (block->ptr) return Status::Ok();
    // Wait for the oldest batch to finish on its streams, then take its staging back.
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (retired_.empty() && !queue_.empty()) {
        if (comm_->abortFlag.load()) return invalidUsage("communicator aborted");
        ran_.wait_for(lock, std::chrono::milliseconds(10));
      }
    }
    reap(true);
  }
}

// A schedule of local steps only (no peer: a communicator of one rank) over device buffers needs
// neither staging nor the progress thread: its copies, reductions and Avg's division run as
// device kernels on the call's stream, in stream order like any kernel. Not for pinned host
// buffers, PreMulSum (the scaled input needs a buffer of its own), compression, or a type and op
// the build has no kernels for: those take the staged path.
bool Proxy::onStreamOnly(const Plan& plan, StreamOps& ops) {
  const algos::Schedule& s = *plan.schedule;
  if (!plan.onDevice || plan.sendPinned || plan.recvPinned || plan.preMul || plan.codec ||
      plan.hostStream)
    return false;
  for (const algos::Step& st : s.steps) {
    if (st.peer >= 0) return false;
    if (st.kind != algos::StepKind::Copy && st.kind != algos::StepKind::Reduce &&
        st.kind != algos::StepKind::FinishAvg)
      return false;
    // (Scratch a schedule asks for but never touches needs no buffer.)
    for (const algos::Region& r : {st.src, st.dst})
      if (r.buffer != algos::Buffer::Send && r.buffer != algos::Buffer::Recv) return false;
  }
  // Asked even of copies: a call the build has no kernels for stays on one path, the staged one.
  return ops.hasKernels(plan.type, plan.op);
}

// The steps in an order their dependencies allow, each as one kernel on the plan's stream.
Status Proxy::runOnStream(const Plan& plan, StreamOps& ops) {
  const algos::Schedule& s = *plan.schedule;
  const size_t unit = kernels::typeSize(plan.type);
  auto at = [&](const algos::Region& r) {
    char* base = r.buffer == algos::Buffer::Send
                     ? const_cast<char*>(static_cast<const char*>(plan.sendbuff))
                     : static_cast<char*>(plan.recvbuff);
    return base + r.offset * unit;
  };
  std::vector<uint32_t> unmet(s.steps.size()), ready;
  for (uint32_t i = 0; i < s.steps.size(); ++i)
    if ((unmet[i] = s.steps[i].depCount) == 0) ready.push_back(i);
  while (!ready.empty()) {
    const uint32_t i = ready.back();
    ready.pop_back();
    const algos::Step& st = s.steps[i];
    if (st.kind == algos::StepKind::Copy) {
      if (at(st.src) != at(st.dst))
        BRAID_TRY(ops.deviceCopy(at(st.dst), at(st.src), st.dst.count * unit, plan.stream));
    } else if (st.kind == algos::StepKind::Reduce) {
      BRAID_TRY(ops.deviceReduce(at(st.dst), at(st.dst), at(st.src), st.dst.count, plan.type,
                                 plan.op, plan.stream));
    } else {
      BRAID_TRY(
          ops.deviceFinishAvg(at(st.dst), st.dst.count, plan.type, plan.comm->nranks, plan.stream));
    }
    for (uint32_t k = s.dependentsBegin[i]; k < s.dependentsBegin[i + 1]; ++k)
      if (--unmet[s.dependents[k]] == 0) ready.push_back(s.dependents[k]);
  }
  return Status::Ok();
}

Status Proxy::submitAll(std::vector<std::pair<Proxy*, std::vector<Plan>>> parts) {
  // Submit locks in one order (address), so groups over overlapping communicators cannot
  // deadlock on them.
  std::vector<Proxy*> order;
  for (auto& part : parts) order.push_back(part.first);
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  if (order.size() != parts.size())
    return internalError("a communicator has two parts in one submit");
  std::vector<std::unique_lock<std::mutex>> locks;
  for (Proxy* p : order) locks.emplace_back(p->submitMu_);

  // Plans that need no peer and no host memory run at once as kernels on their streams; the
  // rest make each communicator's batch (none where nothing is left).
  for (auto& part : parts) {
    Proxy* p = part.first;
    std::vector<Plan>& plans = part.second;
    Status st;
    const int caller = p->ops_->makeCurrent();
    std::erase_if(plans, [&](Plan& plan) {
      if (!st.ok() || !onStreamOnly(plan, *p->ops_)) return false;
      st = runOnStream(plan, *p->ops_);
      plan.comm->callStats.ended(plan.profilerTag, st.ok(), false, 0,
                                 uint64_t(plan.count) * kernels::typeSize(plan.type));
      ++p->onStream_;
      return true;
    });
    p->ops_->restoreCurrent(caller);
    if (!st.ok()) return st;
  }
  std::erase_if(parts, [](const auto& part) { return part.second.empty(); });

  std::vector<std::unique_ptr<Batch>> batches(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    Proxy* p = parts[i].first;
    const int caller = p->ops_->makeCurrent();
    Status st = p->prepare(std::move(parts[i].second), &batches[i]);
    p->ops_->restoreCurrent(caller);
    if (st.ok()) continue;
    // Nothing waits yet: undo the parts prepared so far.
    for (size_t k = 0; k < i; ++k) {
      Proxy* q = parts[k].first;
      const int was = q->ops_->makeCurrent();
      q->abandon(*batches[k]);
      q->ops_->restoreCurrent(was);
    }
    return st;
  }
  // From the first wait on, every batch must reach its proxy, which releases its streams.
  Status result;
  for (size_t i = 0; i < parts.size(); ++i) {
    Proxy* p = parts[i].first;
    const int caller = p->ops_->makeCurrent();
    Status st = p->commit(std::move(batches[i]));
    p->ops_->restoreCurrent(caller);
    if (result.ok()) result = st;
  }
  return result;
}

Status Proxy::submit(std::vector<Plan> plans) {
  std::vector<std::pair<Proxy*, std::vector<Plan>>> parts;
  parts.emplace_back(this, std::move(plans));
  return submitAll(std::move(parts));
}

Status Proxy::prepare(std::vector<Plan> plans, std::unique_ptr<Batch>* out) {
  reap(false);
  auto batch = std::make_unique<Batch>();
  batch->plans = std::move(plans);
  for (const Plan& p : batch->plans)
    if (std::find(batch->streams.begin(), batch->streams.end(), p.stream) == batch->streams.end())
      batch->streams.push_back(p.stream);
  size_t total = 0;
  for (const Plan& p : batch->plans) {
    batch->layouts.push_back(layout(p));
    total += batch->layouts.back().bytes;
  }
  batch->byProxy = total > streamCopyMax_;
  Status st;
  if (!batch->byProxy) {
    // Staging taken now, its inputs copied on the caller's streams ahead of the wait.
    std::vector<Copy> in;
    for (size_t i = 0; i < batch->plans.size() && st.ok(); ++i) {
      const Layout& l = batch->layouts[i];
      Block block{};
      if (l.bytes > 0) {
        st = acquire(l.bytes, &block);
        if (!st.ok()) break;
        batch->blocks.push_back(block);
      }
      place(batch->plans[i], l, block.ptr, &in, &batch->outputs);
    }
    for (const Copy& c : in)
      if (st.ok()) st = ops_->copyToHost(c.dst, c.src, c.bytes, c.stream);
  }
  for (cudaStream_t s : batch->streams) {
    if (!st.ok()) break;
    Event ev = nullptr;
    st = ops_->record(s, &ev);
    if (ev) batch->inputsReady.push_back(ev);
  }
  if (!st.ok()) {
    abandon(*batch);
    return st;
  }
  *out = std::move(batch);
  return Status::Ok();
}

void Proxy::abandon(Batch& batch) {
  // Input copies may still target the staging: let them land before it is reused.
  for (cudaStream_t s : batch.streams) {
    Event ev = nullptr;
    const bool recorded = ops_->record(s, &ev).ok() && ev;
    if (recorded)
      ops_->synchronize(ev);
    else
      batch.keepBlocks = true;
    if (ev) ops_->destroy(ev);
  }
  destroy(batch);
}

Status Proxy::commit(std::unique_ptr<Batch> batch) {
  if (!thread_.joinable()) {  // the first batch starts the thread
    BRAID_INFO(kProxy, "rank %d: device progress thread for device %d, streams wait with %s",
               comm_->rank, comm_->cudaDev, ops_->describe());
    thread_ = std::thread([this] { loop(); });
  }
  batch->seq = ++issued_;
  for (cudaStream_t s : batch->streams)
    if (batch->failed.ok()) batch->failed = ops_->waitFlag(s, batch->seq);
  for (const Copy& o : batch->outputs)
    if (batch->failed.ok()) batch->failed = ops_->copyToDevice(o.dst, o.src, o.bytes, o.stream);
  Status result = batch->failed;
  // A batch the proxy stages leaves nothing on the streams after the wait: no event to record.
  if (!batch->byProxy) {
    for (cudaStream_t s : batch->streams) {
      Event ev = nullptr;
      Status rec = ops_->record(s, &ev);
      if (rec.ok() && ev) {
        batch->outputsDone.push_back(ev);
        continue;
      }
      if (ev) ops_->destroy(ev);
      batch->keepBlocks = true;
      if (result.ok()) result = rec.withContext("recording the copies back");
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(batch));
  }
  work_.notify_one();
  return result;
}

// Inputs are ready when the user's streams have reached the call. Only an abort ends that wait:
// the stream may be busy with the application's own work for as long as it likes. Events of a
// call submitted to an idle stream, and of the proxy's own copies, complete within microseconds,
// and a sleep costs at least the kernel's timer slack (50 us by default): so the wait polls
// without sleeping for kSpin first, then sleeps between polls.
Status Proxy::waitEvents(const std::vector<Event>& events, bool abortable, const char* what) {
  Waiter waiter(0, abortable ? &comm_->abortFlag : nullptr);
  const auto spinUntil = std::chrono::steady_clock::now() + kSpin;
  bool spinning = true;  // the clock is read every 16th poll
  for (Event ev : events) {
    for (uint32_t round = 0;; ++round) {
      bool done = false;
      BRAID_TRY(ops_->query(ev, &done).withContext(what));
      if (done) break;
      BRAID_TRY(waiter.check(what));
      spinning = spinning && ((round & 15) != 0 || std::chrono::steady_clock::now() < spinUntil);
      if (spinning)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  return Status::Ok();
}

Status Proxy::settle(const char* what) {
  Event ev = nullptr;
  Status st = ops_->record(ownStream_, &ev);
  if (st.ok()) st = waitEvents({ev}, false, what);
  if (ev) ops_->destroy(ev);
  return st;
}

// The user's streams have reached the call and wait for the flag: the proxy copies the inputs
// into staging on its own stream, runs the schedules, and copies the results back before the flag
// lets the streams go on. Its staging is taken here (allocated only when no free block fits: the
// caller never waits for, or pays, an allocation) and given back when the batch is done.
Status Proxy::runStaged(Batch& batch) {
  if (!ownStream_) BRAID_TRY(ops_->makeStream(&ownStream_).withContext("the proxy's stream"));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Copy> in, out;
  Status st;
  for (size_t i = 0; i < batch.plans.size() && st.ok(); ++i) {
    const Layout& l = batch.layouts[i];
    Block block{};
    if (l.bytes > 0) {
      st = pool_.acquire(l.bytes, true, &block.ptr, &block.size);
      if (!st.ok()) break;
      batch.blocks.push_back(block);
    }
    place(batch.plans[i], l, block.ptr, &in, &out);
  }
  bool queued = false;  // copies on the proxy's stream that may not have run yet
  if (st.ok() && piecewise(batch, in, out)) {
    // The copies overlap the run (PieceGate); the settle after it waits for the last ones back.
    const size_t bytes = std::max(in.empty() ? 0 : in[0].bytes, out.empty() ? 0 : out[0].bytes);
    PieceGate gate(*ops_, ownStream_, std::max(pieceBytes_, (bytes + kMaxPieces - 1) / kMaxPieces));
    Plan& plan = batch.plans[0];
    queued = true;
    st = gate.start(plan, in.empty() ? nullptr : in[0].dst, in.empty() ? nullptr : in[0].src,
                    in.empty() ? 0 : in[0].bytes, out.empty() ? nullptr : out[0].dst,
                    out.empty() ? nullptr : out[0].src, out.empty() ? 0 : out[0].bytes);
    const auto t1 = std::chrono::steady_clock::now();
    if (st.ok()) {
      plan.gate = &gate;
      st = execute(batch.plans);
      plan.gate = nullptr;
    }
    totals_.runSeconds += secondsSince(t1);
    if (const Status g = gate.finish(st.ok()); st.ok()) st = g;
    // Every copy lands before the gate and its events go, after a failure too.
    const auto t2 = std::chrono::steady_clock::now();
    const Status landed = settle(st.ok() ? "copying the results back" : "letting the copies land");
    if (st.ok()) st = landed;
    queued = !landed.ok();
    totals_.copySeconds += secondsSince(t2) + std::chrono::duration<double>(t1 - t0).count();
  } else {
    // Queues `copies` on the proxy's stream and waits for them.
    auto copyAll = [&](const std::vector<Copy>& copies, bool toHost, const char* what) {
      for (const Copy& c : copies) {
        if (!st.ok()) break;
        st = toHost ? ops_->copyToHost(c.dst, c.src, c.bytes, ownStream_)
                    : ops_->copyToDevice(c.dst, c.src, c.bytes, ownStream_);
        queued = true;
      }
      if (st.ok() && queued) {
        st = settle(what);
        queued = !st.ok();
      }
    };
    copyAll(in, true, "copying the inputs to staging");
    double copied = secondsSince(t0);
    const auto t1 = std::chrono::steady_clock::now();
    if (st.ok()) st = execute(batch.plans);
    totals_.runSeconds += secondsSince(t1);
    const auto t2 = std::chrono::steady_clock::now();
    copyAll(out, false, "copying the results back");
    copied += secondsSince(t2);
    totals_.copySeconds += copied;
  }
  // After a failed copy, others may still be queued: the staging is free once the stream ran
  // them, and never reused when that cannot be told.
  if (queued && !settle("letting the copies land").ok()) batch.keepBlocks = true;
  destroy(batch);
  return st;
}

// Whether a batch the proxy stages runs piece by piece (PieceGate): one plan, larger than a piece,
// whose memory is only its own buffers (not PreMulSum's scaled input, a device scalar, or a
// codec's messages) and that sends nothing to itself (a group's sends to self are copied before
// the run starts).
bool Proxy::piecewise(const Batch& batch, const std::vector<Copy>& in,
                      const std::vector<Copy>& out) const {
  if (pieceBytes_ == 0 || batch.plans.size() != 1 || in.size() > 1 || out.size() > 1) return false;
  const Plan& plan = batch.plans[0];
  if (plan.preMul || plan.codec) return false;
  const size_t bytes = std::max(in.empty() ? 0 : in[0].bytes, out.empty() ? 0 : out[0].bytes);
  if (bytes <= pieceBytes_) return false;
  for (const algos::Step& st : plan.schedule->steps)
    if (st.peer == plan.comm->rank) return false;
  return true;
}

void Proxy::loop() {
  ops_->bindThread();
  for (;;) {
    Batch* batch = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      batch = queue_.front().get();
    }
    Status st = batch->failed;
    if (st.ok() && comm_->asyncError.load() != ncclSuccess)
      st = {comm_->asyncError.load(), "the communicator failed earlier"};
    const auto t0 = std::chrono::steady_clock::now();
    if (st.ok()) st = waitEvents(batch->inputsReady, true, "waiting for the input copies");
    totals_.waitSeconds += secondsSince(t0);
    ++totals_.batches;
    if (batch->byProxy) {
      ++totals_.byProxy;
      if (st.ok()) st = runStaged(*batch);
    } else if (st.ok()) {
      const auto t1 = std::chrono::steady_clock::now();
      st = execute(batch->plans);
      totals_.runSeconds += secondsSince(t1);
    }
    if (!st.ok()) {
      // Reported as NCCL does for work on a stream: through ncclCommGetAsyncError.
      comm_->markFailed(st.code());
      comm_->setLastError(st.message());
      BRAID_WARN("rank %d: device collective failed: %s", comm_->rank, st.message().c_str());
    }
    // Staging holds the outputs (plain stores, ordered before this one): release the streams.
    __atomic_store_n(ops_->flag(), batch->seq, __ATOMIC_RELEASE);
    {
      std::lock_guard<std::mutex> lock(mu_);
      completed_ = batch->seq;
      retired_.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    ran_.notify_all();
  }
}

Status Proxy::drain() {
  uint32_t target;
  {
    std::lock_guard<std::mutex> guard(submitMu_);
    target = issued_;
  }
  std::unique_lock<std::mutex> lock(mu_);
  while (int32_t(completed_ - target) < 0) {
    if (comm_->abortFlag.load()) return invalidUsage("communicator aborted");
    ran_.wait_for(lock, std::chrono::milliseconds(10));
  }
  return Status::Ok();
}

Status Proxy::release(ncclComm* comm, size_t* pinnedBytes) {
  *pinnedBytes = 0;
  Proxy* proxy = comm->deviceProxy;
  if (!proxy) return Status::Ok();
  Status st = proxy->drain();
  *pinnedBytes = proxy->pool_.pinned();
  comm->deviceProxy = nullptr;
  delete proxy;  // not aborted: waits for the copies back, then parks the staging
  return st;
}

void Proxy::reap(bool wait) {
  // One reaper at a time (under submitMu_, or the destructor); the thread only appends.
  for (;;) {
    std::unique_ptr<Batch> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (retired_.empty()) return;
      batch = std::move(retired_.front());
      retired_.pop_front();
    }
    // Waits on the user's streams happen outside the lock, so the thread can go on meanwhile.
    bool done = true;
    for (Event ev : batch->outputsDone) {
      bool finished = false;
      if (wait)
        ops_->synchronize(ev);
      else if (!ops_->query(ev, &finished).ok() || !finished)
        done = false;
      if (!done) break;
    }
    if (!done) {
      std::lock_guard<std::mutex> lock(mu_);
      retired_.push_front(std::move(batch));
      return;
    }
    destroy(*batch);
  }
}

void Proxy::destroy(Batch& batch) {
  for (Event ev : batch.inputsReady) ops_->destroy(ev);
  for (Event ev : batch.outputsDone) ops_->destroy(ev);
  for (const Block& b : batch.blocks) {
    if (batch.keepBlocks)
      pool_.keep(b.ptr);
    else
      pool_.release(b.ptr, b.size);
  }
  batch.inputsReady.clear();
  batch.outputsDone.clear();
  batch.blocks.clear();
}

}  // namespace braid::device
