// Which communicators each thread is inside a call on, so that ncclCommAbort and
// ncclCommDestroy can wait for those calls to leave before they free anything.
//
// Entering and leaving a call are plain stores to a slot of the calling thread's own, not
// atomic read-modify-writes on a counter every thread shares (two of those were a quarter of an
// 8-byte AllReduce on one rank). A caller must still not read the abort flag before its entry
// is visible to an aborter (store-load order, which x86 only gives with a fence); instead of
// a fence on every call, the rare waiter makes every thread of the process fence once with
// membarrier(2) before it reads the slots: the asymmetric fence of user-space RCU. Where
// membarrier is missing (old kernel, seccomp), callers fence themselves.
#pragma once

struct ncclComm;

namespace braid::calls {

// Marks this thread inside a call on `comm`. The token is for leave().
int enter(const ncclComm* comm);
void leave(const ncclComm* comm, int token);

// True while some thread is inside a call on `comm`. The first call of a wait must come after
// the waiter's own stores that callers have to see (the abort flag): it fences every thread.
bool inFlight(const ncclComm* comm, bool firstLook);

}  // namespace braid::calls
