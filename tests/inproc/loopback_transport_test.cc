// The loopback transport between two threads, beyond the endpoint contract that
// tests/inproc/endpoint_contract_test.cc checks for every transport: the rings' 16-byte pieces,
// and handles from another transport instance or process.
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

using Pair = braid::testing::EndpointPair;
using braid::testing::onBoth;

PeerInfo info(int rank) { return braid::testing::localPeer(rank); }

// Ring size and direct threshold come from the environment, read at listen/connect.
void setKnobs(size_t ringBytes, size_t directMin) {
  setenv("BRAID_SHM_BUFFSIZE", std::to_string(ringBytes).c_str(), 1);
  setenv("BRAID_LOOPBACK_DIRECT_MIN_BYTES", std::to_string(directMin).c_str(), 1);
}

Pair connectPair() {
  return braid::testing::connectLocally(makeLoopbackTransport(), makeLoopbackTransport());
}

// The rings' promise beyond the endpoint contract (tests/inproc/endpoint_contract_test.cc): a
// sink sees pieces of whole 16-byte blocks but for a message's last, whatever the ring's size and
// whether large messages go direct.
TEST(Loopback, SinkPiecesAreWhole16ByteBlocksAtEverySize) {
  for (size_t ring : {size_t{4096}, size_t{4} << 20}) {
    for (size_t directMin : {size_t{0}, size_t{1024}}) {
      setKnobs(ring, directMin);
      Pair p = connectPair();
      ASSERT_TRUE(p.e0 && p.e1);
      const std::vector<size_t> sizes = {0, 100, 3 * ring + 5, size_t{9} << 20};
      onBoth(p, [&](Endpoint& ep, int rank) { return exchange(ep, rank, sizes, true, true); });
    }
  }
}

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

// (Garbage and forged handles: the endpoint contract.)
TEST(Loopback, HandlesOfAnotherTransportOrProcessAreRejected) {
  auto t = makeLoopbackTransport();
  Blob mine;
  ASSERT_TRUE(t->listen(info(0), info(1), &mine).ok());
  std::unique_ptr<Endpoint> ep;
  // A handle whose ring was already taken, or whose transport is gone, is refused.
  auto other = makeLoopbackTransport();
  Blob theirs;
  ASSERT_TRUE(other->listen(info(1), info(0), &theirs).ok());
  other.reset();
  EXPECT_EQ(t->connect(info(0), info(1), theirs, Waiter(), &ep).code(), ncclInvalidUsage);
  EXPECT_FALSE(ep);
  PeerInfo sameProcess = info(1);
  sameProcess.processHash = info(0).processHash;
  EXPECT_TRUE(t->canConnect(info(0), sameProcess));
  EXPECT_FALSE(t->canConnect(info(0), info(1)));  // another process
}

}  // namespace
}  // namespace braid::transport
