// Helpers shared by the transport tests: deterministic payloads, a bounded drive loop, and a
// sink that checks the delivery contract.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "transport/transport.h"

namespace braid::testing {

// Byte i of message `msg` from `rank`: differs between messages, ranks and offsets, so a
// misplaced, reordered or duplicated piece shows up.
inline uint8_t patternByte(int rank, uint64_t msg, size_t i) {
  uint64_t x = (msg + 1) * 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(rank) << 56) ^ (i / 8);
  x ^= x >> 29;
  return static_cast<uint8_t>(x >> (8 * (i % 8)));
}
inline void fillPattern(std::vector<uint8_t>& buf, int rank, uint64_t msg) {
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = patternByte(rank, msg, i);
}
// Index of the first wrong byte, or -1.
inline int64_t firstMismatch(const std::vector<uint8_t>& buf, int rank, uint64_t msg) {
  for (size_t i = 0; i < buf.size(); ++i)
    if (buf[i] != patternByte(rank, msg, i)) return static_cast<int64_t>(i);
  return -1;
}

// How many times longer than usual a deadline that only keeps a test from hanging may be:
// BRAID_TEST_TIME_SCALE, which the sanitizer trees' test presets set (their code runs several
// times slower); 1 where unset.
inline int testTimeScale() {
  const char* s = std::getenv("BRAID_TEST_TIME_SCALE");
  const int scale = s ? std::atoi(s) : 1;
  return scale > 0 ? scale : 1;
}

// Progresses until the endpoint counted `sends` sends and `recvs` receives, or fails, or the
// deadline passes (a test must fail, not hang).
inline Status drive(transport::Endpoint& ep, uint64_t sends, uint64_t recvs,
                    int timeoutMs = 30000) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs) * testTimeScale();
  while (ep.sendsCompleted() < sends || ep.recvsCompleted() < recvs) {
    const uint64_t before = ep.sendsCompleted() + ep.recvsCompleted();
    BRAID_TRY(ep.progress());
    // Tests share two cores with other work: let the peer run instead of spinning a timeslice.
    if (ep.sendsCompleted() + ep.recvsCompleted() == before) std::this_thread::yield();
    if (std::chrono::steady_clock::now() > deadline)
      return {ncclSystemError, "test drive loop timed out"};
  }
  return Status::Ok();
}

// Copies what it is given into `data` and checks the contract: pieces in increasing offset
// order, contiguous, inside the message, each byte once.
class CheckingSink : public transport::RecvSink {
 public:
  explicit CheckingSink(size_t bytes) : data(bytes) {}
  void consume(size_t offset, const void* p, size_t n) override {
    if (offset != next || offset + n > data.size() || n == 0) ok = false;
    if (next % 16) ++misaligned;  // a piece followed by another must end on 16 bytes
    if (offset + n <= data.size()) std::memcpy(data.data() + offset, p, n);
    next = offset + n;
    ++pieces;
  }
  bool complete() const { return ok && next == data.size(); }

  std::vector<uint8_t> data;
  size_t next = 0;
  size_t pieces = 0;
  size_t misaligned = 0;
  bool ok = true;
};

// Both ranks run this at once: post every send (message i has sizes[i] bytes) and every receive,
// then drive, then check what arrived. With sinks, receives go through CheckingSinks; with
// wholeBlocks they must also see pieces of whole 16-byte blocks but for the last (the rings'
// promise, beyond the endpoint contract).
inline Status exchange(transport::Endpoint& ep, int rank, const std::vector<size_t>& sizes,
                       bool useSinks = false, bool wholeBlocks = false) {
  const size_t n = sizes.size();
  std::vector<std::vector<uint8_t>> out(n), in(n);
  std::vector<std::unique_ptr<CheckingSink>> sinks(n);
  const uint64_t sends0 = ep.sendsCompleted(), recvs0 = ep.recvsCompleted();
  for (size_t i = 0; i < n; ++i) {
    out[i].resize(sizes[i]);
    fillPattern(out[i], rank, i);
    BRAID_TRY(ep.postSend(out[i].data(), out[i].size()));
  }
  for (size_t i = 0; i < n; ++i) {
    if (useSinks) {
      sinks[i] = std::make_unique<CheckingSink>(sizes[i]);
      BRAID_TRY(ep.postRecv(nullptr, sizes[i], sinks[i].get()));
    } else {
      in[i].resize(sizes[i]);
      BRAID_TRY(ep.postRecv(in[i].data(), in[i].size(), nullptr));
    }
  }
  BRAID_TRY(drive(ep, sends0 + n, recvs0 + n));
  for (size_t i = 0; i < n; ++i) {
    if (useSinks) {
      if (!sinks[i]->complete())
        return {ncclInternalError, strfmt("message %zu: sink saw a gap, overlap or overrun", i)};
      if (wholeBlocks && sinks[i]->misaligned)
        return {ncclInternalError, strfmt("message %zu: %zu pieces not a multiple of 16 bytes", i,
                                          sinks[i]->misaligned)};
      in[i] = std::move(sinks[i]->data);
    }
    int64_t bad = firstMismatch(in[i], 1 - rank, i);
    if (bad >= 0)
      return {ncclInternalError, strfmt("message %zu (%zu bytes): wrong byte at offset %lld", i,
                                        sizes[i], static_cast<long long>(bad))};
  }
  return Status::Ok();
}

// Two ranks of this process, on one host: one pid, two "processes" as the transports see them.
inline transport::PeerInfo localPeer(int rank) {
  transport::PeerInfo p;
  p.rank = rank;
  p.pid = static_cast<int32_t>(getpid());
  p.hostHash = 0x1234;
  p.processHash = 0x5678 + static_cast<uint64_t>(rank);
  return p;
}

// Two transports and the endpoints they connected, rank 0's and rank 1's.
struct EndpointPair {
  std::unique_ptr<transport::Transport> t0, t1;
  std::unique_ptr<transport::Endpoint> e0, e1;
};

// The three phases of transport/transport.h between t0 (rank 0) and t1 (rank 1) in this process;
// the two connects run at once, since one may wait for the other's connections.
inline EndpointPair connectLocally(std::unique_ptr<transport::Transport> t0,
                                   std::unique_ptr<transport::Transport> t1) {
  using transport::Blob;
  EndpointPair p{std::move(t0), std::move(t1), nullptr, nullptr};
  Blob b0, b1;
  Status st = p.t0->listen(localPeer(0), localPeer(1), &b0);
  EXPECT_TRUE(st.ok()) << st.message();
  st = p.t1->listen(localPeer(1), localPeer(0), &b1);
  EXPECT_TRUE(st.ok()) << st.message();
  Status s1;
  std::thread peer(
      [&] { s1 = p.t1->connect(localPeer(1), localPeer(0), b0, Waiter(20000, nullptr), &p.e1); });
  st = p.t0->connect(localPeer(0), localPeer(1), b1, Waiter(20000, nullptr), &p.e0);
  peer.join();
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(s1.ok()) << s1.message();
  EXPECT_TRUE(p.t0->finishConnect().ok());
  EXPECT_TRUE(p.t1->finishConnect().ok());
  return p;
}

// fn(endpoint, rank) on both ends at once, each on its own thread; both must succeed.
template <typename Fn>
void onBoth(EndpointPair& p, Fn fn) {
  ASSERT_TRUE(p.e0 && p.e1);
  Status s1;
  std::thread peer([&] { s1 = fn(*p.e1, 1); });
  Status s0 = fn(*p.e0, 0);
  peer.join();
  EXPECT_TRUE(s0.ok()) << "rank 0: " << s0.message();
  EXPECT_TRUE(s1.ok()) << "rank 1: " << s1.message();
}

}  // namespace braid::testing
