// The topology-aware schedules (AllReduce: rhd, tree, hier, rackring; AllGather, ReduceScatter
// and Broadcast: hier), run in memory for every rank: every element of every rank ends as NCCL
// defines it (exact sums and averages), in place and out of place, for awkward counts and
// chunks, on flat, two- and three-level topologies with even and uneven hosts and racks, with
// sends that complete early or only with their receive. Then their shapes (which ranks talk,
// what crosses a rack) and their whole-operation prices against the flat ring and chain.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>

#include "algos/algorithm.h"
#include "algos/direct_allreduce.h"
#include "algos/hier_allgather.h"
#include "algos/hier_allreduce.h"
#include "algos/hier_broadcast.h"
#include "algos/hier_reduce_scatter.h"
#include "algos/operation_cost.h"
#include "algos/pattern.h"
#include "algos/rack_ring_allreduce.h"
#include "algos/rhd_allreduce.h"
#include "algos/tree_allreduce.h"
#include "common/schedule_sim.h"

namespace braid {
namespace {

using algos::Topology;
using testing::SendMode;

int64_t value(int rank, size_t e) { return (rank + 1) * 1000003 + static_cast<int64_t>(e) * 7; }

struct Case {
  int n;
  size_t count;
  size_t chunk;
  bool inPlace = false;
  bool average = false;
  bool mixed = false;  // odd ranks in place, even ranks not
  const Topology* topo = nullptr;
  algos::Collective coll = algos::Collective::AllReduce;
  int root = 0;
};

std::string describe(const algos::Algorithm& algo, const Case& c, SendMode mode) {
  std::ostringstream os;
  os << algo.name() << " n=" << c.n << " count=" << c.count << " chunk=" << c.chunk
     << (c.mixed     ? " mixed"
         : c.inPlace ? " in-place"
                     : " out-of-place")
     << (c.average ? " avg" : "") << (mode == SendMode::Buffered ? " buffered" : " rendezvous");
  if (c.topo) os << "\n" << c.topo->describe();
  return os.str();
}

algos::CollArgs argsFor(const Case& c, int rank) {
  algos::CollArgs a;
  a.coll = c.coll;
  a.root = c.root;
  a.count = c.count;
  a.average = c.average;
  a.inPlace = c.mixed ? rank % 2 == 1 : c.inPlace;
  a.rank = rank;
  a.nranks = c.n;
  a.chunkCount = c.chunk;
  a.typeSize = 8;
  a.topology = c.topo;
  return a;
}

std::vector<algos::Schedule> buildAll(const algos::Algorithm& algo, const Case& c) {
  std::vector<algos::Schedule> schedules;
  for (int r = 0; r < c.n; ++r) schedules.push_back(algo.build(argsFor(c, r)));
  return schedules;
}

void checkBlocks(const algos::Algorithm& algo, const Case& c, SendMode mode);

// hierpipe declines calls with nothing to overlap (one host, a flat network, tiny counts) but
// builds correct schedules for every call all the same: the sweeps check the builder itself.
class Unrestricted final : public algos::Algorithm {
 public:
  explicit Unrestricted(const algos::Algorithm& inner) : inner_(inner) {}
  std::string_view name() const override { return inner_.name(); }
  bool supports(const algos::CollArgs& args) const override {
    return args.coll == algos::Collective::AllReduce;
  }
  algos::Schedule build(const algos::CollArgs& args) const override { return inner_.build(args); }

 private:
  const algos::Algorithm& inner_;
};

void check(const algos::Algorithm& algo, const Case& c, SendMode mode = SendMode::Rendezvous) {
  if (c.coll != algos::Collective::AllReduce) return checkBlocks(algo, c, mode);
  SCOPED_TRACE(describe(algo, c, mode));
  std::vector<testing::SimRank> ranks(c.n);
  for (int r = 0; r < c.n; ++r) {
    ASSERT_TRUE(algo.supports(argsFor(c, r)));
    std::vector<int64_t> input(c.count);
    for (size_t e = 0; e < c.count; ++e) input[e] = value(r, e);
    if (argsFor(c, r).inPlace) {
      ranks[r].recv = input;
    } else {
      ranks[r].send = input;
      ranks[r].recv.assign(c.count, -1);
    }
  }
  const std::vector<testing::SimRank> before = ranks;
  ASSERT_EQ(testing::simulate(buildAll(algo, c), ranks, mode), "");
  for (size_t e = 0; e < c.count; ++e) {
    int64_t sum = 0;
    for (int r = 0; r < c.n; ++r) sum += value(r, e);
    const int64_t want = c.average ? sum / c.n : sum;
    for (int r = 0; r < c.n; ++r)
      ASSERT_EQ(ranks[r].recv[e], want) << "rank " << r << " element " << e;
  }
  for (int r = 0; r < c.n; ++r)
    ASSERT_EQ(ranks[r].send, before[r].send) << "sendbuff of rank " << r;
}

// Broadcast, AllGather and ReduceScatter: every element of every rank's buffers ends as NCCL
// defines it, and nothing else changes (a buffer NCCL does not give a rank is empty here).
void checkBlocks(const algos::Algorithm& algo, const Case& c, SendMode mode) {
  SCOPED_TRACE(describe(algo, c, mode) + " " + algos::collectiveName(c.coll) + " root " +
               std::to_string(c.root));
  const size_t count = c.count, n = static_cast<size_t>(c.n);
  std::vector<testing::SimRank> ranks(c.n), want(c.n);
  for (int r = 0; r < c.n; ++r) {
    ASSERT_TRUE(algo.supports(argsFor(c, r)));
    const bool inPlace = argsFor(c, r).inPlace;
    const size_t rank = static_cast<size_t>(r);
    if (c.coll == algos::Collective::Broadcast) {
      std::vector<int64_t> input(count);
      for (size_t e = 0; e < count; ++e) input[e] = value(r, e);
      if (r != c.root || !inPlace) ranks[r].recv.assign(count, -1);
      if (r == c.root) (inPlace ? ranks[r].recv : ranks[r].send) = input;
      want[r] = ranks[r];
      for (size_t e = 0; e < count; ++e) want[r].recv[e] = value(c.root, e);
    } else if (c.coll == algos::Collective::AllGather) {
      ranks[r].recv.assign(n * count, -1);
      for (size_t e = 0; e < count; ++e)
        (inPlace ? ranks[r].recv[rank * count + e] : ranks[r].send.emplace_back()) = value(r, e);
      want[r] = ranks[r];
      for (size_t b = 0; b < n; ++b)
        for (size_t e = 0; e < count; ++e)
          want[r].recv[b * count + e] = value(static_cast<int>(b), e);
    } else {
      for (size_t e = 0; e < n * count; ++e) ranks[r].send.push_back(value(r, e));
      if (!inPlace) ranks[r].recv.assign(count, -1);
      want[r] = ranks[r];
      for (size_t e = 0; e < count; ++e) {
        int64_t sum = 0;
        for (int p = 0; p < c.n; ++p) sum += value(p, rank * count + e);
        (inPlace ? want[r].send[rank * count + e] : want[r].recv[e]) = c.average ? sum / c.n : sum;
      }
    }
  }
  ASSERT_EQ(testing::simulate(buildAll(algo, c), ranks, mode), "");
  for (int r = 0; r < c.n; ++r) {
    ASSERT_EQ(ranks[r].recv, want[r].recv) << "recvbuff of rank " << r;
    ASSERT_EQ(ranks[r].send, want[r].send) << "sendbuff of rank " << r;
  }
}

// Every rank count from 1 to 64; counts that leave parts empty or ragged, chunks from one
// element to more than the buffer, in and out of place, both send modes (past 16 ranks a
// thinner grid, which keeps the test fast).
void sweep(const algos::Algorithm& algo, const std::function<const Topology*(int n)>& topoFor,
           algos::Collective coll = algos::Collective::AllReduce) {
  for (int n = 1; n <= 64; ++n) {
    const Topology* topo = topoFor(n);
    const size_t ns = static_cast<size_t>(n);
    const bool small = n <= 16;
    // AllGather and ReduceScatter move p blocks of `count`: smaller counts keep them as fast.
    const bool blocks = coll != algos::Collective::AllReduce;
    const std::vector<size_t> counts =
        small    ? std::vector<size_t>{0, 1, ns - 1, 7, blocks ? 13 : 3 * ns + 5}
        : blocks ? std::vector<size_t>{0, 1, 5}
                 : std::vector<size_t>{0, ns - 1, 3 * ns + 5};
    const std::vector<size_t> chunks =
        small ? std::vector<size_t>{1, 4, 1 << 20} : std::vector<size_t>{3, 1 << 20};
    for (size_t count : counts)
      for (size_t chunk : chunks)
        for (bool inPlace : {false, true})
          for (SendMode mode : {SendMode::Rendezvous, SendMode::Buffered}) {
            if (!small && mode == SendMode::Buffered && (inPlace || chunk != 3)) continue;
            check(algo, {n, count, chunk, inPlace, false, false, topo, coll}, mode);
            if (::testing::Test::HasFatalFailure()) return;
          }
    // Avg (where the collective reduces), ranks mixing in place.
    const bool average = coll != algos::Collective::AllGather;
    check(algo, {n, blocks ? 5 : 2 * ns + 1, 2, false, average, true, topo, coll});
    if (::testing::Test::HasFatalFailure()) return;
  }
}

const Topology* none(int) { return nullptr; }

// The topology of hostOf and rackOf, with fixed link costs per level; with `pods`, a level above
// the racks that pairs them up. Kept in `slot`, a cache entry of the callers below.
const Topology* keep(std::unique_ptr<Topology>& slot, const std::vector<int>& hostOf,
                     const std::vector<int>& rackOf, bool pods) {
  auto topo = std::make_unique<Topology>(
      Topology::hostsAndRacks(hostOf, rackOf, {0.5, 1e-4}, {2, 4e-4}, {5, 4e-3}));
  if (pods) {
    std::vector<int> pod(hostOf.size());
    for (size_t r = 0; r < pod.size(); ++r) pod[r] = topo->groupOf[1][r] / 2;
    topo->groupOf.push_back(pod);
    topo->link.push_back({10, 8e-3});
  }
  slot = std::move(topo);
  return slot.get();
}

// n ranks on hosts of 1 to 4 ranks, on racks of 1 to 3 hosts, with rank numbers scattered
// over the hosts (rank 7i mod n goes to the i-th slot) so no level lines up with rank order;
// with `pods`, racks also pair up into pods (a third level).
const Topology* uneven(int n, bool pods) {
  static std::map<std::pair<int, bool>, std::unique_ptr<Topology>> cache;
  auto& slot = cache[{n, pods}];
  if (slot) return slot.get();
  const bool scatter = std::gcd(7, n) == 1;
  std::vector<int> hostOf(n);
  int host = 0, filled = 0;
  for (int i = 0; i < n; ++i) {
    hostOf[scatter ? i * 7 % n : i] = host;
    if (++filled == 1 + (host * 3) % 4) ++host, filled = 0;
  }
  const int hosts = host + (filled > 0);
  std::vector<int> rackOf(hosts);
  int rack = 0;
  filled = 0;
  for (int h = 0; h < hosts; ++h) {
    rackOf[h] = rack;
    if (++filled == 1 + (rack * 2) % 3) ++rack, filled = 0;
  }
  return keep(slot, hostOf, rackOf, pods);
}
const Topology* twoLevels(int n) { return uneven(n, false); }
const Topology* threeLevels(int n) { return uneven(n, true); }

// n ranks on equal hosts (of 4, 3 or 2 ranks where n allows), equal racks (of 2 or 3 hosts
// where the host count allows) and, with `pods`, pods of 2 racks: the hierarchical builders'
// perfect split at every level, with rank numbers scattered as in uneven().
const Topology* even(int n, bool pods) {
  static std::map<std::pair<int, bool>, std::unique_ptr<Topology>> cache;
  auto& slot = cache[{n, pods}];
  if (slot) return slot.get();
  auto divisor = [](int of, std::initializer_list<int> options) {
    for (int d : options)
      if (of % d == 0) return d;
    return 1;
  };
  const int g = divisor(n, {4, 3, 2}), hosts = n / g, perRack = divisor(hosts, {2, 3});
  const bool scatter = std::gcd(7, n) == 1;
  std::vector<int> hostOf(n), rackOf(hosts);
  for (int i = 0; i < n; ++i) hostOf[scatter ? i * 7 % n : i] = i / g;
  for (int h = 0; h < hosts; ++h) rackOf[h] = h / perRack;
  return keep(slot, hostOf, rackOf, pods && (hosts / perRack) % 2 == 0);
}
const Topology* evenTwoLevels(int n) { return even(n, false); }
const Topology* evenThreeLevels(int n) { return even(n, true); }

TEST(TopologySchedule, RhdEveryRankCount) { sweep(algos::RhdAllReduce(), none); }
// The topology orders the exchanges (a different order for each shape): the results stay exact.
TEST(TopologySchedule, RhdEveryRankCountOnHostsAndRacks) {
  sweep(algos::RhdAllReduce(), twoLevels);
  sweep(algos::RhdAllReduce(), evenThreeLevels);
}

// Elements rank r's schedule sends to peers outside its host.
size_t sentAcrossHosts(const algos::Schedule& s, const Topology& topo, int r) {
  size_t sent = 0;
  for (const algos::Step& st : s.steps)
    if (st.kind == algos::StepKind::Send && topo.commonLevel(r, st.peer) > 0) sent += st.src.count;
  return sent;
}

// On hosts of consecutive ranks the halving's largest exchanges stay inside a host: 8 ranks a
// host, 4 hosts, each rank sends n/16 + n/32 across hosts in each phase (taking the highest bit
// first, n/2 + n/4); with hosts alternating in rank order (rank r on host r mod 4), the same
// bytes cross, through the other bits. Without a topology the order is from the highest bit.
TEST(TopologySchedule, RhdExchangesTheMostWithTheNearestRanks) {
  const size_t count = 32 * 64;
  const algos::LinkCost link{1, 1e-4};
  std::vector<int> blocks(32), alternate(32);
  for (int r = 0; r < 32; ++r) blocks[r] = r / 8, alternate[r] = r % 4;
  for (const std::vector<int>& hostOf : {blocks, alternate}) {
    const Topology topo = Topology::hostsAndRacks(hostOf, {}, link, link, link);
    const auto schedules =
        buildAll(algos::RhdAllReduce(), {32, count, 1 << 20, false, false, false, &topo});
    for (int r = 0; r < 32; ++r)
      EXPECT_EQ(sentAcrossHosts(schedules[r], topo, r), 2 * (count / 16 + count / 32)) << r;
  }
  const Topology topo = Topology::hostsAndRacks(blocks, {}, link, link, link);
  const auto blind = buildAll(algos::RhdAllReduce(), {32, count, 1 << 20});
  for (int r = 0; r < 32; ++r)
    EXPECT_EQ(sentAcrossHosts(blind[r], topo, r), 2 * (count / 2 + count / 4)) << r;
}

// Halving-doubling talks to rank ^ 2^k for each k, and past a power of two the folded pairs
// add one partner each.
TEST(TopologySchedule, RhdPartnersDifferInOneBit) {
  for (int n : {2, 8, 32, 12}) {
    int pow2 = 1;
    while (pow2 * 2 <= n) pow2 *= 2;
    const int extra = n - pow2;
    const auto schedules = buildAll(algos::RhdAllReduce(), {n, 100, 7});
    for (int r = 0; r < n; ++r) {
      std::vector<int> want;
      if (r < 2 * extra && r % 2 == 0) {
        want = {r + 1};
      } else {
        const int vr = r < 2 * extra ? r / 2 : r - extra;
        for (int mask = 1; mask < pow2; mask *= 2) {
          const int peer = vr ^ mask;
          want.push_back(peer < extra ? 2 * peer + 1 : peer + extra);
        }
        if (r < 2 * extra) want.push_back(r - 1);
        std::sort(want.begin(), want.end());
      }
      EXPECT_EQ(schedules[r].peers, want) << "n=" << n << " rank " << r;
    }
  }
}

TEST(TopologySchedule, RackRingEveryRankCount) {
  sweep(algos::RackRingAllReduce(), none);
  sweep(algos::RackRingAllReduce(), twoLevels);
  sweep(algos::RackRingAllReduce(), threeLevels);
}

TEST(TopologySchedule, TreeEveryRankCount) {
  sweep(algos::TreeAllReduce(), none);
  sweep(algos::TreeAllReduce(), twoLevels);
}

// The in-order binary tree: one root, m - 1 edges, at most two children, depth ceil(lg m).
TEST(TopologySchedule, BinaryTreeShape) {
  for (int m = 1; m <= 200; ++m) {
    int roots = 0;
    for (int q = 0; q < m; ++q) {
      const int parent = algos::binaryTreeParent(q, m);
      roots += parent < 0;
      ASSERT_LE(algos::binaryTreeChildren(q, m).size(), 2u) << "m=" << m << " q=" << q;
      int depth = 0;
      for (int v = q; algos::binaryTreeParent(v, m) >= 0; v = algos::binaryTreeParent(v, m))
        ++depth;
      ASSERT_LE(1 << depth, 2 * m) << "m=" << m << " q=" << q;
      if (q % 2 == 0) {
        ASSERT_TRUE(algos::binaryTreeChildren(q, m).empty()) << "m=" << m << " q=" << q;
      }
    }
    ASSERT_EQ(roots, 1) << "m=" << m;
  }
}

// Every rank (a host of its own) forwards in at most one of the two trees: it reduces what
// children send in one half of the buffer only.
TEST(TopologySchedule, DoubleTreeInnerNodesAreLeavesOfTheOther) {
  for (int n = 2; n <= 40; ++n) {
    const size_t count = 64, half = algos::evenPart(count, 2, 0).count;
    const auto schedules = buildAll(algos::TreeAllReduce(), {n, count, 8});
    size_t inner = 0;
    for (int r = 0; r < n; ++r) {
      bool reduces[2] = {false, false};
      for (const algos::Step& st : schedules[r].steps)
        if (st.kind == algos::StepKind::RecvReduce) reduces[st.dst.offset >= half] = true;
      EXPECT_FALSE(reduces[0] && reduces[1]) << "n=" << n << " rank " << r;
      inner += reduces[0] + reduces[1];
    }
    EXPECT_GE(inner, static_cast<size_t>(n - 2)) << "n=" << n;  // both trees have inner nodes
  }
}

TEST(TopologySchedule, HierEveryRankCount) {
  sweep(algos::HierAllReduce(), none);
  sweep(algos::HierAllReduce(), twoLevels);
  sweep(algos::HierAllReduce(), threeLevels);
  sweep(algos::HierAllReduce(), evenTwoLevels);
  sweep(algos::HierAllReduce(), evenThreeLevels);
  const algos::HierAllReduce hierpipe(3);
  const Unrestricted pipelined(hierpipe);
  sweep(pipelined, none);
  sweep(pipelined, twoLevels);
  sweep(pipelined, evenThreeLevels);
}

TEST(TopologySchedule, HierDirectEveryRankCount) {
  const algos::HierDirectAllReduce hierdirect;
  const Unrestricted any(hierdirect);  // past BRAID_DIRECT_MAX_BYTES too, and on one stage
  sweep(any, none);
  sweep(any, twoLevels);
  sweep(any, threeLevels);
  sweep(any, evenTwoLevels);
  sweep(any, evenThreeLevels);
}

// hierpipe is offered only where two stages run on different links.
TEST(TopologySchedule, HierPipeNeedsTwoStages) {
  const algos::HierAllReduce hierpipe(4);
  const algos::LinkCost link{};
  const Topology oneHost = Topology::hostsAndRacks({0, 0, 0, 0}, {}, link, link, link);
  const Topology flatRanks = Topology::flat(4);
  const Topology twoHosts = Topology::hostsAndRacks({0, 0, 1, 1}, {}, link, link, link);
  const Topology racks = Topology::hostsAndRacks({0, 1, 2, 3}, {0, 1, 0, 1}, link, link, link);
  auto offered = [&](const Topology& t, size_t count) {
    return hierpipe.supports(argsFor({t.nranks(), count, 1024, false, false, false, &t}, 0));
  };
  EXPECT_FALSE(offered(oneHost, 1 << 20));
  EXPECT_FALSE(offered(flatRanks, 1 << 20));
  EXPECT_TRUE(offered(twoHosts, 1 << 20));
  EXPECT_TRUE(offered(racks, 1 << 20));
  EXPECT_FALSE(offered(racks, 3));  // fewer elements than pieces
  // Pieces of at least 64 KiB (8-byte elements here).
  EXPECT_FALSE(offered(racks, 4 * (64 << 10) / 8 - 1));
  EXPECT_TRUE(offered(racks, 4 * (64 << 10) / 8));
}

TEST(TopologySchedule, HierAllGatherEveryRankCount) {
  for (auto topo : {none, twoLevels, evenTwoLevels, evenThreeLevels})
    sweep(algos::HierAllGather(), topo, algos::Collective::AllGather);
}

// Every root, every rank count to 64, on flat, uneven and even topologies of 2 and 3 levels.
TEST(TopologySchedule, HierBroadcastEveryRankAndRoot) {
  const algos::HierBroadcast algo;
  for (auto topoFor : {none, twoLevels, threeLevels, evenThreeLevels})
    for (int n = 1; n <= 64; ++n)
      for (int root = 0; root < n; root += n <= 16 ? 1 : 7)
        for (size_t count : {size_t{0}, size_t{1}, size_t{29}})
          for (size_t chunk : {size_t{1}, size_t{8}, size_t{1000}})
            for (bool inPlace : {false, true}) {
              if (n > 16 && chunk == 1) continue;
              Case c{n,     count, chunk,      inPlace,
                     false, false, topoFor(n), algos::Collective::Broadcast,
                     root};
              check(algo, c);
              if (n <= 8) check(algo, c, SendMode::Buffered);
              if (HasFatalFailure()) return;
            }
}

TEST(TopologySchedule, HierReduceScatterEveryRankCount) {
  for (auto topo : {none, twoLevels, evenTwoLevels, evenThreeLevels})
    sweep(algos::HierReduceScatter(), topo, algos::Collective::ReduceScatter);
}

// Hand-made shapes: one host; even hosts in even racks (the perfect split at every level);
// hosts of different sizes; racks of different host counts; three levels; levels whose groups
// all hold one member.
TEST(TopologySchedule, HierShapes) {
  const algos::LinkCost fast{0.5, 1e-4}, mid{2, 4e-4}, slow{5, 4e-3};
  std::vector<Topology> shapes;
  shapes.push_back(Topology::hostsAndRacks(std::vector<int>(6, 0), {}, fast, mid, slow));
  shapes.push_back(
      Topology::hostsAndRacks({0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}, {0, 0, 1, 1}, fast, mid, slow));
  shapes.push_back(Topology::hostsAndRacks({0, 0, 0, 0, 1, 1, 2, 2, 2}, {}, fast, mid, slow));
  shapes.push_back(
      Topology::hostsAndRacks({0, 1, 2, 3, 4, 0, 1, 2, 3, 4}, {0, 1, 1, 1, 0}, fast, mid, slow));
  shapes.push_back(
      Topology::hostsAndRacks({0, 1, 2, 3, 4, 5, 6}, {0, 0, 0, 1, 1, 2, 2}, fast, mid, slow));
  Topology three = Topology::hostsAndRacks({0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7},
                                           {0, 0, 1, 1, 2, 2, 3, 3}, fast, mid, slow);
  three.groupOf.push_back({0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1});
  three.link.push_back({10, 8e-3});
  shapes.push_back(three);
  Topology skewed = three;  // pod 1 holds a single rack
  skewed.groupOf[2] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  shapes.push_back(skewed);
  for (const Topology& topo : shapes)
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{97}})
      for (size_t chunk : {size_t{1}, size_t{8}, size_t{1000}})
        for (bool inPlace : {false, true})
          for (bool average : {false, true}) {
            for (int pieces : {1, 3}) {
              const algos::HierAllReduce hier(pieces);
              check(Unrestricted(hier),
                    {topo.nranks(), count, chunk, inPlace, average, false, &topo});
              if (HasFatalFailure()) return;
            }
          }
}

// Hosts of 1 to 5 ranks scattered over the rank numbers (rank r on host hostOf[r]), in three
// racks of 3, 2 and 1 hosts: nothing lines up with rank order.
Topology scatteredRacks() {
  const std::vector<int> hostOf = {0, 3, 5, 1, 0, 4, 2, 3, 0, 1, 4, 2, 0, 3, 1, 4, 0, 2, 3};
  const std::vector<int> rackOf = {0, 0, 1, 1, 2, 1};
  return Topology::hostsAndRacks(hostOf, rackOf, {0.5, 1e-4}, {2, 4e-4}, {5, 4e-3});
}

// Distinct (from, to) pairs of every message that leaves a group at `level`, per group.
std::vector<std::set<std::pair<int, int>>> crossings(const std::vector<algos::Schedule>& schedules,
                                                     const Topology& topo, int level,
                                                     bool leaving) {
  std::vector<std::set<std::pair<int, int>>> out;
  for (int r = 0; r < static_cast<int>(schedules.size()); ++r)
    for (const algos::Step& st : schedules[r].steps) {
      if (st.kind != algos::StepKind::Send) continue;
      const int from = topo.groupOf[level][r], to = topo.groupOf[level][st.peer];
      if (from == to) continue;
      const int g = leaving ? from : to;
      if (out.size() <= static_cast<size_t>(g)) out.resize(g + 1);
      out[g].insert({r, st.peer});
    }
  return out;
}

TEST(TopologySchedule, RackRingCrossesEachBoundaryOncePerDirection) {
  const Topology topo = scatteredRacks();
  const int n = topo.nranks();
  for (size_t chunk : {size_t{1}, size_t{5}}) {
    const Case c{n, 100, chunk, false, false, false, &topo};
    const auto rackring = buildAll(algos::RackRingAllReduce(), c);
    for (int level : {0, 1})
      for (bool leaving : {true, false}) {
        const auto pairs = crossings(rackring, topo, level, leaving);
        for (size_t g = 0; g < pairs.size(); ++g)
          EXPECT_EQ(pairs[g].size(), 1u)
              << "level " << level << " group " << g << (leaving ? " out" : " in");
      }
    // Messages leaving rack 0: one rank's share of the ring's traffic, against several ranks'
    // for the rank-order ring on the same placement.
    auto messagesLeaving = [&](const std::vector<algos::Schedule>& schedules) {
      size_t count = 0;
      const auto pairs = crossings(schedules, topo, 1, true);
      for (const auto& [from, to] : pairs[0])
        for (const algos::Step& st : schedules[from].steps)
          count += st.kind == algos::StepKind::Send && st.peer == to;
      return count;
    };
    const auto ring = buildAll(*algos::selectAlgorithm(argsFor(c, 0), "ring"), c);
    const size_t aware = messagesLeaving(rackring), flat = messagesLeaving(ring);
    EXPECT_GT(aware, 0u);
    EXPECT_GE(flat, 4 * aware) << "rank-order ring " << flat << " messages, rack-aware " << aware;
    EXPECT_GT(crossings(ring, topo, 1, true)[0].size(), 1u);
    check(algos::RackRingAllReduce(), c);
  }
}

// 8 single-rank hosts in 2 racks, rank order alternating racks (netcluster's benchmark layout):
// hierdirect sends 4 messages per rank (3 in its rack, 1 across), 4 across each way; direct 7
// per rank and 16 across each way. It is offered for what direct serves, with two stages.
TEST(TopologySchedule, HierDirectCrossesRacksOncePerRank) {
  const algos::LinkCost link{};
  const Topology topo =
      Topology::hostsAndRacks({0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 0, 1, 0, 1, 0, 1}, link, link, link);
  const Case c{8, 64, 64, false, false, false, &topo};
  const auto schedules = buildAll(algos::HierDirectAllReduce(), c);
  for (int r = 0; r < 8; ++r) {
    size_t sends = 0;
    for (const algos::Step& st : schedules[r].steps) sends += st.kind == algos::StepKind::Send;
    EXPECT_EQ(sends, 4u) << "rank " << r;
  }
  for (const auto& rack : crossings(schedules, topo, 1, true)) EXPECT_EQ(rack.size(), 4u);
  const algos::HierDirectAllReduce hierdirect;
  check(Unrestricted(hierdirect), c);

  algos::CollArgs a = argsFor(c, 0);
  a.directMaxBytes = c.count * a.typeSize;
  EXPECT_TRUE(hierdirect.supports(a));
  a.count += 1;
  EXPECT_FALSE(hierdirect.supports(a));  // more than direct serves
  a.count -= 1;
  const Topology flat = Topology::flat(8);
  a.topology = &flat;
  EXPECT_FALSE(hierdirect.supports(a));  // one stage: direct's own schedule
  // Every rank answers alike, also where their stages differ: rank 0 alone on its host and in
  // its rack meets the others only at the top; ranks 1 and 2 share a host first.
  const Topology uneven = Topology::hostsAndRacks({0, 1, 1}, {0, 1}, link, link, link);
  for (int r = 0; r < 3; ++r) {
    algos::CollArgs u = a;
    u.nranks = 3;
    u.rank = r;
    u.topology = &uneven;
    EXPECT_TRUE(hierdirect.supports(u)) << "rank " << r;
  }
}

// The whole-operation price of each algorithm's schedules on `topo`, for `bytes` of floats in
// 1 MiB chunks.
double price(std::string_view algo, const Topology& topo, size_t bytes,
             algos::Collective coll = algos::Collective::AllReduce) {
  // AllGather and ReduceScatter: `bytes` is the whole buffer of p blocks.
  const bool blocks =
      coll == algos::Collective::AllGather || coll == algos::Collective::ReduceScatter;
  const size_t count = bytes / 4 / (blocks ? static_cast<size_t>(topo.nranks()) : 1);
  Case c{topo.nranks(), count, (size_t{1} << 20) / 4, false, false, false, &topo, coll};
  algos::CollArgs a = argsFor(c, 0);
  a.directMaxBytes = SIZE_MAX;  // direct and hierdirect serve it too
  const algos::Algorithm* chosen = algos::selectAlgorithm(a, algo);
  EXPECT_EQ(chosen->name(), algo);
  std::vector<algos::Schedule> schedules;
  for (int r = 0; r < c.n; ++r) {
    algos::CollArgs ar = argsFor(c, r);
    ar.typeSize = 4;
    schedules.push_back(chosen->build(ar));
  }
  return algos::estimateMicroseconds(schedules, 4, topo);
}

// 32 ranks on 8 hosts of 4 in 2 racks whose uplinks are 10x slower than the links inside a
// rack, with the ranks scattered (rank r on host r mod 8) as a fragmented allocation leaves
// them: the rank-order ring crosses the uplinks at every hop.
Topology twoRacksSlowUplinks() {
  std::vector<int> hostOf(32);
  for (int r = 0; r < 32; ++r) hostOf[r] = r % 8;
  return Topology::hostsAndRacks(hostOf, {0, 0, 0, 0, 1, 1, 1, 1}, {0.5, 1.0 / 20e3},
                                 {3, 1.0 / 10e3}, {6, 1.0 / 1e3});
}

void printPrices(const char* title, const Topology& topo, size_t bytes) {
  std::printf("%s, %zu bytes:", title, bytes);
  for (const char* algo :
       {"ring", "rhd", "tree", "hier", "hierpipe", "rackring", "direct", "hierdirect"}) {
    Case c{topo.nranks(), bytes / 4, (size_t{1} << 20) / 4, false, false, false, &topo};
    algos::CollArgs a = argsFor(c, 0);
    a.directMaxBytes = SIZE_MAX;
    if (algos::selectAlgorithm(a, algo)->name() != algo) continue;  // declines the call
    std::printf(" %s %.0f us", algo, price(algo, topo, bytes));
  }
  std::printf("\n");
}

// On slow uplinks the topology-aware schedules beat the flat ring for large buffers: hier
// sends only 1/(ranks per rack) of the data across them, rackring one flow per direction.
TEST(TopologyCost, TopologyAwareSchedulesWinOnSlowUplinks) {
  const Topology topo = twoRacksSlowUplinks();
  const size_t large = size_t{64} << 20;
  const double ring = price("ring", topo, large);
  EXPECT_LT(price("hier", topo, large), ring);
  EXPECT_LT(price("rackring", topo, large), ring);
  // Pipelined, the uplinks carry one piece while the racks reduce the next.
  EXPECT_LT(price("hierpipe", topo, large), price("hier", topo, large));
  printPrices("two racks, slow uplinks", topo, large);
}

// The hierarchical AllGather and ReduceScatter move single blocks over the uplinks.
TEST(TopologyCost, HierBlockCollectivesWinOnSlowUplinks) {
  const Topology topo = twoRacksSlowUplinks();
  for (algos::Collective coll : {algos::Collective::AllGather, algos::Collective::ReduceScatter}) {
    const double ring = price("ring", topo, size_t{64} << 20, coll);
    const double hier = price("hier", topo, size_t{64} << 20, coll);
    EXPECT_LT(hier, ring) << algos::collectiveName(coll);
    std::printf("two racks, slow uplinks, 67108864 bytes, %s: ring %.0f us hier %.0f us\n",
                algos::collectiveName(coll), ring, hier);
  }
}

// The hierarchical broadcast crosses between the two racks by one pair of ranks, the flat
// chain at every rack change along the rank order; so it is priced well under the chain.
TEST(TopologyCost, HierBroadcastCrossesRacksOnce) {
  const Topology topo = twoRacksSlowUplinks();
  for (int root : {0, 5, 31}) {
    Case c{topo.nranks(), 1000, 100, false, false, false, &topo, algos::Collective::Broadcast,
           root};
    const auto pairs = crossings(buildAll(algos::HierBroadcast(), c), topo, 1, true);
    size_t crossingPairs = 0;
    for (const auto& rack : pairs) crossingPairs += rack.size();
    EXPECT_EQ(crossingPairs, 1u) << "root " << root;
  }
  const double chain = price("chain", topo, size_t{64} << 20, algos::Collective::Broadcast);
  const double hier = price("hier", topo, size_t{64} << 20, algos::Collective::Broadcast);
  EXPECT_LT(hier, chain);
  std::printf(
      "two racks, slow uplinks, 67108864 bytes, ncclBroadcast: chain %.0f us hier %.0f us\n", chain,
      hier);
}

// The ranks of a host share its memory: a call whose buffers outgrow the cache costs at least
// the bytes its steps read and write there, in the share the cache cannot hold, at the
// memory's rate (4 ranks, one host, 128 MiB: measured 47-49 ms where links alone priced 17-25).
TEST(TopologyCost, HostMemoryBoundsLargeLocalCalls) {
  Topology topo =
      Topology::hostsAndRacks({0, 0, 0, 0}, {}, {0.5, 1.0 / 8e3}, {20, 1.0 / 2e3}, {20, 1.0 / 2e3});
  const size_t bytes = size_t{128} << 20;
  const double links = price("ring", topo, bytes);
  topo.memoryUsPerByte = 1.0 / 40e3;
  topo.cacheBytes = 32 << 20;
  const double bounded = price("ring", topo, bytes);
  // Ring, 4 ranks: each sends 6 parts (reading them), reduces 3 (reading the input and writing
  // the output) and receives 3: 15 parts of N / 4 per rank read or written, 15 N for the host;
  // its buffers hold 4 x 2 N = 1 GiB, so the cache misses 1024 / (1024 + 16) of it.
  const double traffic = 15.0 * static_cast<double>(bytes);
  const double footprint = 8.0 * static_cast<double>(bytes);
  const double expected = traffic * footprint / (footprint + (16 << 20)) / 40e3;
  EXPECT_GT(expected, links);
  EXPECT_NEAR(bounded, expected, expected * 1e-9);
  // Spread over four hosts, each memory carries a quarter: the network is the limit again.
  Topology spread =
      Topology::hostsAndRacks({0, 1, 2, 3}, {}, {0.5, 1.0 / 8e3}, {20, 1.0 / 2e3}, {20, 1.0 / 2e3});
  const double network = price("ring", spread, bytes);
  spread.memoryUsPerByte = topo.memoryUsPerByte;
  spread.cacheBytes = topo.cacheBytes;
  EXPECT_EQ(price("ring", spread, bytes), network);
  // Small calls stay priced by their messages.
  const double small = price("ring", topo, 4096);
  topo.memoryUsPerByte = 0;
  EXPECT_EQ(price("ring", topo, 4096), small);
}

// Small buffers pay per message: rhd's 2 lg p and the trees' 2 lg p hops against the ring's
// 2 (p - 1).
TEST(TopologyCost, LogarithmicSchedulesWinForSmallBuffers) {
  for (int n : {16, 32, 64}) {
    const Topology flat = Topology::flat(n, {3, 1.0 / 10e3});
    const double ring = price("ring", flat, 1024);
    EXPECT_LT(price("rhd", flat, 1024), ring) << n << " ranks";
    EXPECT_LT(price("tree", flat, 1024), ring) << n << " ranks";
    printPrices(("flat, " + std::to_string(n) + " ranks").c_str(), flat, 1024);
  }
  const Topology racks = twoRacksSlowUplinks();
  EXPECT_LT(price("rhd", racks, 1024), price("ring", racks, 1024));
  EXPECT_LT(price("tree", racks, 1024), price("ring", racks, 1024));
  // One message per stage and counterpart instead of one to every rank: 7 per rank, not 31.
  EXPECT_LT(price("hierdirect", racks, 1024), price("direct", racks, 1024));
  printPrices("two racks, slow uplinks", racks, 1024);
}

// Pricing sees the waits between ranks: a ring of p ranks costs about 2 (p - 1) alpha for a
// tiny buffer, and an unmatched message cannot complete.
TEST(TopologyCost, PricesWholeOperations) {
  for (int n : {2, 4, 8}) {
    Topology flat = Topology::flat(n, {10, 0});
    EXPECT_NEAR(price("ring", flat, 4 * static_cast<size_t>(n)), 2 * (n - 1) * 10.0, 1.0) << n;
    // Ranks outnumber cores four to one: every round costs four turns, 2 (n - 1) x 40 us; and
    // the cores' work bounds the whole, here more tightly: each of a rank's 2 (n - 1) messages
    // (all between hosts: every rank has its own) costs its two ends an alpha each, four ranks
    // to a core: 4 x 2 (n - 1) x 2 x 10 us.
    flat.alphaScale = 4;
    EXPECT_NEAR(price("ring", flat, 4 * static_cast<size_t>(n)), 4 * 2 * (n - 1) * 2 * 10.0, 1.0)
        << n;
    // With signatures checked, a rank's signature to each of the n - 2 peers it sends no data
    // to (all but its successor) travels alone: 4 x (n - 2) x 2 x 10 us more.
    flat.signatures = true;
    EXPECT_NEAR(price("ring", flat, 4 * static_cast<size_t>(n)),
                4 * 2 * (n - 1) * 2 * 10.0 + 4 * (n - 2) * 2 * 10.0, 1.0)
        << n;
    // A measured CPU cost per byte adds each message's bytes: 1 MiB in 2 (n - 1) messages of
    // 1/n of it per rank, 1 us per KiB, four ranks to a core.
    flat.signatures = false;
    flat.link[1].cpuUsPerByte = 1.0 / 1024;
    const size_t bytes = size_t{1} << 20;
    const double perRank = 2 * (n - 1) * (2 * 10.0 + static_cast<double>(bytes / n) / 1024);
    EXPECT_NEAR(price("ring", flat, bytes), 4 * perRank, 1.0) << n;
  }
  const Topology two = Topology::flat(2);
  algos::ScheduleBuilder lonely("lonely");
  lonely.send(1, {algos::Buffer::Send, 0, 1});
  const std::vector<algos::Schedule> unmatched = {std::move(lonely).finish(),
                                                  algos::ScheduleBuilder("idle").finish()};
  EXPECT_EQ(algos::estimateMicroseconds(unmatched, 4, two),
            std::numeric_limits<double>::infinity());
  algos::ScheduleBuilder waiting("waiting");
  waiting.recv(0, {algos::Buffer::Recv, 0, 1});
  const std::vector<algos::Schedule> unsent = {algos::ScheduleBuilder("idle").finish(),
                                               std::move(waiting).finish()};
  EXPECT_EQ(algos::estimateMicroseconds(unsent, 4, two), std::numeric_limits<double>::infinity());
}

// A shaped link (a token bucket: tc tbf, a cloud NIC's limiter) passes its burst at once after
// idling, then its rate: rank 0 sends 64 KiB messages to rank 1 on another host, back to back or
// after a local copy.
TEST(TopologyCost, ShapedLinksPassWhatTheirBucketRegainsBetweenMessages) {
  // Calls in a steady stream: a bucket holds at a call's start what the previous call left.
  const double alpha = 10, beta = 1e-3;  // 1 ns per byte: 64 KiB take 65.5 us
  const size_t floats = 16384;           // 64 KiB
  const double message = floats * 4 * beta;
  // The sender copies `copyFloats` locally (gamma per byte), then sends `messages` messages.
  auto schedules = [&](size_t copyFloats, size_t messages) {
    algos::ScheduleBuilder sender("s"), receiver("r");
    // The copy writes what the sends read, so they wait for it.
    if (copyFloats > 0)
      sender.copy({algos::Buffer::Recv, 0, copyFloats}, {algos::Buffer::Send, 0, copyFloats});
    for (size_t i = 0; i < messages; ++i) {
      sender.send(1, {algos::Buffer::Send, i * floats, floats});
      receiver.recv(0, {algos::Buffer::Recv, i * floats, floats});
    }
    std::vector<algos::Schedule> s;
    s.push_back(std::move(sender).finish());
    s.push_back(std::move(receiver).finish());
    return s;
  };
  Topology topo = Topology::flat(2, {alpha, beta});
  topo.gammaUsPerByte = beta;  // copying a message takes as long as sending it
  const auto back = schedules(0, 2);
  const auto copyFirst = schedules(2 * floats, 1);
  EXPECT_NEAR(algos::estimateMicroseconds(back, 4, topo), alpha + 2 * message, 1e-6);
  EXPECT_NEAR(algos::estimateMicroseconds(copyFirst, 4, topo), 2 * message + alpha + message, 1e-6);
  // Back-to-back messages keep the link busy: a stream of them goes at the rate whatever the
  // bucket (it regains only the alpha at the end of each call).
  for (double depth : {0.5, 1.0, 4.0}) {
    topo.link[1].burstBytes = depth * floats * 4;
    EXPECT_NEAR(algos::estimateMicroseconds(back, 4, topo), 2 * message, 1e-6) << depth;
  }
  // Where the link idles during the copy (two messages' time), a bucket of one message passes
  // the message at once; half a message covers half of it.
  topo.link[1].burstBytes = floats * 4;
  EXPECT_NEAR(algos::estimateMicroseconds(copyFirst, 4, topo), 2 * message + alpha, 1e-6);
  topo.link[1].burstBytes = floats * 2;
  EXPECT_NEAR(algos::estimateMicroseconds(copyFirst, 4, topo), 2 * message + alpha + message / 2,
              1e-6);
}

}  // namespace
}  // namespace braid
