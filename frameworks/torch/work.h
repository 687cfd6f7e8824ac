// A torch Work for one Braid call: it keeps the call's tensors alive until Braid reports the
// call complete, copies staged outputs back, and then completes itself (wait, isCompleted,
// isSuccess, exception) and its Future (DDP's communication hooks chain on it).
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nccl.h"

namespace braid_torch {

class Work : public c10d::Work {
 public:
  // `what` names the call in error messages ("allreduce"); `outputs` are what result() and the
  // Future's value return.
  Work(int rank, c10d::OpType type, std::string what, std::vector<at::Tensor> outputs);
  ~Work() override;

  // Tensors Braid reads or writes until the call completes.
  void keep(const at::Tensor& tensor) { keep_.push_back(tensor); }
  // After success, `destination.copy_(staging)`: outputs that were not contiguous, and lists of
  // outputs that Braid fills as one flat buffer.
  void copyBack(at::Tensor staging, at::Tensor destination) {
    copyBack_.emplace_back(std::move(staging), std::move(destination));
  }
  // Runs once the call is complete, before the Work is, or when a Work that never ran is
  // destroyed (releases what the call borrowed).
  void atCompletion(std::function<void()> fn) { cleanup_.push_back(std::move(fn)); }

  // Called once, on the process group's completion thread (or on the calling thread for calls
  // that ran before they returned): copies back, releases the tensors, then completes the
  // Work and its Future with `result` (message: Braid's text for a failure).
  void complete(ncclResult_t result, const std::string& message);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  // Waits for completion; with a timeout, throws when it passes first (the call stays in
  // flight, its tensors held). Throws the call's error.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  void synchronize() override {}

 private:
  const std::string what_;
  const std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_;
  std::vector<std::pair<at::Tensor, at::Tensor>> copyBack_;
  std::vector<std::function<void()>> cleanup_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // made by the first getFuture()
};

}  // namespace braid_torch
