// Algorithm selection: NCCL_ALGO's syntax, and the cost model's choice on a topology.
#include <gtest/gtest.h>

#include "algos/selector.h"

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
  Topology topo = Topology::flat(4, sharedMemoryCost().link);
  AlgoFilter none;
  Choice c;
  ASSERT_TRUE(chooseAlgorithm(allReduce(2, 4, topo), none, "", &c).ok());
  EXPECT_EQ(c.algorithm->name(), "direct") << c.reason;
  ASSERT_TRUE(chooseAlgorithm(allReduce(1 << 24, 4, topo), none, "", &c).ok());
  EXPECT_EQ(c.algorithm->name(), "ring") << c.reason;
  EXPECT_GT(c.estimateUs, 0.0);
}

TEST(Selector, ForcedAndFiltered) {
  Topology topo = Topology::flat(4, sharedMemoryCost().link);
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
