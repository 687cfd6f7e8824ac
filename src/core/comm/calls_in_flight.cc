#include "core/comm/calls_in_flight.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "base/thread_local.h"

namespace braid::calls {
namespace {

// Calls nest (a split holds its parent while it makes the child): a few levels have slots, and
// deeper ones are listed under a lock (Deep).
constexpr int kSlots = 4;

struct ThreadCalls;

// Every thread's slots, for waiters to read. Never freed: threads may exit during process exit.
struct Registry {
  std::mutex mu;
  std::vector<ThreadCalls*> threads;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

struct ThreadCalls {
  std::atomic<const ncclComm*> slots[kSlots] = {};
  int depth = 0;

  ThreadCalls() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.threads.push_back(this);
  }
  ~ThreadCalls() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.threads.erase(std::find(r.threads.begin(), r.threads.end(), this));
  }
};

// The communicators of calls deeper than kSlots, one entry per call: a corner case.
struct Deep {
  std::mutex mu;
  std::vector<const ncclComm*> comms;
};
Deep& deep() {
  static Deep* d = new Deep;
  return *d;
}

// Whether waiters can fence every thread of the process (registered once, before first use).
bool asymmetric() {
  static const bool ok =
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return ok;
}

}  // namespace

int enter(const ncclComm* comm) {
  ThreadCalls& t = perThread<ThreadCalls>();
  const int token = t.depth++;
  if (token < kSlots) {
    t.slots[token].store(comm, std::memory_order_relaxed);
  } else {
    Deep& d = deep();
    std::lock_guard<std::mutex> lock(d.mu);  // a full fence too
    d.comms.push_back(comm);
  }
  // The entry before anything the call reads: the waiter's membarrier orders the two on the
  // waiter's side, so only the compiler needs telling here.
  if (asymmetric())
    std::atomic_signal_fence(std::memory_order_seq_cst);
  else
    std::atomic_thread_fence(std::memory_order_seq_cst);
  return token;
}

void leave(const ncclComm* comm, int token) {
  ThreadCalls& t = perThread<ThreadCalls>();
  --t.depth;
  if (token < kSlots) {
    t.slots[token].store(nullptr, std::memory_order_release);
    return;
  }
  Deep& d = deep();
  std::lock_guard<std::mutex> lock(d.mu);
  d.comms.erase(std::find(d.comms.begin(), d.comms.end(), comm));
}

bool inFlight(const ncclComm* comm, bool firstLook) {
  if (firstLook) {
    if (asymmetric())
      syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    else
      std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (const ThreadCalls* t : r.threads)
      for (const auto& slot : t->slots)
        if (slot.load(std::memory_order_acquire) == comm) return true;
  }
  Deep& d = deep();
  std::lock_guard<std::mutex> lock(d.mu);
  return std::find(d.comms.begin(), d.comms.end(), comm) != d.comms.end();
}

}  // namespace braid::calls
