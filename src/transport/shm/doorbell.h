// Doorbells: sleeping until a peer in shared memory does something, instead of spinning.
// A sleeper raises its flag, reads the bell's value, looks once more for work, and waits
// (futex_waitv, any of several bells) while the value is unchanged; a peer that moved data
// checks the flag and, when it is up, rings: bumps the value and wakes the waiters. The flag
// is raised with a full fence and checked after one, so a ring is missed only if the sleeper's
// last look saw the work (Dekker's argument); waits are bounded by a timeout all the same.
//
// The peer's fence is on the path of every message (a full fence waits for the message's own
// stores to reach the cache: ~10 ns of an 8-byte AllReduce), the sleeper's only before a sleep.
// So where the kernel allows, the sleeper fences for both: every process that uses doorbells
// registers for membarrier(2), and a sleeper's fenceRingers() makes all of them execute a
// barrier (the asymmetric fence of user-space RCU); a registered process then checks flags with
// a compiler barrier only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>

namespace braid {

namespace detail {
// True once this process is registered: sleepers' fenceRingers() reaches its threads.
inline std::atomic<bool> fencedBySleepers{false};
}  // namespace detail

// Registers this process for the sleepers' fence (once; every communicator's init calls it).
void registerForBells();

struct Doorbell {
  std::atomic<uint32_t> sleeping{0};  // the sleeper's flag
  std::atomic<uint32_t> bell{0};      // the futex word

  // The peer's side, after it moved data.
  void ringIfSleeping() {
    if (detail::fencedBySleepers.load(std::memory_order_relaxed))
      std::atomic_signal_fence(std::memory_order_seq_cst);
    else
      std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleeping.load(std::memory_order_relaxed) != 0) ring();
  }
  void ring();
};

// What a sleeper waits on: one bell and the value it read when it raised the flag.
struct BellWait {
  Doorbell* doorbell;
  uint32_t value;
};

// The sleeper's side: raises the flag and returns what to wait on. The caller then looks for
// work once more, and either lowers the flag (work found) or calls waitForBells.
inline BellWait raiseFlag(Doorbell* d) {
  d->sleeping.store(1, std::memory_order_seq_cst);
  return {d, d->bell.load(std::memory_order_seq_cst)};
}
inline void lowerFlag(Doorbell* d) { d->sleeping.store(0, std::memory_order_relaxed); }
// The sleeper's side of the fence, after raising its flags and before its last look for work:
// every registered process's threads execute a barrier. Where that fails, a ringer that skipped
// its fence may miss the flag, and the sleep ends at its timeout instead.
void fenceRingers();

// Sleeps until one of the bells rang since its value was read, or the timeout passed. False
// when the kernel cannot wait on several futexes (futex_waitv, Linux 5.16): the caller yields.
bool waitForBells(std::span<const BellWait> bells, std::chrono::microseconds timeout);
// False once waitForBells found the kernel without futex_waitv.
bool canWaitForBells();

}  // namespace braid
