// The executor's tuning constants, each with what it rests on (measured on the 2-core benchmark
// machine: docs/architecture.md, docs/local_transports.md).
#pragma once

#include <chrono>
#include <cstddef>

namespace braid::exec {

// The longest a waiting rank sleeps (in poll or on doorbells) before it checks for timeouts,
// aborts and failures again.
constexpr std::chrono::microseconds kSleep{2000};
// How long a rank yields before it sleeps on doorbells (shared memory).
constexpr std::chrono::microseconds kBellsAfter{200};
// Calls whose own data (count x type size) is this large cannot keep their output in the caches:
// their last writes to it may go around the cache (Endpoint::postRecv's `streamed`).
constexpr size_t kStreamOutputBytes = 8 << 20;
// Calls from this size also reduce into their output around the cache (Run::streamed): 2 ranks,
// ring, 64-256 MiB 10-13% faster, 8-16 MiB 6-20% slower (partial sums still in the 32 MiB L3 when
// sent on); 4 ranks, ring, rhd and tree at 64-256 MiB as fast or faster.
constexpr size_t kStreamReduceBytes = 32 << 20;
// How long a rank waits before it sends the signatures it holds back (see readyToSend).
constexpr std::chrono::milliseconds kFlushSignaturesAfter{5};
// How often a waiting rank listens for another rank's failure (ncclComm::heardFailure).
constexpr std::chrono::milliseconds kListenEvery{2};

}  // namespace braid::exec
