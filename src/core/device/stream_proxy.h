// The stream mechanism for device buffers: each communicator's progress thread (its "proxy").
// docs/architecture.md ("Device memory") explains the choice. In short, for one call or group:
//
//   caller, on the user's stream(s), without blocking:
//     copy inputs device -> pinned staging; record "inputs ready";
//     wait until the proxy's flag reaches this batch's number (with CUDA: cuStreamWaitValue32 on
//     host-mapped memory, or a one-thread kernel polling it where stream memory operations are
//     not supported); copy outputs staging -> device; record "outputs done".
//   proxy thread:
//     wait for "inputs ready", run the ordinary host schedules over the staging buffers with
//     the executor and the transports, then write the batch's number to the flag.
//
// So the call returns at once, work after it on the stream sees the result, and the host
// algorithms, transports and kernels serve device memory unchanged. That is for batches of up to
// BRAID_DEVICE_STREAM_COPY_BYTES of staging. A larger batch is staged by the proxy itself, on a
// stream of its own, once the user's streams reached the call (inputs copied, schedules run,
// results copied back, then the flag): its staging is held only while the proxy runs it, so the
// caller never allocates pinned memory and one block serves every large call in turn, where
// staging on the caller's stream needs a block per call in flight. The runtime is reached only
// through StreamOps, so this file has no CUDA in it and is tested without a GPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "core/device/stream_ops.h"
#include "core/exec/executor.h"

struct ncclComm;

namespace braid::device {

// Pinned host blocks for staging, kept for reuse until the communicator goes (freeing pinned
// memory waits for the whole device, which could stall behind another rank's stream). When it goes,
// its blocks are parked with the process's reclaimer (stream_proxy.cc), which new pools draw on.
class StagingPool {
 public:
  explicit StagingPool(StreamOps& ops) : ops_(ops) {}
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // A free block of at least `bytes`: a parked one, else a new one when `mayAllocate` (else
  // *block is null).
  Status acquire(size_t bytes, bool mayAllocate, char** block, size_t* size);
  void release(char* block, size_t size);
  // Bytes a new block for `bytes` would add to those already pinned.
  size_t pinnedAfter(size_t bytes);
  // Bytes of every block the pool holds, free or in use.
  size_t pinned();
  // Blocks allocated (not drawn from the reclaimer), their bytes, and the seconds it took.
  void allocations(uint64_t* count, uint64_t* bytes, double* seconds);
  // A block in use that must never be handed out again (nothing tells when its copies are done).
  void keep(char* block);
  // Every block the pool holds, free or in use, the kept ones apart; the pool forgets them (the
  // caller frees them).
  void takeAll(std::vector<std::pair<char*, size_t>>* reusable,
               std::vector<std::pair<char*, size_t>>* kept);

 private:
  StreamOps& ops_;
  std::mutex mu_;
  size_t pinned_ = 0;
  uint64_t allocs_ = 0, allocBytes_ = 0;
  double allocSeconds_ = 0;
  std::multimap<size_t, char*> free_;
  std::vector<std::pair<char*, size_t>> all_;
  std::set<char*> kept_;
};

class Proxy {
 public:
  // Takes `ops`, the communicator's runtime (with CUDA: device.cc makes it).
  static Status create(ncclComm* comm, std::unique_ptr<StreamOps> ops, Proxy** out);
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;
  // Runs what is queued (it fails at once after an abort) and releases every waiting stream. A
  // destroy waits for the copies back to the streams; an abort does not (the streams may be held
  // by other work): the staging, with the events that guard it, goes to the reclaimer.
  ~Proxy();

  // One group's plans, each communicator's part as one batch: every part's input copies are
  // queued on its streams before any stream is told to wait, so parts that share a stream (two
  // communicators of one thread on one stream) never wait behind each other's inputs.
  static Status submitAll(std::vector<std::pair<Proxy*, std::vector<Plan>>> parts);
  // Whether `plan` runs as device kernels on its stream at submit (local steps on device
  // buffers: a communicator of one rank), and that run.
  static bool onStreamOnly(const Plan& plan, StreamOps& ops);
  static Status runOnStream(const Plan& plan, StreamOps& ops);
  // Plans of this communicator, one call or the communicator's part of a group.
  Status submit(std::vector<Plan> plans);
  // Until the proxy has run everything submitted so far.
  Status drain();
  // ncclCommSuspend(NCCL_SUSPEND_MEM): ends comm's proxy once everything submitted has run and
  // its copies back have landed (as a destroy does), so its thread, stream, events and staging go
  // (the staging to the reclaimer, which frees it once no proxy is left in the process, and
  // meanwhile hands it to other communicators). comm->deviceProxy is null after it: the next
  // device call starts a new proxy. *pinnedBytes: the staging it held. The drain's status.
  static Status release(ncclComm* comm, size_t* pinnedBytes);

 private:
  struct Block {
    char* ptr;
    size_t size;
  };
  // A copy between a user buffer and staging, on `stream`.
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
    cudaStream_t stream;
  };
  // Where one plan's buffers go in its staging block (`bytes` of it; 0: none needed).
  struct Layout {
    bool overlap = false, stageSend = false, stageRecv = false, deviceScalar = false;
    uintptr_t lo = 0;  // overlapping buffers: the lower start, staged at the block's start
    size_t bytes = 0, scalarAt = 0;
  };
  struct Batch {
    std::vector<Plan> plans;
    std::vector<Layout> layouts;
    std::vector<cudaStream_t> streams;
    std::vector<Copy> outputs;  // staged on the caller's streams: the copies back, after the wait
    // Staged by the proxy on its own stream while it runs the batch (larger than streamCopyMax_);
    // the user's streams get only "inputs ready" and the wait.
    bool byProxy = false;
    std::vector<Event> inputsReady, outputsDone;
    std::vector<Block> blocks;
    uint32_t seq = 0;
    Status failed;  // enqueueing failed after a stream was told to wait: run nothing, release it
    // A stream's outputs-done event could not be recorded: nothing tells when the copies back
    // have read the staging, so its blocks are never reused (StagingPool::keep).
    bool keepBlocks = false;
  };

  Proxy(ncclComm* comm, std::unique_ptr<StreamOps> ops)
      : comm_(comm), ops_(std::move(ops)), pool_(*ops_) {}
  // The two halves of a submit, under submitMu_: prepare() stages the plans and queues the input
  // copies; commit() queues the waits and the copies back and hands the batch to the thread.
  Status prepare(std::vector<Plan> plans, std::unique_ptr<Batch>* out);
  Layout layout(const Plan& plan);
  // Points `plan` at `block` (the layout's bytes; null when it needs none) and lists the copies
  // that fill the staging (`in`) and empty it (`out`), on the plan's stream.
  static void place(Plan& plan, const Layout& l, char* block, std::vector<Copy>* in,
                    std::vector<Copy>* out);
  Status commit(std::unique_ptr<Batch> batch);
  // A prepared batch that will not be committed: its input copies land, its staging returns.
  void abandon(Batch& batch);
  // Staging within the budget: past it, waits for batches in flight to give theirs back.
  Status acquire(size_t bytes, Block* block);
  // Until every event completed: polled without sleeping for kSpin, then with short sleeps;
  // an abort ends the wait only when `abortable` (copies on the proxy's own stream always end).
  Status waitEvents(const std::vector<Event>& events, bool abortable, const char* what);
  // A byProxy batch: stage, run and copy back on the proxy's own stream.
  Status runStaged(Batch& batch);
  // Whether a batch the proxy stages runs piece by piece (PieceGate, stream_proxy.cc).
  bool piecewise(const Batch& batch, const std::vector<Copy>& in,
                 const std::vector<Copy>& out) const;
  // Records an event on the proxy's stream and waits for it.
  Status settle(const char* what);
  void loop();
  // Returns the staging of batches whose output copies are done (all of them when `wait`).
  void reap(bool wait);
  void destroy(Batch& batch);

  ncclComm* comm_;
  std::shared_ptr<StreamOps> ops_;  // shared with the reclaimer, which may outlive the proxy
  StagingPool pool_;

  size_t streamCopyMax_ = 0;          // BRAID_DEVICE_STREAM_COPY_BYTES
  size_t pieceBytes_ = 0;             // BRAID_DEVICE_PIECE_BYTES (0: whole calls)
  cudaStream_t ownStream_ = nullptr;  // the proxy's copies (byProxy batches); made on first use

  // What the proxy did, for the INFO line when it goes (on its thread only).
  struct Totals {
    uint64_t batches = 0, byProxy = 0;
    double waitSeconds = 0, runSeconds = 0, copySeconds = 0;
  } totals_;

  std::atomic<uint64_t> onStream_{0};  // plans run by runOnStream

  std::mutex submitMu_;  // one submit at a time, so batch numbers follow stream order
  uint32_t issued_ = 0;  // under submitMu_

  std::mutex mu_;
  std::condition_variable work_, ran_;
  std::deque<std::unique_ptr<Batch>> queue_;    // submitted, not yet run
  std::deque<std::unique_ptr<Batch>> retired_;  // run; staging in use until outputsDone
  uint32_t completed_ = 0;
  bool stop_ = false;
  std::thread thread_;  // started by the first batch (under submitMu_)
};

}  // namespace braid::device
