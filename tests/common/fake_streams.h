// Host threads as CUDA streams, so the stream proxy (core/device/stream_proxy.h) runs in tests on
// any machine: a FakeStream runs its queued operations in order on a thread of its own, a wait
// holds it until its condition is true, and FakeStreamOps implements StreamOps on top ("device
// memory" is host memory; ranges the test marks count as device memory for isDeviceMemory).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "core/device/stream_ops.h"
#include "kernels/reduce.h"

namespace braid::testing {

class FakeStream {
 public:
  FakeStream() : thread_([this] { run(); }) {}
  ~FakeStream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  cudaStream_t handle() { return reinterpret_cast<cudaStream_t>(this); }
  static FakeStream* of(cudaStream_t s) { return reinterpret_cast<FakeStream*>(s); }

  // `op` runs after everything queued before it; returning false, it is retried (a wait).
  void push(std::function<bool()> op) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ops_.push_back(std::move(op));
      ++queued_;
    }
    cv_.notify_all();
  }
  // Until everything queued so far has run.
  void sync() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = queued_;
    done_cv_.wait(lock, [&] { return finished_ >= target; });
  }
  bool idle() {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_ == queued_;
  }

 private:
  void run() {
    for (;;) {
      std::function<bool()> op;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !ops_.empty(); });
        if (ops_.empty()) return;
        op = ops_.front();
      }
      while (!op()) std::this_thread::sleep_for(std::chrono::microseconds(50));
      {
        std::lock_guard<std::mutex> lock(mu_);
        ops_.pop_front();
        ++finished_;
      }
      done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<bool()>> ops_;
  uint64_t queued_ = 0, finished_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

class FakeStreamOps final : public device::StreamOps {
  // An event: done once the stream ran past its record; waits and the stream share the state.
  struct FakeEvent {
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
  };

 public:
  struct Counters {
    std::atomic<int> copiesToHost{0}, copiesToDevice{0}, waits{0}, stagingAllocs{0};
    std::atomic<int> copiesOnOwnStreams{0};   // of those copies, made on a makeStream() stream
    std::atomic<int> deviceKernels{0};        // deviceCopy, deviceReduce, deviceFinishAvg
    std::atomic<int> valueWaits{0};           // waitValue
    std::atomic<void*> lastStaging{nullptr};  // where the last copy to the host went
  };

  // `kernels`: whether hasKernels() says yes (no: plans of local steps take the staged path, as
  // with a type the build has no kernels for).
  explicit FakeStreamOps(Counters* counters = nullptr, bool kernels = true)
      : counters_(counters ? counters : &own_), kernels_(kernels) {}
  // As a device's memory goes with its context: "shared device memory" not freed (a mailbox left
  // by an abort) goes with these operations, once their streams have run.
  ~FakeStreamOps() override {
    ownStreams_.clear();
    for (void* p : shared_) std::free(p);
  }

  // Ranges isDeviceMemory() reports as device memory.
  void markDevice(const void* p, size_t bytes) {
    device_.emplace_back(static_cast<const char*>(p), bytes);
  }
  // From now on copies to the device fail (a runtime error in the middle of a submit).
  void failCopiesToDevice() { failToDevice_ = true; }
  // The n-th record() from now on (1: the next) fails after making its event, as
  // cudaEventRecord failing after cudaEventCreate does: the caller must destroy the event.
  void failRecord(int n) { failRecordAt_ = records_ + n; }

  Status copyToHost(void* dst, const void* src, size_t bytes, cudaStream_t s) override {
    const int index = counters_->copiesToHost++;
    countOwn(s);
    counters_->lastStaging = dst;
    FakeStream::of(s)->push([=, hold = holdToHost_] {
      if (hold && !hold(index)) return false;  // retried
      std::memcpy(dst, src, bytes);
      return true;
    });
    return Status::Ok();
  }
  // Copies to the host from now on run only once hold(index) is true, index counting this ops'
  // copies to the host from 0 (a copy that the test holds back, as a slow one would be).
  void holdCopiesToHost(std::function<bool(int)> hold) { holdToHost_ = std::move(hold); }
  Status copyToDevice(void* dst, const void* src, size_t bytes, cudaStream_t s) override {
    if (failToDevice_) return {ncclUnhandledCudaError, "fake copy to the device failed"};
    ++counters_->copiesToDevice;
    countOwn(s);
    FakeStream::of(s)->push([=] {
      std::memcpy(dst, src, bytes);
      return true;
    });
    return Status::Ok();
  }
  Status record(cudaStream_t s, device::Event* event) override {
    auto* ev = new FakeEvent;
    if (++records_ == failRecordAt_) {
      *event = ev;
      return {ncclUnhandledCudaError, "fake record failed"};
    }
    FakeStream::of(s)->push([done = ev->done] {
      done->store(true);
      return true;
    });
    *event = ev;
    return Status::Ok();
  }
  Status waitFlag(cudaStream_t s, uint32_t value) override {
    ++counters_->waits;
    // The wait holds the flag: these operations may be destroyed (the proxy's end) before the
    // stream's thread sees the value written last, as cudaFreeHost waits for the device first.
    std::shared_ptr<uint32_t> flag = flag_;
    FakeStream::of(s)->push([flag, value] {
      return int32_t(__atomic_load_n(flag.get(), __ATOMIC_ACQUIRE) - value) >= 0;
    });
    return Status::Ok();
  }
  Status query(device::Event e, bool* done) override {
    *done = static_cast<FakeEvent*>(e)->done->load();
    return Status::Ok();
  }
  void synchronize(device::Event e) override {
    while (!static_cast<FakeEvent*>(e)->done->load())
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  void destroy(device::Event e) override { delete static_cast<FakeEvent*>(e); }
  // A wait holds the event's state: the event may be destroyed once the wait is queued.
  Status waitEvent(cudaStream_t s, device::Event e) override {
    FakeStream::of(s)->push([done = static_cast<FakeEvent*>(e)->done] { return done->load(); });
    return Status::Ok();
  }
  Status waitValue(cudaStream_t s, const uint32_t* word, uint32_t value) override {
    ++counters_->valueWaits;
    FakeStream::of(s)->push(
        [=] { return int32_t(__atomic_load_n(word, __ATOMIC_ACQUIRE) - value) >= 0; });
    return Status::Ok();
  }
  Status writeValue(cudaStream_t s, uint32_t* word, uint32_t value) override {
    FakeStream::of(s)->push([=] {
      __atomic_store_n(word, value, __ATOMIC_RELEASE);
      return true;
    });
    return Status::Ok();
  }
  Status deviceReduce(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
                      ncclRedOp_t op, cudaStream_t s) override {
    ++counters_->deviceKernels;
    FakeStream::of(s)->push([=] {
      kernels::reduce(dst, a, b, count, type, op);
      return true;
    });
    return Status::Ok();
  }
  // "Shared device memory" is host memory; its handle carries the address (ranks are threads).
  Status allocShared(size_t bytes, void** out) override {
    *out = std::calloc(1, bytes);
    if (!*out) return systemError("out of memory");
    std::lock_guard<std::mutex> lock(ownMu_);
    shared_.insert(*out);
    return Status::Ok();
  }
  void freeShared(void* p) override {
    {
      std::lock_guard<std::mutex> lock(ownMu_);
      shared_.erase(p);
    }
    std::free(p);
  }
  Status exportMemory(void* p, device::MemHandle* out) override {
    std::memcpy(out->bytes, &p, sizeof p);
    return Status::Ok();
  }
  Status openMemory(const device::MemHandle& h, void** out) override {
    std::memcpy(out, h.bytes, sizeof *out);
    return Status::Ok();
  }
  void closeMemory(void*) override {}
  Status enablePeerAccess(int) override { return Status::Ok(); }
  Status allocAsync(size_t bytes, cudaStream_t, void** out) override {
    *out = std::malloc(bytes ? bytes : 1);
    return *out ? Status::Ok() : systemError("out of memory");
  }
  Status freeAsync(void* p, cudaStream_t s) override {
    FakeStream::of(s)->push([p] {
      std::free(p);
      return true;
    });
    return Status::Ok();
  }
  Status allocStaging(size_t bytes, void** out) override {
    ++counters_->stagingAllocs;
    *out = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    return *out ? Status::Ok() : systemError("out of memory");
  }
  void freeStaging(void* p) override {
    if (onFree_) onFree_(p);
    std::free(p);
  }
  // Called with each staging block freed (by the reclaimer, maybe after the proxy went: `f` must
  // own what it touches).
  void onFreeStaging(std::function<void(void*)> f) { onFree_ = std::move(f); }
  bool isDeviceMemory(const void* p) override {
    const char* c = static_cast<const char*>(p);
    for (auto& [base, bytes] : device_)
      if (c >= base && c < base + bytes) return true;
    return false;
  }
  // The "device kernels": the host kernels, run in stream order.
  Status deviceCopy(void* dst, const void* src, size_t bytes, cudaStream_t s) override {
    ++counters_->deviceKernels;
    FakeStream::of(s)->push([=] {
      std::memmove(dst, src, bytes);
      return true;
    });
    return Status::Ok();
  }
  Status deviceFinishAvg(void* data, size_t count, ncclDataType_t type, int nranks,
                         cudaStream_t s) override {
    ++counters_->deviceKernels;
    FakeStream::of(s)->push([=] {
      kernels::finishAvg(data, count, type, nranks);
      return true;
    });
    return Status::Ok();
  }
  bool hasKernels(ncclDataType_t, ncclRedOp_t) override { return kernels_; }
  Status makeStream(cudaStream_t* out) override {
    std::lock_guard<std::mutex> lock(ownMu_);
    ownStreams_.push_back(std::make_unique<FakeStream>());
    *out = ownStreams_.back()->handle();
    return Status::Ok();
  }
  void destroyStream(cudaStream_t) override {}  // its thread goes with these operations
  uint32_t* flag() override { return flag_.get(); }
  const char* describe() const override { return "fake streams (host threads)"; }

 private:
  void countOwn(cudaStream_t s) {
    std::lock_guard<std::mutex> lock(ownMu_);
    for (auto& own : ownStreams_)
      if (own->handle() == s) ++counters_->copiesOnOwnStreams;
  }

  std::mutex ownMu_;
  std::vector<std::unique_ptr<FakeStream>> ownStreams_;
  std::set<void*> shared_;  // allocShared's, not yet freed
  Counters own_;
  Counters* counters_;
  std::shared_ptr<uint32_t> flag_ = std::make_shared<uint32_t>(0);
  std::vector<std::pair<const char*, size_t>> device_;
  bool kernels_;
  std::function<void(void*)> onFree_;
  std::function<bool(int)> holdToHost_;
  bool failToDevice_ = false;
  int records_ = 0, failRecordAt_ = 0;
};

}  // namespace braid::testing
