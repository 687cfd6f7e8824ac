// Telemetry of a communicator: what each connection carried and what its calls cost. Counted
// where the executor and the topology probe hand operations to an endpoint, so the numbers mean
// the same on every transport: the bytes and messages Braid asked the connection to move (the
// executor's call signatures included; a transport's own framing and a TLS layer's records not).
// Read by braidCommGetStats / braidCommGetPeerStats (include/braid/braid.h) from any thread,
// written by the one thread that runs the communicator's operations at a time (as
// PeerChannel's operation numbers are), so a relaxed load and store is all an update costs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace braid {

// One counter of one writer and many readers. Copying takes a snapshot (channels live in a
// vector).
class Counter {
 public:
  Counter() = default;
  Counter(const Counter& other) : value_(other.get()) {}
  Counter& operator=(const Counter& other) {
    value_.store(other.get(), std::memory_order_relaxed);
    return *this;
  }
  void add(uint64_t v) {
    value_.store(value_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }
  uint64_t get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// One connection (a peer of the communicator).
struct LinkStats {
  Counter bytesSent;
  Counter bytesReceived;
  Counter messagesSent;
  Counter messagesReceived;
  Counter errors;  // operations on it that failed (its endpoint's error, or a peer lost on it)

  void sent(size_t bytes) {
    bytesSent.add(bytes);
    messagesSent.add(1);
  }
  void received(size_t bytes) {
    bytesReceived.add(bytes);
    messagesReceived.add(1);
  }
};

// The operations the executor ran on a communicator (each collective, ncclSend and ncclRecv),
// counted once each when it ends.
struct CallStats {
  Counter calls;
  Counter failed;
  Counter timed;        // of them, those timed (the executor times calls of 64 KiB or more)
  Counter nanoseconds;  // from the start of their execution to its end, summed (timed ones)
};

}  // namespace braid
