// Sleeping until endpoints can move data, whatever transports serve them. A caller that has
// nothing to do hands every endpoint it waits on to one WaitSet (Endpoint::addWakeups): each
// adds what wakes it, file descriptors the kernel marks ready (TCP) or a doorbell its peer rings
// (shared memory), or says it can only be spun on. The set then sleeps on all of them at once:
// descriptors alone in poll(), doorbells alone in futex_waitv, a mixture of both through
// io_uring (any_wait.h) where it can. An endpoint that cannot be slept on, or a mixture where
// io_uring cannot wait on both, leaves the caller to spin or yield.
#pragma once

#include <poll.h>

#include <chrono>
#include <vector>

#include "transport/shm/doorbell.h"

namespace braid::transport {

class WaitSet {
 public:
  enum class Method : uint8_t {
    kNone,       // nothing added
    kFds,        // sleep() polls the descriptors at once
    kDoorbells,  // arm() first, look for work once more, then sleep()
    kMixed,      // both: as for doorbells, and sleep() waits on the descriptors too
    kSpin,       // some endpoint cannot be slept on
  };

  // Empties the set (lowering raised flags first).
  void clear() {
    if (armed_) disarm();
    method_ = Method::kNone;
    fds_.clear();
    bells_.clear();
  }
  // What endpoints add (Endpoint::addWakeups).
  void addFd(int fd, short events) {
    fds_.push_back({fd, events, 0});
    join(Method::kFds);
  }
  void addDoorbell(Doorbell* bell) {
    bells_.push_back({bell, 0});
    join(Method::kDoorbells);
  }
  void cannotSleep() { method_ = Method::kSpin; }

  Method method() const { return method_; }
  bool armed() const { return armed_; }

  // Doorbells (alone or mixed): raises this waiter's flag on every bell and fences the ringers.
  // The caller must then look for work once more (a ring before the flag went up is not heard)
  // and either sleep() or clear(). False, with nothing raised, when the set has no doorbells or
  // the kernel cannot wait on them (with descriptors too, for a mixture).
  bool arm();
  // Sleeps until a descriptor is ready or a bell rang, for at most `timeout`; lowers the flags.
  // False when it could not sleep (a set of spinning endpoints, bells not armed, or a kernel
  // without futex_waitv, or without io_uring's for a mixture): the caller yields instead.
  bool sleep(std::chrono::microseconds timeout);

 private:
  void disarm();
  void join(Method m) {
    if (method_ == Method::kSpin || method_ == m) return;
    method_ = method_ == Method::kNone ? m : Method::kMixed;
  }

  Method method_ = Method::kNone;
  bool armed_ = false;
  std::vector<pollfd> fds_;
  std::vector<BellWait> bells_;
};

}  // namespace braid::transport
