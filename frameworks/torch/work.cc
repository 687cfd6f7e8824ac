#include "work.h"

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

#include <stdexcept>

namespace braid_torch {

Work::Work(int rank, c10d::OpType type, std::string what, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type), what_(std::move(what)), outputs_(std::move(outputs)) {}

Work::~Work() {
  // A call refused before it was queued never completes: release what it borrowed.
  for (auto& fn : cleanup_) fn();
}

void Work::complete(ncclResult_t result, const std::string& message) {
  std::exception_ptr error;
  if (result == ncclSuccess) {
    try {
      for (auto& [staging, destination] : copyBack_) destination.copy_(staging);
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(
          std::runtime_error("braid: " + what_ + ": copying the result back failed: " + e.what()));
    }
  } else {
    error = std::make_exception_ptr(
        std::runtime_error("braid: " + what_ + " failed: " + ncclGetErrorString(result) +
                           (message.empty() ? std::string() : ": " + message)));
  }
  for (auto& fn : cleanup_) fn();
  cleanup_.clear();
  keep_.clear();
  copyBack_.clear();

  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_ = true;
    exception_ = error;
    future = future_;
  }
  cv_.notify_all();
  if (future) {
    if (error)
      future->setError(error);
    else
      future->markCompleted(c10::IValue(outputs_));
  }
}

bool Work::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

bool Work::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ && !exception_;
}

std::exception_ptr Work::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exception_;
}

bool Work::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    throw std::runtime_error("braid: " + what_ + " did not complete within " +
                             std::to_string(timeout.count()) + " ms (Work.wait timeout)");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (future_) return future_;
  future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  if (!completed_) return future_;  // complete() marks it
  auto future = future_;
  auto error = exception_;
  lock.unlock();
  if (error)
    future->setError(error);
  else
    future->markCompleted(c10::IValue(outputs_));
  return future;
}

}  // namespace braid_torch
