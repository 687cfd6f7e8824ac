#include "core/device/stream_proxy.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

#include "base/log.h"
#include "base/waiter.h"
#include "core/comm/comm.h"
#include "kernels/reduce.h"

namespace braid::device {
namespace {

constexpr size_t kMinBlock = 64 << 10;
// Pinned staging one communicator keeps before new calls wait for earlier ones to finish on their
// streams (as NCCL's calls block when its queue is full): two 1 GiB out-of-place AllReduces.
constexpr size_t kStagingBudget = size_t(4) << 30;

size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

}  // namespace

// ---- StagingPool ----------------------------------------------------------------------------

StagingPool::~StagingPool() {
  for (char* p : all_) ops_.freeStaging(p);
}

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
  if (!mayAllocate) return Status::Ok();
  void* p = nullptr;
  BRAID_TRY(ops_.allocStaging(want, &p));
  BRAID_INFO(kAlloc, "device staging: %zu bytes of pinned host memory", want);
  std::lock_guard<std::mutex> lock(mu_);
  all_.push_back(static_cast<char*>(p));
  pinned_ += want;
  *block = static_cast<char*>(p);
  *size = want;
  return Status::Ok();
}

void StagingPool::release(char* block, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.emplace(size, block);
}

// ---- Proxy ----------------------------------------------------------------------------------

Status Proxy::create(ncclComm* comm, std::unique_ptr<StreamOps> ops, Proxy** out) {
  std::unique_ptr<Proxy> proxy(new Proxy(comm, std::move(ops)));
  __atomic_store_n(proxy->ops_->flag(), 0u, __ATOMIC_RELEASE);
  BRAID_INFO(kProxy, "rank %d: device progress thread for device %d, streams wait with %s",
             comm->rank, comm->cudaDev, proxy->ops_->describe());
  proxy->thread_ = std::thread([p = proxy.get()] { p->loop(); });
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
  reap(true);
}

// Staging for one plan, and the copy of its input onto its stream. Where sendbuff and recvbuff
// overlap (in place), one staging region keeps their distance, so the schedule built for the
// call's aliasing addresses the staging the same way.
Status Proxy::stage(Batch& batch, Plan& plan, std::vector<Output>* outputs) {
  const auto send = reinterpret_cast<uintptr_t>(plan.sendbuff);
  const auto recv = reinterpret_cast<uintptr_t>(plan.recvbuff);
  const size_t sb = plan.sendBytes, rb = plan.recvBytes;
  const bool overlap = sb && rb && send < recv + rb && recv < send + sb;
  const bool deviceScalar = plan.preMul && plan.scalarPtr && ops_->isDeviceMemory(plan.scalarPtr);
  uintptr_t lo = 0;
  size_t bytes = 0;
  if (overlap) {
    lo = std::min(send, recv);
    bytes = align64(std::max(send + sb, recv + rb) - lo);
  } else {
    bytes = align64(sb) + align64(rb);
  }
  const size_t scalarAt = bytes;
  if (deviceScalar) bytes += 64;

  Block block{};
  BRAID_TRY(acquire(bytes, &block));
  batch.blocks.push_back(block);
  char* hostSend = nullptr;
  char* hostRecv = nullptr;
  if (overlap) {
    hostSend = block.ptr + (send - lo);
    hostRecv = block.ptr + (recv - lo);
  } else {
    if (sb) hostSend = block.ptr;
    if (rb) hostRecv = block.ptr + align64(sb);
  }
  // A buffer unused on this rank keeps only its aliasing (Broadcast off the root, in place).
  if (!sb && send == recv) hostSend = hostRecv;
  if (!rb && recv == send) hostRecv = hostSend;

  if (sb) BRAID_TRY(ops_->copyToHost(hostSend, plan.sendbuff, sb, plan.stream));
  if (deviceScalar) {
    BRAID_TRY(ops_->copyToHost(block.ptr + scalarAt, plan.scalarPtr, kernels::typeSize(plan.type),
                               plan.stream));
    plan.scalarPtr = block.ptr + scalarAt;
  }
  if (rb) outputs->push_back({plan.recvbuff, hostRecv, rb, plan.stream});
  plan.sendbuff = hostSend;
  plan.recvbuff = hostRecv;
  return Status::Ok();
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

Status Proxy::submit(std::vector<Plan> plans) {
  std::lock_guard<std::mutex> guard(submitMu_);
  reap(false);
  auto batch = std::make_unique<Batch>();
  batch->plans = std::move(plans);
  std::vector<cudaStream_t> streams;
  for (const Plan& p : batch->plans)
    if (std::find(streams.begin(), streams.end(), p.stream) == streams.end())
      streams.push_back(p.stream);

  // Until a stream waits on the flag, a failure can still be undone here.
  std::vector<Output> outputs;
  Status st;
  for (Plan& p : batch->plans)
    if (st.ok()) st = stage(*batch, p, &outputs);
  for (cudaStream_t s : streams) {
    if (!st.ok()) break;
    Event ev = nullptr;
    st = ops_->record(s, &ev);
    if (ev) batch->inputsReady.push_back(ev);
  }
  if (!st.ok()) {
    // Input copies may still target the staging: let them land before it is reused.
    for (cudaStream_t s : streams) {
      Event ev = nullptr;
      if (ops_->record(s, &ev).ok() && ev) {
        ops_->synchronize(ev);
        ops_->destroy(ev);
      }
    }
    destroy(*batch);
    return st;
  }

  // From the first wait on, the batch must reach the proxy, which releases the streams.
  batch->seq = ++issued_;
  for (cudaStream_t s : streams)
    if (batch->failed.ok()) batch->failed = ops_->waitFlag(s, batch->seq);
  for (const Output& o : outputs)
    if (batch->failed.ok()) batch->failed = ops_->copyToDevice(o.device, o.host, o.bytes, o.stream);
  for (cudaStream_t s : streams) {
    Event ev = nullptr;
    if (ops_->record(s, &ev).ok() && ev) batch->outputsDone.push_back(ev);
  }
  Status result = batch->failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(batch));
  }
  work_.notify_one();
  return result;
}

// Inputs are ready when the user's streams have reached the copies. Only an abort ends the wait:
// the stream may be busy with the application's own work for as long as it likes.
Status Proxy::waitInputs(const Batch& batch) {
  Waiter waiter(0, &comm_->abortFlag);
  for (Event ev : batch.inputsReady) {
    for (uint32_t round = 0;; ++round) {
      bool done = false;
      BRAID_TRY(ops_->query(ev, &done).withContext("waiting for the input copies"));
      if (done) break;
      BRAID_TRY(waiter.check("waiting for the input copies"));
      if (round < 64)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  return Status::Ok();
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
    if (st.ok()) st = waitInputs(*batch);
    if (st.ok()) st = execute(batch->plans);
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

void Proxy::reap(bool wait) {
  for (;;) {
    std::unique_ptr<Batch> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (retired_.empty()) return;
      bool done = true;
      for (Event ev : retired_.front()->outputsDone) {
        bool finished = false;
        if (wait)
          ops_->synchronize(ev);
        else if (!ops_->query(ev, &finished).ok() || !finished)
          done = false;
      }
      if (!done) return;
      batch = std::move(retired_.front());
      retired_.pop_front();
    }
    destroy(*batch);
  }
}

void Proxy::destroy(Batch& batch) {
  for (Event ev : batch.inputsReady) ops_->destroy(ev);
  for (Event ev : batch.outputsDone) ops_->destroy(ev);
  for (const Block& b : batch.blocks) pool_.release(b.ptr, b.size);
  batch.inputsReady.clear();
  batch.outputsDone.clear();
  batch.blocks.clear();
}

}  // namespace braid::device
