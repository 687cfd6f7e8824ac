#include "transport/any_wait.h"

#include <atomic>

#ifdef BRAID_HAVE_URING
#include <linux/futex.h>
#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>

#include "base/thread_local.h"
#endif

namespace braid::transport {

namespace {
#ifdef BRAID_HAVE_URING
std::atomic<bool> unsupported{false};
#else
std::atomic<bool> unsupported{true};
#endif
}  // namespace

bool canWaitForAny() { return !unsupported.load(std::memory_order_relaxed); }

#ifdef BRAID_HAVE_URING

namespace {

// io_uring's futex_waitv request (Linux 6.7): the number is the kernel's ABI; the liburing this
// builds against may predate it, so the request is filled in by hand (waitForAny).
constexpr uint8_t kOpFutexWaitv = 53;
// Requests a thread's ring holds at once. A wait on more descriptors than fit (with the bells'
// request and the cancellation) yields instead: a rank with 126 sockets to watch at once.
constexpr unsigned kEntries = 128;
// Tags of the requests' completions: a poll's is its descriptor's index.
constexpr uint64_t kBellsTag = UINT64_MAX - 1;
constexpr uint64_t kCancelTag = UINT64_MAX;

// Each waiting thread's ring (a rank's calling thread, a communicator's progress thread), made
// on its first wait and kept: setting one up costs more than a wait. A child of fork() makes its
// own: the ring it inherited is its parent's too.
class ThreadRing {
 public:
  const pid_t owner = getpid();

  ThreadRing() {
    if (io_uring_queue_init(kEntries, &ring_, 0) != 0) return;
    made_ = true;
    io_uring_probe* probe = io_uring_get_probe_ring(&ring_);
    usable_ = probe && io_uring_opcode_supported(probe, IORING_OP_POLL_ADD) &&
              io_uring_opcode_supported(probe, IORING_OP_ASYNC_CANCEL) &&
              io_uring_opcode_supported(probe, kOpFutexWaitv);
    if (probe) io_uring_free_probe(probe);
  }
  ~ThreadRing() {
    if (made_) io_uring_queue_exit(&ring_);
  }
  ThreadRing(const ThreadRing&) = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;

  bool usable() const { return usable_; }
  io_uring* get() { return &ring_; }

 private:
  io_uring ring_{};
  bool made_ = false;
  bool usable_ = false;
};

}  // namespace

AnyWait waitForAny(std::span<const pollfd> fds, std::span<const BellWait> bells,
                   std::chrono::microseconds timeout) {
  if (unsupported.load(std::memory_order_relaxed) || fds.size() + 2 > kEntries ||
      bells.size() > FUTEX_WAITV_MAX || (fds.empty() && bells.empty()))
    return AnyWait::kCannot;
  std::unique_ptr<ThreadRing>& mine = perThread<std::unique_ptr<ThreadRing>>();
  if (!mine || mine->owner != getpid()) mine = std::make_unique<ThreadRing>();
  ThreadRing& tr = *mine;
  if (!tr.usable()) {
    unsupported.store(true, std::memory_order_relaxed);
    return AnyWait::kCannot;
  }
  io_uring* ring = tr.get();

  for (size_t i = 0; i < fds.size(); ++i) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    io_uring_prep_poll_add(sqe, fds[i].fd, static_cast<unsigned>(fds[i].events));
    io_uring_sqe_set_data64(sqe, i);
  }
  // The kernel copies the list when the request is submitted.
  futex_waitv waits[FUTEX_WAITV_MAX] = {};
  if (!bells.empty()) {
    for (size_t i = 0; i < bells.size(); ++i) {
      waits[i].val = bells[i].value;
      waits[i].uaddr = reinterpret_cast<uintptr_t>(&bells[i].doorbell->bell);
      waits[i].flags = FUTEX_32;  // shared: the bells live in memory other processes map
    }
    // Every other field 0: no flags for the request, and the list's own per futex.
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    io_uring_prep_rw(kOpFutexWaitv, sqe, 0, waits, static_cast<unsigned>(bells.size()), 0);
    io_uring_sqe_set_data64(sqe, kBellsTag);
  }
  size_t outstanding = fds.size() + (bells.empty() ? 0 : 1);

  __kernel_timespec ts{};
  ts.tv_sec = timeout.count() / 1000000;
  ts.tv_nsec = (timeout.count() % 1000000) * 1000;
  io_uring_cqe* first = nullptr;
  // Returns on the first completion or at the timeout (-ETIME), or early on a signal: all three
  // end the wait, and what completed is read below.
  io_uring_submit_and_wait_timeout(ring, &first, 1, &ts, nullptr);

  bool woken = false, cannot = false, cancelled = false;
  auto reap = [&] {
    unsigned head, seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(ring, head, cqe) {
      ++seen;
      if (cqe->user_data == kCancelTag) {
        cancelled = true;
        continue;
      }
      --outstanding;
      if (cqe->res == -ECANCELED) continue;
      // A futex request the kernel refuses (-EINVAL, -EOPNOTSUPP) says this kernel cannot; any
      // other end of it (woken, or -EAGAIN: a bell rang before the wait began) is a wake, and so
      // is a poll's (its events, or an error on the descriptor, which the endpoint reports).
      if (cqe->user_data == kBellsTag && (cqe->res == -EINVAL || cqe->res == -EOPNOTSUPP))
        cannot = true;
      else
        woken = true;
    }
    io_uring_cq_advance(ring, seen);
  };
  reap();
  if (outstanding > 0) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
    io_uring_sqe_set_data64(sqe, kCancelTag);
    io_uring_submit(ring);
    while (outstanding > 0 || !cancelled) {
      io_uring_cqe* cqe = nullptr;
      const int r = io_uring_wait_cqe(ring, &cqe);
      if (r == -EINTR) continue;
      if (r != 0) {  // not expected of a healthy ring: stop using io_uring in this process
        cannot = true;
        break;
      }
      reap();
    }
  }
  if (cannot) {
    unsupported.store(true, std::memory_order_relaxed);
    return AnyWait::kCannot;
  }
  return woken ? AnyWait::kWoken : AnyWait::kTimedOut;
}

#else  // !BRAID_HAVE_URING

AnyWait waitForAny(std::span<const pollfd>, std::span<const BellWait>, std::chrono::microseconds) {
  return AnyWait::kCannot;
}

#endif

}  // namespace braid::transport
