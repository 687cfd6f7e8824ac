#include "transport/shm/doorbell.h"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace braid {

// Shared futexes (no FUTEX_PRIVATE_FLAG): the bells live in memory other processes map.
void Doorbell::ring() {
  bell.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&bell), FUTEX_WAKE, INT32_MAX, nullptr, nullptr,
          0);
}

namespace {
std::atomic<bool> unsupported{false};
}  // namespace

void registerForBells() {
  static const bool registered =
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
  if (registered) detail::fencedBySleepers.store(true, std::memory_order_relaxed);
}

void fenceRingers() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
}

bool canWaitForBells() {
#ifdef SYS_futex_waitv
  return !unsupported.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

bool waitForBells(std::span<const BellWait> bells, std::chrono::microseconds timeout) {
#ifdef SYS_futex_waitv
  if (bells.empty() || bells.size() > FUTEX_WAITV_MAX ||
      unsupported.load(std::memory_order_relaxed))
    return false;
  futex_waitv waits[FUTEX_WAITV_MAX] = {};
  for (size_t i = 0; i < bells.size(); ++i) {
    waits[i].val = bells[i].value;
    waits[i].uaddr = reinterpret_cast<uintptr_t>(&bells[i].doorbell->bell);
    waits[i].flags = FUTEX_32;
  }
  timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  const long long ns = deadline.tv_nsec + static_cast<long long>(timeout.count()) * 1000;
  deadline.tv_sec += static_cast<time_t>(ns / 1000000000);
  deadline.tv_nsec = static_cast<long>(ns % 1000000000);
  if (syscall(SYS_futex_waitv, waits, bells.size(), 0, &deadline, CLOCK_MONOTONIC) < 0 &&
      errno == ENOSYS) {
    unsupported.store(true, std::memory_order_relaxed);
    return false;
  }
  return true;
#else
  (void)bells;
  (void)timeout;
  return false;
#endif
}

}  // namespace braid
