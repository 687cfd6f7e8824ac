// Algorithm selection: NCCL_ALGO's syntax, and the cost model's choice on a topology.
#include <gtest/gtest.h>

#include "algos/cost_model.h"
#include "algos/selector.h"
#include "algos/topology.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace braid::algos {
namespace {

TEST(AlgoFilter, NcclSyntax) {
  AlgoFilter f;
  ASSERT_TRUE(AlgoFilter::parse("ring,tree", &f).ok());
  EXPECT_TRUE(f.allows(Collective::AllReduce, "ring"));
  EXPECT_TRUE(f.allows(Collective::AllGather, "tree"));
  EXPECT_FALSE(f.allows(Collective::AllReduce, "direct"));

  ASSERT_TRUE(AlgoFilter::parse("^ring", &f).ok());
  EXPECT_FALSE(f.allows(Collective::AllReduce, "ring"));
  EXPECT_TRUE(f.allows(Collective::AllReduce, "direct"));

  ASSERT_TRUE(AlgoFilter::parse("allreduce:tree;^ring", &f).ok());
  EXPECT_TRUE(f.allows(Collective::AllReduce, "tree"));
  EXPECT_FALSE(f.allows(Collective::AllReduce, "ring"));
  EXPECT_FALSE(f.allows(Collective::AllGather, "ring"));
  EXPECT_TRUE(f.allows(Collective::AllGather, "pairwise"));

  ASSERT_TRUE(AlgoFilter::parse("AllReduce:Ring", &f).ok()) << "case does not matter";
  EXPECT_TRUE(f.allows(Collective::AllReduce, "ring"));

  EXPECT_FALSE(AlgoFilter::parse("allgatherv:ring", &f).ok()) << "unknown collective";
  EXPECT_FALSE(AlgoFilter::parse("allreduce:", &f).ok()) << "empty list";
}

CollArgs allReduce(size_t count, int nranks, const Topology& topo) {
  CollArgs a;
  a.count = count;
  a.nranks = nranks;
  a.typeSize = 4;
  a.chunkCount = 131072;
  a.directMaxBytes = 65536;
  a.topology = &topo;
  return a;
}

TEST(Selector, SmallCallsTakeOneHopLargeOnesTheRing) {
  Topology topo = Topology::flat(4, braid::transport::kShmLinkCost);
  AlgoFilter none;
  Choice c;
  ASSERT_TRUE(chooseAlgorithm(allReduce(2, 4, topo), none, "", &c).ok());
  EXPECT_EQ(c.algorithm->name(), "direct") << c.reason;
  ASSERT_TRUE(chooseAlgorithm(allReduce(1 << 24, 4, topo), none, "", &c).ok());
  EXPECT_EQ(c.algorithm->name(), "ring") << c.reason;
  EXPECT_GT(c.estimateUs, 0.0);
}

// Large local calls are bound by the host's memory, where the ring and rhd move the same bytes;
// the tie goes to the one whose messages and reductions alone finish first (rhd, 4 ranks,
// 8 MiB: measured 10-15% faster), not to the one listed first.
TEST(Selector, MemoryBoundTiesGoToTheFasterLinks) {
  Topology topo = Topology::hostsAndRacks({0, 0, 0, 0}, {}, braid::transport::kShmLinkCost, braid::transport::kTcpLinkCost,
                                          braid::transport::kTcpLinkCost);
  const CollArgs a = allReduce((8 << 20) / 4, 4, topo);
  double ringLinks = 0, rhdLinks = 0;
  const Algorithm* ring = selectAlgorithm(a, "ring");
  const Algorithm* rhd = selectAlgorithm(a, "rhd");
  ASSERT_EQ(ring->name(), "ring");
  ASSERT_EQ(rhd->name(), "rhd");
  const double ringFree = priceOperation(*ring, a), rhdFree = priceOperation(*rhd, a);
  topo.memoryUsPerByte = kHostMemoryUsPerByte;
  topo.cacheBytes = kDefaultCacheBytes;
  const double ringUs = priceOperation(*ring, a, &ringLinks), rhdUs = priceOperation(*rhd, a, &rhdLinks);
  EXPECT_EQ(ringLinks, ringFree);  // the links' price is the price without the bound
  EXPECT_EQ(rhdLinks, rhdFree);
  EXPECT_GT(ringUs, ringLinks);  // both memory-bound, and alike
  EXPECT_GT(rhdUs, rhdLinks);
  EXPECT_NEAR(ringUs, rhdUs, ringUs * 0.01);
  ASSERT_LT(rhdLinks, ringLinks * 0.99);
  Choice c;
  ASSERT_TRUE(chooseAlgorithm(a, AlgoFilter{}, "", &c).ok());
  EXPECT_EQ(c.algorithm->name(), "rhd") << c.reason;
  EXPECT_EQ(c.estimateUs, rhdUs);
}

TEST(Selector, ForcedAndFiltered) {
  Topology topo = Topology::flat(4, braid::transport::kShmLinkCost);
  Choice c;
  ASSERT_TRUE(chooseAlgorithm(allReduce(2, 4, topo), AlgoFilter{}, "ring", &c).ok());
  EXPECT_EQ(c.algorithm->name(), "ring");
  AlgoFilter onlyRing;
  ASSERT_TRUE(AlgoFilter::parse("ring", &onlyRing).ok());
  ASSERT_TRUE(chooseAlgorithm(allReduce(2, 4, topo), onlyRing, "", &c).ok());
  EXPECT_EQ(c.algorithm->name(), "ring");
}

}  // namespace
}  // namespace braid::algos
