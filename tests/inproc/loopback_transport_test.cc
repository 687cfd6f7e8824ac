// The loopback transport between two threads: FIFO order, size edge cases around the ring's
// capacity, many small messages, sinks, and the errors (size mismatch, peer gone, bad handle).
#include "transport/loopback/loopback_transport.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "transport_test_util.h"

namespace braid::transport {
namespace {

using braid::testing::CheckingSink;
using braid::testing::drive;
using braid::testing::exchange;
using Body = std::function<Status(Endpoint&, int)>;

struct Pair {
  std::unique_ptr<Transport> t0, t1;
  std::unique_ptr<Endpoint> e0, e1;
};

PeerInfo info(int rank) { return PeerInfo{rank, static_cast<int32_t>(getpid()), 0x1234, 0x5678}; }

// Ring size and direct threshold come from the environment, read at listen/connect.
void setKnobs(size_t ringBytes, size_t directMin) {
  setenv("BRAID_SHM_BUFFSIZE", std::to_string(ringBytes).c_str(), 1);
  setenv("BRAID_LOOPBACK_DIRECT_MIN_BYTES", std::to_string(directMin).c_str(), 1);
}

Pair connectPair() {
  Pair p;
  p.t0 = makeLoopbackTransport();
  p.t1 = makeLoopbackTransport();
  Blob b0, b1;
  EXPECT_TRUE(p.t0->canConnect(info(0), info(1)));
  Status st = p.t0->listen(info(0), info(1), &b0);
  EXPECT_TRUE(st.ok()) << st.message();
  st = p.t1->listen(info(1), info(0), &b1);
  EXPECT_TRUE(st.ok()) << st.message();
  st = p.t0->connect(info(0), info(1), b1, Waiter(), &p.e0);
  EXPECT_TRUE(st.ok()) << st.message();
  st = p.t1->connect(info(1), info(0), b0, Waiter(), &p.e1);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(p.t0->finishConnect().ok());
  EXPECT_TRUE(p.t1->finishConnect().ok());
  return p;
}

// Runs fn(endpoint, rank) on two threads at once and expects both to succeed.
template <typename Fn>
void onBoth(Pair& p, Fn fn) {
  Status s1;
  std::thread peer([&] { s1 = fn(*p.e1, 1); });
  Status s0 = fn(*p.e0, 0);
  peer.join();
  EXPECT_TRUE(s0.ok()) << "rank 0: " << s0.message();
  EXPECT_TRUE(s1.ok()) << "rank 1: " << s1.message();
}

struct Config {
  size_t ring;
  size_t directMin;
};
void PrintTo(const Config& c, std::ostream* os) { *os << "ring " << c.ring << ", directMin " << c.directMin; }

class LoopbackSizes : public ::testing::TestWithParam<Config> {};

TEST_P(LoopbackSizes, FifoAcrossRingBoundaries) {
  setKnobs(GetParam().ring, GetParam().directMin);
  Pair p = connectPair();
  ASSERT_TRUE(p.e0 && p.e1);
  const size_t ring = GetParam().ring;
  const std::vector<size_t> sizes = {0, 1, 7, 4096, ring + 1, 0, 3, size_t{64} << 20, 5};
  onBoth(p, [&](Endpoint& ep, int rank) { return exchange(ep, rank, sizes); });
  EXPECT_FALSE(p.e0->busy());
  EXPECT_EQ(p.e0->sendsCompleted(), sizes.size());
  EXPECT_EQ(p.e1->recvsCompleted(), sizes.size());
}

TEST_P(LoopbackSizes, SinkSeesEveryByteOnceInOrder) {
  setKnobs(GetParam().ring, GetParam().directMin);
  Pair p = connectPair();
  ASSERT_TRUE(p.e0 && p.e1);
  const std::vector<size_t> sizes = {0, 100, 3 * GetParam().ring + 5, size_t{9} << 20};
  onBoth(p, [&](Endpoint& ep, int rank) { return exchange(ep, rank, sizes, /*useSinks=*/true); });
}

TEST_P(LoopbackSizes, ManySmallMessages) {
  setKnobs(GetParam().ring, GetParam().directMin);
  Pair p = connectPair();
  ASSERT_TRUE(p.e0 && p.e1);
  std::vector<size_t> sizes;
  for (size_t i = 0; i < 5000; ++i) sizes.push_back((i * 7919) % 61);
  onBoth(p, [&](Endpoint& ep, int rank) {
    // Several rounds on the same endpoints: the counters and ring positions carry over.
    for (int round = 0; round < 3; ++round) BRAID_TRY(exchange(ep, rank, sizes));
    return Status::Ok();
  });
}

// Messages near half the ring go in whole and need most of it free: the producer must look
// for space again when its cached view of the consumer says it is short (a hang otherwise).
TEST_P(LoopbackSizes, MessagesNearHalfTheRing) {
  setKnobs(GetParam().ring, GetParam().directMin);
  Pair p = connectPair();
  ASSERT_TRUE(p.e0 && p.e1);
  const size_t half = GetParam().ring / 2;
  std::vector<size_t> sizes;
  const size_t count = GetParam().ring > 65536 ? 16 : 200;
  for (size_t i = 0; i < count; ++i) sizes.push_back(half - 40 + (i * 13) % 48);
  Body body = [&](Endpoint& ep, int rank) { return exchange(ep, rank, sizes); };
  onBoth(p, body);
}

INSTANTIATE_TEST_SUITE_P(Rings, LoopbackSizes,
                         ::testing::Values(Config{4 << 20, 0}, Config{4 << 20, 16384},
                                           Config{4096, 0}, Config{4096, 1024}),
                         [](const auto& info) {
                           return "ring" + std::to_string(info.param.ring) + "_direct" +
                                  std::to_string(info.param.directMin);
                         });

// One thread plays both sides, so the interleaving is fixed: the consumer releases the ring
// just past a 100-byte message (an odd position) while the producer waits for room for the rest
// of a large one. The producer must still cut pieces on 16-byte boundaries.
TEST(Loopback, SinkPiecesAreWhole16ByteBlocks) {
  setKnobs(4096, 0);
  Pair p = connectPair();
  ASSERT_TRUE(p.e0 && p.e1);
  std::vector<uint8_t> small(100, 9), smallIn(100), large(20000);
  braid::testing::fillPattern(large, 0, 1);
  CheckingSink sink(large.size());
  ASSERT_TRUE(p.e0->postSend(small.data(), small.size()).ok());
  ASSERT_TRUE(p.e0->postSend(large.data(), large.size()).ok());
  ASSERT_TRUE(p.e0->progress().ok());  // fills the ring
  ASSERT_TRUE(p.e1->postRecv(smallIn.data(), smallIn.size(), nullptr).ok());
  ASSERT_TRUE(p.e1->progress().ok());  // frees only the small message's bytes
  ASSERT_TRUE(p.e0->progress().ok());
  ASSERT_TRUE(p.e1->postRecv(nullptr, large.size(), &sink).ok());
  for (int i = 0; i < 1000 && p.e1->recvsCompleted() < 2; ++i) {
    ASSERT_TRUE(p.e0->progress().ok());
    ASSERT_TRUE(p.e1->progress().ok());
  }
  ASSERT_EQ(p.e1->recvsCompleted(), 2u);
  EXPECT_EQ(smallIn, small);
  EXPECT_TRUE(sink.complete());
  EXPECT_EQ(sink.misaligned, 0u) << "of " << sink.pieces << " pieces";
  EXPECT_EQ(sink.data, large);
}

TEST(Loopback, SizeMismatchIsAnError) {
  setKnobs(4 << 20, 16384);
  for (size_t big : {size_t{16}, size_t{1} << 20}) {  // through the ring, and direct
    Pair p = connectPair();
    std::vector<uint8_t> out(big), in(big + 1);
    ASSERT_TRUE(p.e0->postSend(out.data(), out.size()).ok());
    ASSERT_TRUE(p.e1->postRecv(in.data(), in.size(), nullptr).ok());
    ASSERT_TRUE(p.e0->progress().ok());
    Status st = drive(*p.e1, 0, 1, 5000);
    EXPECT_EQ(st.code(), ncclInvalidUsage) << st.message();
    EXPECT_NE(st.message().find("mismatch"), std::string::npos) << st.message();
    // The endpoint stays failed.
    EXPECT_FALSE(p.e1->progress().ok());
    EXPECT_FALSE(p.e1->postSend(out.data(), 1).ok());
  }
}

TEST(Loopback, PeerClosedIsARemoteError) {
  setKnobs(4 << 20, 16384);
  Pair p = connectPair();
  std::vector<uint8_t> in(64);
  ASSERT_TRUE(p.e0->postRecv(in.data(), in.size(), nullptr).ok());
  ASSERT_TRUE(p.e0->progress().ok());
  p.e1.reset();
  Status st = drive(*p.e0, 0, 1, 5000);
  EXPECT_EQ(st.code(), ncclRemoteError) << st.message();
}

TEST(Loopback, DataSentBeforeCloseIsStillDelivered) {
  setKnobs(4 << 20, 16384);
  Pair p = connectPair();
  std::vector<uint8_t> out(1000, 42), in(1000);
  ASSERT_TRUE(p.e1->postSend(out.data(), out.size()).ok());
  ASSERT_TRUE(drive(*p.e1, 1, 0).ok());
  p.e1.reset();
  ASSERT_TRUE(p.e0->postRecv(in.data(), in.size(), nullptr).ok());
  Status st = drive(*p.e0, 0, 1, 5000);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(in, out);
}

TEST(Loopback, BadHandlesAreRejected) {
  auto t = makeLoopbackTransport();
  Blob mine;
  ASSERT_TRUE(t->listen(info(0), info(1), &mine).ok());
  std::unique_ptr<Endpoint> ep;
  EXPECT_EQ(t->connect(info(0), info(1), Blob{1, 2, 3}, Waiter(), &ep).code(), ncclInvalidArgument);
  Blob forged = mine;
  forged[0] ^= 1;
  EXPECT_EQ(t->connect(info(0), info(1), forged, Waiter(), &ep).code(), ncclInvalidArgument);
  // A handle whose ring was already taken, or whose transport is gone, is refused.
  auto other = makeLoopbackTransport();
  Blob theirs;
  ASSERT_TRUE(other->listen(info(1), info(0), &theirs).ok());
  other.reset();
  EXPECT_EQ(t->connect(info(0), info(1), theirs, Waiter(), &ep).code(), ncclInvalidUsage);
  EXPECT_FALSE(ep);
  EXPECT_FALSE(t->canConnect(info(0), PeerInfo{1, 1, 0x1234, 0x9999}));
}

}  // namespace
}  // namespace braid::transport
