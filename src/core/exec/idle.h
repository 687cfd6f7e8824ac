// What a run does while nothing moves: how long it keeps spinning before it yields or sleeps,
// and when its periodic checks fall due (timeouts and aborts, held-back signatures, another
// rank's failure). One small class that owns the clocks of a run's waits; the run loop only asks
// it. A round that moves data ends a wait; the next round that moves nothing starts another.
#pragma once

#include <chrono>
#include <cstdint>

#include "core/exec/tuning.h"

namespace braid::exec {

class IdlePolicy {
 public:
  using Clock = std::chrono::steady_clock;

  // A new run: spin this many idle rounds before yielding or sleeping (ncclComm::spinRounds).
  void start(uint32_t spinRounds) {
    spinRounds_ = spinRounds;
    idle_ = 0;
    flushSignatures_ = false;
    lastListen_ = {};
  }
  void moved() { idle_ = 0; }
  // A round that moved nothing; true when it starts a wait (timeouts then count from now).
  bool idleRound() {
    if (idle_++ != 0) return false;
    waitTimed_ = false;
    return true;
  }
  bool spinning() const { return idle_ <= spinRounds_; }
  // Past spinning: whether this wait has yielded for `after` (its first yield starts the clock).
  bool yieldedFor(Clock::duration after) {
    const auto now = Clock::now();
    if (idle_ == spinRounds_ + 1) yieldingSince_ = now;
    return now - yieldingSince_ >= after;
  }
  // The periodic checks: every 256 idle rounds, and after every sleep. Idle rounds last anything
  // from nanoseconds to a scheduler slice (however many ranks share the cores), so what is
  // costly is timed by the clock instead, read only here.
  bool checksDue(bool slept) const { return (idle_ & 255) == 0 || slept; }
  // At a check: updates the clocks; true when it is time to listen for another rank's failure
  // (a system call per communicator, so every kListenEvery of waiting).
  bool check() {
    const auto now = Clock::now();
    if (!waitTimed_) {  // timed from the wait's first check, so that short waits read no clock
      waitSince_ = now;
      waitTimed_ = true;
    } else if (!flushSignatures_ && now - waitSince_ >= kFlushSignaturesAfter) {
      flushSignatures_ = true;
    }
    if (lastListen_ == Clock::time_point{}) lastListen_ = now;
    if (now - lastListen_ < kListenEvery) return false;
    lastListen_ = now;
    return true;
  }
  // Set once a wait of this run lasted kFlushSignaturesAfter: held-back signatures go at once.
  bool flushSignatures() const { return flushSignatures_; }

 private:
  uint32_t spinRounds_ = 0;
  uint32_t idle_ = 0;
  bool waitTimed_ = false;
  bool flushSignatures_ = false;
  Clock::time_point waitSince_{}, yieldingSince_{}, lastListen_{};
};

}  // namespace braid::exec
