#include "transport/wait.h"

#include "transport/any_wait.h"
#include "transport/transport.h"

namespace braid::transport {

void Endpoint::addWakeups(WaitSet& set) { set.cannotSleep(); }

void WaitSet::disarm() {
  for (const BellWait& b : bells_) lowerFlag(b.doorbell);
  armed_ = false;
}

bool WaitSet::arm() {
  if (method_ == Method::kDoorbells ? !canWaitForBells()
                                    : method_ != Method::kMixed || !canWaitForAny())
    return false;
  for (BellWait& b : bells_) b = raiseFlag(b.doorbell);
  fenceRingers();
  armed_ = true;
  return true;
}

bool WaitSet::sleep(std::chrono::microseconds timeout) {
  bool slept = false;
  if (method_ == Method::kFds) {
    ::poll(fds_.data(), fds_.size(), static_cast<int>(timeout.count() / 1000));
    slept = true;
  } else if (armed_ && method_ == Method::kMixed) {
    slept = waitForAny(fds_, bells_, timeout) != AnyWait::kCannot;
  } else if (armed_) {
    slept = waitForBells(bells_, timeout);
  }
  clear();
  return slept;
}

}  // namespace braid::transport
