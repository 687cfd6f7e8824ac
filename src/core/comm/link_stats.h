// Telemetry of a communicator: what each connection carried and what its calls cost. Counted
// where the executor and the topology probe hand operations to an endpoint, so the numbers mean
// the same on every transport: the bytes and messages Braid asked the connection to move (the
// executor's call signatures included; a transport's own framing and a TLS layer's records not).
// Read by braidCommGetStats / braidCommGetPeerStats (include/braid/braid.h) from any thread,
// written by the one thread that runs the communicator's operations at a time (as
// PeerChannel's operation numbers are), so a relaxed load and store is all an update costs.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "transport/transport.h"

namespace braid {

// A timed call updates a connection's online model when it moved at least this much on it
// (in the larger direction): below it, a message's latency and the executor's turns are most
// of the time, not the link's rate.
inline constexpr uint64_t kModelMinBytes = uint64_t{256} << 10;
// The model's decay: each sample weighs this much against the history (about the last eight
// calls).
inline constexpr double kModelWeight = 1.0 / 8;

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
  void set(uint64_t v) { value_.store(v, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A measured value (a double) of one writer and many readers; 0 until first set.
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge& other) : bits_(other.bits_.load(std::memory_order_relaxed)) {}
  Gauge& operator=(const Gauge& other) {
    bits_.store(other.bits_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }
  void set(double v) { bits_.store(std::bit_cast<uint64_t>(v), std::memory_order_relaxed); }
  double get() const { return std::bit_cast<double>(bits_.load(std::memory_order_relaxed)); }

 private:
  std::atomic<uint64_t> bits_{0};  // the bits of 0.0
};

// One connection (a peer of the communicator).
struct LinkStats {
  Counter bytesSent;
  Counter bytesReceived;
  Counter messagesSent;
  Counter messagesReceived;
  Counter errors;  // operations on it that failed (its endpoint's error, or a peer lost on it)
  // Timed calls only (the executor's, core/exec/run.cc), in nanoseconds: from a call's start to
  // its last operation on this connection done, summed (busy); of that, the waits in which
  // nothing moved on any connection while this one had operations in flight (stall; from where
  // the wait first slept or reached its checks: Run::startStall); and how
  // much later this peer's first message of a call came than the first message from any peer
  // (skew, over skewCalls calls: those that received from two peers or more).
  Counter busyNs;
  Counter stallNs;
  Counter skewNs;
  Counter skewCalls;
  // The online link model: microseconds per MiB this connection took while it moved data
  // (busy less stall, over the larger direction's bytes), a decaying average of the timed calls
  // that moved kModelMinBytes or more on it; and what the cost model prices for the pair then
  // (its link at the pair's topology level, which `level` names: 0 one host, 1 one rack, ...).
  Gauge usPerMiB;
  Gauge modelUsPerMiB;
  Counter level;
  // The kernel's view (transport::LinkSample), as last sampled by the executor.
  Counter retransmits;
  Counter rttUs;
  Counter cwnd;
  // The path's own rate: microseconds per MiB acknowledged while the kernel had this side's data
  // to send and the receiver's window open, between two samples that saw kModelMinBytes or more
  // acknowledged, decaying as usPerMiB. Unlike usPerMiB it leaves out every wait of the
  // algorithm (nothing queued in the socket), so it says what the link does, not how a schedule
  // used it. 0 until measured, and on transports without a kernel path.
  Gauge pathUsPerMiB;
  uint64_t ackedAtSample = 0;  // the sample's counters last time (the executor's thread only)
  uint64_t sendingUsAtSample = 0;

  // One timed call's figures on this connection, and the model's price for the pair now.
  struct Call {
    uint64_t busyNs, stallNs;
    uint64_t bytes;  // the larger direction's
    int64_t skewNs;  // -1: not measured in this call
  };
  void record(const Call& call, int pairLevel, double pairModelUsPerMiB);
  void sampled(const transport::LinkSample& sample) {
    retransmits.set(sample.retransmits);
    rttUs.set(sample.rttUs);
    cwnd.set(sample.cwnd);
    if (sample.bytesAcked >= ackedAtSample + kModelMinBytes &&
        sample.sendingUs > sendingUsAtSample) {
      const double v = static_cast<double>(sample.sendingUs - sendingUsAtSample) * 1048576.0 /
                       static_cast<double>(sample.bytesAcked - ackedAtSample);
      const double before = pathUsPerMiB.get();
      pathUsPerMiB.set(before == 0 ? v : before + kModelWeight * (v - before));
    }
    if (sample.bytesAcked >= ackedAtSample + kModelMinBytes || sample.bytesAcked < ackedAtSample) {
      ackedAtSample = sample.bytesAcked;
      sendingUsAtSample = sample.sendingUs;
    }
  }

  void sent(size_t bytes) {
    bytesSent.add(bytes);
    messagesSent.add(1);
  }
  void received(size_t bytes) {
    bytesReceived.add(bytes);
    messagesReceived.add(1);
  }
};

// The calls made with a per-call config's userProfilerTag (NCCL 2.32), per tag: the first kMax
// distinct nonzero tags of a communicator, each counted as CallStats counts calls, plus the
// call's data (count x type size on this rank); calls under later tags only in `untracked`. A
// tagged call takes a lock (untagged ones never get here), so readers see whole entries.
class TagStats {
 public:
  static constexpr size_t kMax = 64;
  struct Entry {
    uint64_t tag = 0;
    uint64_t calls = 0, failed = 0, timed = 0, nanoseconds = 0, bytes = 0;
  };

  // One call under `tag` (nonzero): `ns` counts when `timed`.
  void record(uint64_t tag, bool ok, bool timed, uint64_t ns, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return e.tag == tag; });
    if (it == entries_.end()) {
      if (entries_.size() == kMax) {
        ++untracked_;
        return;
      }
      it = entries_.insert(entries_.end(), Entry{tag});
    }
    it->calls += 1;
    it->failed += ok ? 0 : 1;
    it->timed += timed ? 1 : 0;
    it->nanoseconds += timed ? ns : 0;
    it->bytes += bytes;
  }
  // The entries in the order their tags were first seen.
  std::vector<Entry> snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_;
  }
  uint64_t untracked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return untracked_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  uint64_t untracked_ = 0;
};

// The operations the executor ran on a communicator (each collective, ncclSend and ncclRecv),
// counted once each when it ends.
struct CallStats {
  Counter calls;
  Counter failed;
  Counter timed;        // of them, those timed (the executor times calls of 64 KiB or more)
  Counter nanoseconds;  // from the start of their execution to its end, summed (timed ones)
  TagStats tags;        // the tagged ones again, per tag

  // One call ended (`ns`: its time where it was timed; `bytes`: its count times its type's size).
  void ended(uint64_t tag, bool ok, bool wasTimed, uint64_t ns, uint64_t bytes) {
    calls.add(1);
    if (!ok) failed.add(1);
    if (tag) tags.record(tag, ok, wasTimed, ns, bytes);
  }
};

}  // namespace braid
