// The torch.distributed backend "braid": CPU tensors on one Braid communicator per process
// group. Each call turns its tensors into (pointer, count, type), queues the NCCL call(s) on the
// group's host stream and returns a Work that the stream's completion callback completes; no
// collective logic lives here.
//
// torch 1.x backends derive from c10d::ProcessGroup; torch 2.x splits that into the
// user-facing ProcessGroup and a per-device c10d::Backend, which is what a plugin provides.
#pragma once

#include <torch/csrc/api/include/torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "nccl.h"
#include "work.h"

namespace braid_torch {

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

struct Config {
  // Braid's timeout for every call of the group (braidCommSetTimeout); 0: none.
  std::chrono::milliseconds timeout{0};
  // braidCompressPolicyParse's syntax ("none", "int8", "topk", "topk:0.05", "auto"); empty:
  // the communicator keeps BRAID_COMPRESS.
  std::string compression;
  // Compressed calls smaller than this stay exact; negative: BRAID_COMPRESS_MIN_BYTES.
  int64_t compressMinBytes = -1;
  // The host stream's priority class (braidHostStreamCreate): 0 normal, -1..-3 more urgent.
  int priority = 0;
};

class ProcessGroupBraid : public BackendBase {
 public:
  // Collective: every rank of the group constructs it. Rank 0 makes the NCCL unique id and
  // publishes it in `store`; the others read it from there.
  ProcessGroupBraid(c10d::Store& store, int rank, int size, Config config);
  ~ProcessGroupBraid() override;

  const std::string getBackendName() const override { return "braid"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // The communicator's compression counters (braidCompressStats).
  braidCompressStats_t compressionStats() const;

  // Runs a function with the calling thread's Python interpreter lock released where it holds
  // it; the Python module installs it (this file knows nothing of Python).
  using WithoutGil = void (*)(const std::function<void()>&);
  static void setWithoutGil(WithoutGil fn);

 private:
  using Enqueue = std::function<ncclResult_t()>;

  // Issues `enqueue`'s NCCL calls as one group on the host stream, then the callback that
  // completes `work`; throws (naming `work`'s call) when Braid refuses a call.
  c10::intrusive_ptr<c10d::Work> run(const c10::intrusive_ptr<Work>& work, const Enqueue& enqueue);
  // The reduction op for `op` on `tensor`'s type (a PreMulSum op is created here and destroyed
  // when `work` completes).
  ncclRedOp_t reductionOp(const c10d::ReduceOp& op, const at::Tensor& tensor, size_t index,
                          const char* what, Work& work);
  // Called by Braid when a stream's calls up to a callback are complete: hands the Work to the
  // completion thread (copies back and Future callbacks must not run on Braid's thread).
  static void onStreamDone(ncclResult_t result, const char* message, void* arg);
  void completionLoop();

  static WithoutGil withoutGil_;

  const Config config_;
  ncclComm_t comm_ = nullptr;
  braidHostStream_t stream_ = nullptr;
  // Serialises the calls made on the communicator from several threads (DDP's reducer calls
  // from autograd threads): each call's group and its callback are queued together.
  std::mutex enqueueMutex_;

  struct Done {
    c10::intrusive_ptr<Work> work;
    ncclResult_t result;
    std::string message;
  };
  std::mutex doneMutex_;
  std::condition_variable doneCv_;
  std::deque<Done> done_;
  bool stopping_ = false;
  std::thread completer_;
};

}  // namespace braid_torch
