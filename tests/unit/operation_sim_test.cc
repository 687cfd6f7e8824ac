// The operation simulator at scale (algos::simulateOperation, what braid-sim runs): a block of
// ranks standing for the others prices what simulating every rank prices, and on a
// non-blocking fabric the ring and the two-level hierarchical AllReduce take the alpha-beta
// closed forms of docs/scale.md, and the double binary tree comes near its own; ranks that
// outnumber their cores queue for them as their messages go.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <new>
#include <string_view>
#include <vector>

#include "algos/algorithm.h"
#include "algos/operation_cost.h"
#include "algos/topology.h"

namespace braid {
namespace {

using algos::Topology;

// The uncompressed algorithm `name` that serves `args` (names repeat across collectives), else
// the first of that name.
const algos::Algorithm& byName(std::string_view name, const algos::CollArgs& args) {
  const algos::Algorithm* named = nullptr;
  for (const algos::Algorithm* a : algos::algorithms()) {
    if (a->name() != name || a->compressed()) continue;
    if (a->supports(args)) return *a;
    if (!named) named = a;
  }
  if (named) return *named;
  ADD_FAILURE() << name;
  return *algos::algorithms()[0];
}

// `bytes` of floats AllReduced with `algo` on `topo`, each stage's blocks unchunked unless
// `chunkBytes` says otherwise; with `built`, counting the schedules built there.
algos::OperationReport simulate(std::string_view algo, const Topology& topo, size_t bytes,
                                bool symmetry, size_t chunkBytes = 0,
                                bool approximateSymmetry = false, size_t maxSteps = 0,
                                int* built = nullptr,
                                algos::Collective coll = algos::Collective::AllReduce,
                                int calls = 1) {
  algos::CollArgs args;
  args.coll = coll;
  args.count = bytes / 4;
  args.nranks = topo.nranks();
  args.typeSize = 4;
  args.chunkCount = chunkBytes ? chunkBytes / 4 : args.count;
  args.topology = &topo;
  const algos::Algorithm& a = byName(algo, args);
  if (!a.supports(args)) return {};
  algos::OperationOptions options;
  options.signaturesOnDataEdges = true;
  options.symmetry = symmetry;
  options.approximateSymmetry = approximateSymmetry;
  options.maxSteps = maxSteps;
  if (built) *built = 0;
  algos::OperationReport report;
  algos::simulateOperation(
      topo.nranks(),
      [&](int r, algos::Schedule& storage) -> const algos::Schedule& {
        if (built) ++*built;
        algos::CollArgs v = args;
        v.rank = r;
        storage = a.build(v);
        if (calls > 1) storage = algos::repeatSchedule(storage, calls);
        return storage;
      },
      4, topo, options, &report);
  return report;
}

// A Clos of `pods` pods of 2 racks of 4 hosts of 4 ranks, racks oversubscribed 2:1.
Topology clos(int pods) {
  const int n = 32 * pods;
  std::vector<int> host(n), rack(n), pod(n);
  for (int r = 0; r < n; ++r) host[r] = r / 4, rack[r] = r / 16, pod[r] = r / 32;
  Topology t;
  t.groupOf = {host, rack, pod};
  t.link = {{0.5, 1.0 / 8e3}, {2, 1.0 / 12.5e3}, {4, 1.0 / 25e3}, {6, 1.0 / 25e3}};
  return t;
}

TEST(OperationSim, ABlockOfRanksPricesWhatEveryRankDoes) {
  const Topology topo = clos(2);
  for (size_t bytes : {size_t{64} << 10, size_t{1} << 20, size_t{16} << 20}) {
    for (const char* algo : {"ring", "hier", "hierpipe", "rhd", "tree", "rackring"}) {
      const algos::OperationReport all = simulate(algo, topo, bytes, false, 512 << 10);
      const algos::OperationReport block = simulate(algo, topo, bytes, true, 512 << 10);
      if (all.period == 0) continue;  // declines the call (hierpipe below its pieces' size)
      ASSERT_TRUE(std::isfinite(all.us)) << algo;
      EXPECT_EQ(all.period, 64);
      // Exact where the events meet their ties alike; otherwise the order in which equal-time
      // messages take a shared port moves the price a little (hier and rhd at 16 MiB).
      EXPECT_NEAR(block.us, all.us, 0.02 * all.us) << algo << " " << bytes;
      for (size_t l = 0; l < all.levelBytes.size(); ++l)
        EXPECT_NEAR(block.levelBytes[l], all.levelBytes[l], 1e-6 * all.levelBytes[l] + 1)
            << algo << " " << bytes << " level " << l;
    }
  }
  // The flat ring is the same on every pod: one pod stands for both. A tree has one root, so
  // every rank is simulated.
  EXPECT_EQ(simulate("ring", topo, 1 << 20, true).period, 32);
  EXPECT_EQ(simulate("tree", topo, 1 << 20, true).period, 64);
  const algos::OperationReport ring = simulate("ring", topo, 1 << 20, true);
  EXPECT_DOUBLE_EQ(ring.us, simulate("ring", topo, 1 << 20, false).us);
  // The ring crosses racks at two of its 64 hops: the rack uplinks are what it waits for.
  EXPECT_EQ(ring.busiestLevel, 0);
}

// Recursive halving and doubling pairs rank r with r XOR 2^i: on a power-of-two Clos a pod's
// ranks stand for the others by XOR (a shift by a pod would pair them wrongly), and price what
// every rank simulated does. XOR by less than a pod would keep a rack or a pod where it is and
// share its port among the blocks, so the block is a pod. (From a few chunks a part, which
// earlier sends a reduction waits behind depends on the side of each split the rank kept, so
// the schedules differ by more than their peers, and no exact block remains.)
TEST(OperationSim, RhdBlocksAreAPodApartByXor) {
  const Topology topo = clos(4);
  for (size_t bytes : {size_t{64} << 10, size_t{1} << 20}) {
    const algos::OperationReport all = simulate("rhd", topo, bytes, false, 512 << 10);
    const algos::OperationReport block = simulate("rhd", topo, bytes, true, 512 << 10);
    ASSERT_TRUE(std::isfinite(all.us)) << bytes;
    EXPECT_EQ(block.period, 32) << bytes;
    EXPECT_TRUE(block.xorBlocks) << bytes;
    EXPECT_NEAR(block.us, all.us, 0.02 * all.us) << bytes;
    for (size_t l = 0; l < all.levelBytes.size(); ++l)
      EXPECT_NEAR(block.levelBytes[l], all.levelBytes[l], 1e-6 * all.levelBytes[l] + 1)
          << bytes << " level " << l;
  }
  // Three pods are no power of two: every rank is simulated.
  EXPECT_EQ(simulate("rhd", clos(3), 1 << 20, true, 512 << 10).period, 96);
  // A ring is a shift, never XOR.
  EXPECT_FALSE(simulate("ring", topo, 1 << 20, true, 512 << 10).xorBlocks);
}

// Hierarchical AllReduce's top ring takes its chunks from the stage below in one order and sends
// them in its members' order, so blocks differ in which step a send waits for, and no exact
// period exists; the approximate one lets a block stand for the others all the same, a little
// off the whole simulation.
TEST(OperationSim, AnApproximateBlockPricesHierNearEveryRank) {
  const Topology topo = clos(4);
  int approximated = 0;
  for (size_t bytes : {size_t{1} << 20, size_t{16} << 20, size_t{64} << 20}) {
    const algos::OperationReport all = simulate("hier", topo, bytes, false, 512 << 10);
    const algos::OperationReport exact = simulate("hier", topo, bytes, true, 512 << 10);
    const algos::OperationReport block = simulate("hier", topo, bytes, true, 512 << 10, true);
    ASSERT_TRUE(std::isfinite(all.us)) << bytes;
    EXPECT_EQ(all.period, 128);
    EXPECT_LE(block.period, exact.period) << bytes;
    if (exact.period < 128) {
      EXPECT_EQ(block.us, exact.us) << "an exact period is taken first, " << bytes;
      continue;
    }
    ++approximated;
    EXPECT_EQ(block.period, 32) << bytes;
    EXPECT_NEAR(block.us, all.us, 0.02 * all.us) << bytes;
    for (size_t l = 0; l < all.levelBytes.size(); ++l)
      EXPECT_NEAR(block.levelBytes[l], all.levelBytes[l], 1e-6 * all.levelBytes[l] + 1)
          << bytes << " level " << l;
  }
  EXPECT_GT(approximated, 0) << "no size left the exact period for the approximate one";
  // A tree has no period, approximate or not.
  EXPECT_EQ(simulate("tree", topo, 16 << 20, true, 512 << 10, true).period, 128);
}

// Closed forms on a non-blocking fabric (docs/scale.md), B bytes over n ranks:
//   ring: 2 (n - 1) (alpha + B/n beta) + (n - 1) B/n gamma
TEST(OperationSim, RingTakesItsClosedForm) {
  const double alpha = 5, beta = 1.0 / 12.5e3, gamma = 1.0 / 40e3;
  for (int n : {64, 256, 1024}) {
    Topology flat = Topology::flat(n, {alpha, beta});
    flat.gammaUsPerByte = gamma;
    for (size_t bytes : {size_t{1} << 20, size_t{64} << 20}) {
      const double b = static_cast<double>(bytes);
      const double expected = 2 * (n - 1) * (alpha + b / n * beta) + (n - 1) * b / n * gamma;
      const algos::OperationReport r = simulate("ring", flat, bytes, true);
      EXPECT_NEAR(r.us, expected, 0.05 * expected) << n << " ranks, " << bytes << " B";
      EXPECT_EQ(r.period, 1) << "every rank of a flat ring is alike";
    }
  }
}

// Two levels, g ranks on each of m hosts, every host's NIC shared by its g ranks:
//   hier: 2 (g - 1) alpha0 + 2 (g - 1)/g B beta0 + (g - 1)/g B gamma           (inside hosts)
//       + 2 (m - 1) max(alpha1 + B/(g m) beta1, B/m beta1) + (m - 1)/m B/g gamma  (between)
// The g rings between hosts each carry B/g, all through the one NIC: a step of one ring takes
// its latency and its own bytes, or the NIC's time for all g rings' bytes, whichever is longer
// (one ring's latency overlaps the others' transfers).
TEST(OperationSim, HierarchicalAllReduceTakesItsClosedForm) {
  const double alpha0 = 0.5, beta0 = 1.0 / 50e3, alpha1 = 5, beta1 = 1.0 / 12.5e3,
               gamma = 1.0 / 40e3;
  const int g = 8;
  for (int m : {8, 32, 128}) {
    std::vector<int> hostOf(static_cast<size_t>(g * m));
    for (size_t r = 0; r < hostOf.size(); ++r) hostOf[r] = static_cast<int>(r) / g;
    Topology topo = Topology::hostsAndRacks(hostOf, {}, {alpha0, beta0}, {alpha1, beta1}, {});
    topo.gammaUsPerByte = gamma;
    for (size_t bytes : {size_t{8} << 20, size_t{256} << 20}) {
      const double b = static_cast<double>(bytes);
      const double inside = 2 * (g - 1) * alpha0 + 2.0 * (g - 1) / g * b * beta0 +
                            static_cast<double>(g - 1) / g * b * gamma;
      const double step = std::max(alpha1 + b / (g * m) * beta1, b / m * beta1);
      const double between = 2 * (m - 1) * step + static_cast<double>(m - 1) / m * b / g * gamma;
      const algos::OperationReport r = simulate("hier", topo, bytes, true);
      EXPECT_NEAR(r.us, inside + between, 0.05 * (inside + between))
          << g * m << " ranks, " << bytes << " B";
    }
  }
}

// Double binary tree, one rank per host on a non-blocking fabric, chunks of c bytes: every rank
// is inside one tree and a leaf of the other, so every NIC carries 2 B each way, and a chunk
// climbs and descends d = ceil(log2 n) levels:
//   tree: 2 B beta + 2 d (alpha + c beta)            (docs/scale.md)
// A connection sends one message at a time, so a leaf's chunks, all ready at the start, do not
// book its NIC ahead of the other tree's pipeline (which then waited behind them: 1.5-1.9 times
// 2 B beta). The simulation stays above the form, more so the deeper the tree (1.16-1.29 times
// it): on every port four connections take turns, so a chunk's hop waits for the others'
// messages where the form has it hop at the link's rate (docs/scale.md).
TEST(OperationSim, DoubleBinaryTreeComesNearItsClosedForm) {
  const double alpha = 5, beta = 1.0 / 12.5e3;
  const size_t bytes = size_t{64} << 20, chunk = size_t{1} << 20;
  for (int n : {8, 64, 1024}) {
    const Topology flat = Topology::flat(n, {alpha, beta});
    const double nics = 2 * static_cast<double>(bytes) * beta;
    const double form = nics + 2 * std::ceil(std::log2(n)) * (alpha + chunk * beta);
    const algos::OperationReport r = simulate("tree", flat, bytes, true, chunk);
    EXPECT_GE(r.us, form) << n << " ranks";
    EXPECT_LE(r.us, 1.3 * form) << n << " ranks";
    EXPECT_NEAR(r.busiestUs, nics, 1e-6 * nics) << n << " ranks: the busiest NIC carries 2 B";
  }
}

// Calls back to back (braid-sim --calls), as a benchmark's loop issues them: a chain Broadcast
// of k chunks over n ranks takes (n - 1 + k - 1) c beta alone, but its root starts the next
// call once its own sends have left, so N calls keep the chain full and take
// (n - 1 + N k - 1) c beta (copies made fast here: a relay's copy of each chunk at the default
// 10 GB/s would be the chain's slowest stage). A ring AllReduce, whose ranks all end together,
// gains nothing.
TEST(OperationSim, CallsBackToBackOverlapAPipelinesFillAndDrain) {
  const double beta = 1.0 / 12.5e3;
  const int n = 8, k = 16, calls = 10;
  const size_t chunk = size_t{64} << 10, bytes = k * chunk;
  Topology flat = Topology::flat(n, {0, beta});
  flat.link[0].betaUsPerByte = flat.gammaUsPerByte = beta / 1000;
  const double hop = static_cast<double>(chunk) * beta;
  const algos::Collective bcast = algos::Collective::Broadcast;
  const double alone = simulate("chain", flat, bytes, false, chunk, false, 0, nullptr, bcast).us;
  EXPECT_NEAR(alone, (n - 1 + k - 1) * hop, 0.01 * alone);
  const double stream =
      simulate("chain", flat, bytes, false, chunk, false, 0, nullptr, bcast, calls).us;
  EXPECT_NEAR(stream, (n - 1 + calls * k - 1) * hop, 0.01 * stream);

  const double ring = simulate("ring", flat, bytes, false, chunk).us;
  const double rings = simulate("ring", flat, bytes, false, chunk, false, 0, nullptr,
                                algos::Collective::AllReduce, calls)
                           .us;
  EXPECT_NEAR(rings, calls * ring, 0.01 * rings);
}

// Eight hosts on two cores (four ranks a core): each rank exchanges 1 MiB with its neighbour
// (r ^ 1) and reduces what it received, slowly (B gamma = 50 ms). Alone, a host's link moves its
// message in B beta; but the eight messages, leaving together, need 8 B x cpu of the cores' work,
// so with two cores the last of them arrives 4 B cpu after the start, and its receiver's
// reduction ends that much later. Without a CPU figure, or with a core a rank, the links alone
// price it; the cores' total work (8 B cpu / 2, the bound a whole operation had before) does
// not reach the reduction's end. The same eight ranks on one host, their messages through shared
// memory, queue for the cores the same way when the link inside a host has a CPU figure.
TEST(OperationSim, RanksThatOutnumberCoresQueueForThemAsTheirMessagesGo) {
  const size_t bytes = size_t{1} << 20;
  const double b = static_cast<double>(bytes), beta = 1.0 / 250, cpu = 1.6e-3, gamma = 50000 / b;
  auto price = [&](double ranksPerCore, double cpuUsPerByte, bool oneHost = false) {
    Topology t = Topology::flat(8, {0, beta, 0, cpuUsPerByte});
    if (oneHost) {
      t.groupOf = {std::vector<int>(8, 0)};
      t.link = {{0, beta, 0, cpuUsPerByte}, {}};
    }
    t.alphaScale = ranksPerCore;
    t.gammaUsPerByte = gamma;
    std::vector<algos::Schedule> schedules;
    for (int r = 0; r < 8; ++r) {
      algos::ScheduleBuilder s("pairs");
      s.send(r ^ 1, {algos::Buffer::Send, 0, bytes / 4});
      s.recvReduce(r ^ 1, {algos::Buffer::Send, 0, bytes / 4}, {algos::Buffer::Recv, 0, bytes / 4});
      schedules.push_back(std::move(s).finish());
    }
    return algos::estimateMicroseconds(schedules, 4, t);
  };
  const double links = b * beta + b * gamma;
  EXPECT_NEAR(price(4, 0), links, 1e-6 * links);
  EXPECT_NEAR(price(1, cpu), links, 1e-6 * links);
  EXPECT_NEAR(price(4, cpu), 8 * b * cpu / 2 + b * gamma, 1e-6 * links);
  EXPECT_NEAR(price(4, 0, true), links, 1e-6 * links);
  EXPECT_NEAR(price(4, cpu, true), 8 * b * cpu / 2 + b * gamma, 1e-6 * links);
}

// OperationOptions::maxSteps: a simulation over the budget prices nothing and says so, and it
// stops once the ranks built so far (64 or more, and an eighth of those simulated), scaled to
// all of them, pass the budget, rather than building schedules until their steps do. A flat
// ring of 512 ranks, every rank simulated, each rank's schedule the same length.
TEST(OperationSim, ABudgetStopsWhenTheRanksBuiltSoFarProjectPastIt) {
  const Topology topo = Topology::flat(512);
  auto run = [&](size_t maxSteps, int* built) {
    return simulate("ring", topo, 4 << 20, false, 0, false, maxSteps, built);
  };
  int built = 0;
  const algos::OperationReport whole = run(0, &built);
  ASSERT_FALSE(whole.overBudget);
  ASSERT_EQ(built, 512);
  // Just enough: priced as without a budget.
  const algos::OperationReport fits = run(whole.steps, &built);
  EXPECT_FALSE(fits.overBudget);
  EXPECT_EQ(fits.us, whole.us);
  // One step short: over, known at the 64th rank of 512.
  const algos::OperationReport over = run(whole.steps - 1, &built);
  EXPECT_TRUE(over.overBudget);
  EXPECT_FALSE(std::isfinite(over.us));
  EXPECT_EQ(built, 64);
}

// A block whose first rank has the most steps is not given up early: a direct Gather's root
// receives from every rank, and the others send once.
TEST(OperationSim, ABudgetIsNotJudgedByARootsSchedule) {
  const Topology topo = Topology::flat(512);
  auto run = [&](size_t maxSteps, int* built) {
    return simulate("direct", topo, 512 * 1024, false, 0, false, maxSteps, built,
                    algos::Collective::Gather);
  };
  int built = 0;
  const algos::OperationReport whole = run(0, &built);
  ASSERT_EQ(whole.period, 512);
  EXPECT_FALSE(run(whole.steps, &built).overBudget);
  EXPECT_EQ(built, 512);
  EXPECT_TRUE(run(whole.steps - 1, &built).overBudget);
}

// A schedule that cannot be built (out of memory, say) on the second thread of
// OperationOptions::buildAhead fails the simulation on the caller's thread, as it does when built
// there; it does not end the process.
TEST(OperationSim, WhatBuildingThrowsAheadReachesTheCaller) {
  const Topology topo = Topology::flat(8);
  algos::CollArgs args;
  args.count = 1024;
  args.nranks = topo.nranks();
  args.typeSize = 4;
  args.chunkCount = args.count;
  args.topology = &topo;
  const algos::Algorithm& ring = byName("ring", args);
  algos::OperationOptions options;
  options.buildAhead = true;
  for (int failing : {2, 3}) {  // built ahead (on a machine of two cores), and here
    algos::OperationReport report;
    EXPECT_THROW(algos::simulateOperation(
                     topo.nranks(),
                     [&](int r, algos::Schedule& storage) -> const algos::Schedule& {
                       if (r == failing) throw std::bad_alloc();
                       algos::CollArgs v = args;
                       v.rank = r;
                       storage = ring.build(v);
                       return storage;
                     },
                     4, topo, options, &report),
                 std::bad_alloc)
        << "rank " << failing;
  }
}

}  // namespace
}  // namespace braid
