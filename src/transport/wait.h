// Sleeping until endpoints can move data, whatever transports serve them. A caller that has
// nothing to do hands every endpoint it waits on to one WaitSet (Endpoint::addWakeups): each
// adds what wakes it, file descriptors the kernel marks ready (TCP) or a doorbell its peer rings
// (shared memory), or says it can only be spun on. The set then sleeps on all of them at once
// when they are all of one kind; a mixture, or an endpoint that cannot be slept on, leaves the
// caller to spin or yield.
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
    kSpin,       // some endpoint cannot be slept on, or kinds are mixed
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

  // Doorbells: raises this waiter's flag on every bell and fences the ringers. The caller must
  // then look for work once more (a ring before the flag went up is not heard) and either sleep()
  // or clear(). False, with nothing raised, when the set is not of doorbells.
  bool arm();
  // Sleeps until a descriptor is ready or a bell rang, for at most `timeout`; lowers the flags.
  // False when it could not sleep (a set of spinning endpoints, bells not armed, or a kernel
  // without futex_waitv): the caller yields instead.
  bool sleep(std::chrono::microseconds timeout);

 private:
  void disarm();
  void join(Method m) {
    if (method_ == Method::kNone)
      method_ = m;
    else if (method_ != m)
      method_ = Method::kSpin;
  }

  Method method_ = Method::kNone;
  bool armed_ = false;
  std::vector<pollfd> fds_;
  std::vector<BellWait> bells_;
};

}  // namespace braid::transport
