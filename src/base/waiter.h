// Waiter: what every potentially long wait checks, so that nothing in Braid blocks forever.
// A deadline (BRAID_TIMEOUT_MS, or the bootstrap's own) and the communicator's abort flag.
#pragma once

#include <atomic>
#include <chrono>

#include "base/status.h"

namespace braid {

class Waiter {
 public:
  using Clock = std::chrono::steady_clock;

  Waiter() = default;  // never expires, cannot be aborted
  Waiter(int64_t timeoutMs, const std::atomic<bool>* abortFlag)
      : abort_(abortFlag), timeoutMs_(timeoutMs) {
    restart();
  }

  // Timeouts measure time without progress: callers restart() whenever something moved.
  void restart() {
    if (timeoutMs_ > 0) deadline_ = Clock::now() + std::chrono::milliseconds(timeoutMs_);
  }
  bool aborted() const { return abort_ && abort_->load(std::memory_order_relaxed); }
  bool expired() const { return timeoutMs_ > 0 && Clock::now() >= deadline_; }
  int64_t timeoutMs() const { return timeoutMs_; }
  const std::atomic<bool>* abortFlag() const { return abort_; }

  // Ok while the wait may go on; otherwise the error to return, naming what was awaited.
  Status check(const char* what) const {
    if (aborted()) return {ncclInvalidUsage, strfmt("%s: communicator aborted", what)};
    if (expired())
      return {ncclTimeout, strfmt("%s: no progress for %lld ms (timeout)", what,
                                      static_cast<long long>(timeoutMs_))};
    return Status::Ok();
  }

 private:
  const std::atomic<bool>* abort_ = nullptr;
  int64_t timeoutMs_ = 0;
  Clock::time_point deadline_{};
};

}  // namespace braid
