// The stream mechanism for device buffers: each communicator's progress thread (its "proxy").
// docs/architecture.md ("Device memory") explains the choice. In short, for one call or group:
//
//   caller, on the user's stream(s), without blocking:
//     copy inputs device -> pinned staging; record "inputs ready";
//     wait until the proxy's flag reaches this batch's number (cuStreamWaitValue32 on
//     host-mapped memory, or a one-thread kernel polling it where stream memory operations are
//     not supported); copy outputs staging -> device; record "outputs done".
//   proxy thread:
//     wait for "inputs ready", run the ordinary host schedules over the staging buffers with
//     the executor and the transports, then write the batch's number to the flag.
//
// So the call returns at once, work after it on the stream sees the result, and the host
// algorithms, transports and kernels serve device memory unchanged.
#pragma once

#include <cuda_runtime.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/executor.h"
#include "core/status.h"

struct ncclComm;

namespace braid::device {

// Pinned host blocks for staging, kept for reuse until the communicator goes (freeing pinned
// memory waits for the whole device, which could stall behind another rank's stream).
class StagingPool {
 public:
  StagingPool() = default;
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;
  ~StagingPool();

  // A free block of at least `bytes`; a new one only when `mayAllocate` (else *block is null).
  Status acquire(size_t bytes, bool mayAllocate, char** block, size_t* size);
  void release(char* block, size_t size);
  // Bytes a new block for `bytes` would add to those already pinned.
  size_t pinnedAfter(size_t bytes);

 private:
  std::mutex mu_;
  size_t pinned_ = 0;
  std::multimap<size_t, char*> free_;
  std::vector<char*> all_;
};

class Proxy {
 public:
  static Status create(ncclComm* comm, Proxy** out);
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;
  // Runs what is queued (it fails at once after an abort), releases every waiting stream, and
  // frees the staging once the streams are done with it.
  ~Proxy();

  // Plans of this communicator, one call or the communicator's part of a group.
  Status submit(std::vector<Plan> plans);
  // Until the proxy has run everything submitted so far.
  Status drain();

 private:
  struct Block {
    char* ptr;
    size_t size;
  };
  struct Output {
    void* device;
    const char* host;
    size_t bytes;
    cudaStream_t stream;
  };
  struct Batch {
    std::vector<Plan> plans;
    std::vector<cudaEvent_t> inputsReady, outputsDone;
    std::vector<Block> blocks;
    uint32_t seq = 0;
    Status failed;  // enqueueing failed after a stream was told to wait: run nothing, release it
  };

  explicit Proxy(ncclComm* comm) : comm_(comm) {}
  Status init();
  Status makeFlag();
  Status stage(Batch& batch, Plan& plan, std::vector<Output>* outputs);
  // Staging within the budget: past it, waits for batches in flight to give theirs back.
  Status acquire(size_t bytes, Block* block);
  Status waitOn(cudaStream_t stream, uint32_t seq);
  Status waitInputs(const Batch& batch);
  void loop();
  // Returns the staging of batches whose output copies are done (all of them when `wait`).
  void reap(bool wait);
  void destroy(Batch& batch);

  ncclComm* comm_;
  StagingPool pool_;
  uint32_t* flag_ = nullptr;  // pinned and mapped: the proxy writes it, streams wait on it
  void* flagDevice_ = nullptr;
  void* waitValue_ = nullptr;  // cuStreamWaitValue32, null: the wait kernel

  std::mutex submitMu_;  // one submit at a time, so batch numbers follow stream order
  uint32_t issued_ = 0;  // under submitMu_

  std::mutex mu_;
  std::condition_variable work_, ran_;
  std::deque<std::unique_ptr<Batch>> queue_;    // submitted, not yet run
  std::deque<std::unique_ptr<Batch>> retired_;  // run; staging in use until outputsDone
  uint32_t completed_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace braid::device
