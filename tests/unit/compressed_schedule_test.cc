// Compressed AllReduce schedules run in memory for every rank (tests/common/schedule_sim.h)
// with the real codecs: the result equals, bit for bit, what the scheme defines (every
// contribution encoded once, summed in fp32 in rank order, the sum encoded once), every rank
// holds the same bits, the error against an fp64 sum stays within the quantisation bound, no
// schedule deadlocks when sends complete only with their receives, and error feedback carries
// what top-k dropped into the next call. Also the measured comparison of the two-shot scheme
// with a ring that requantises at every hop (docs/compression.md quotes its output).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "algos/compressed_allreduce.h"
#include "algos/pattern.h"
#include "common/compressed_reference.h"
#include "common/schedule_sim.h"

namespace braid {
namespace {

using algos::Range;
using testing::int8Codec;
using testing::randomInput;
using testing::roundTripAdd;
using testing::SimRun;
using testing::sparseReference;
using testing::topkCodec;
using testing::twoShotReference;

void checkAgainst(const SimRun& run, const std::vector<float>& want, int n,
                  const std::string& what) {
  for (int r = 0; r < n; ++r)
    for (size_t e = 0; e < want.size(); ++e)
      ASSERT_EQ(run.ranks[r].recv[e], want[e]) << what << " rank " << r << " element " << e;
}

// (Every compressed algorithm against its scheme, bit for bit, on 1 to 17 ranks, every shape and
// placement: tests/unit/registry_test.cc. Here: the schemes' own properties.)

TEST(CompressedSchedule, TwoShotErrorWithinTheQuantisationBound) {
  algos::TwoShotCompressedAllReduce algo;
  for (uint32_t block : {32u, 64u, 256u}) {
    auto codec = int8Codec(block);
    for (int n : {2, 3, 5, 8, 13, 17}) {
      const size_t count = 4099;
      std::string error;
      SimRun run = testing::runCompressed(algo, *codec, n, count, 1000, false, false,
                                          testing::SendMode::Buffered, &error);
      ASSERT_EQ(error, "");
      double maxSum = 0, bound = 0, err2 = 0, ref2 = 0;
      for (int r = 0; r < n; ++r) {
        double m = 0;
        for (float x : run.inputs[r]) m = std::max(m, static_cast<double>(std::fabs(x)));
        bound += m / 254.0;
        maxSum += m;
      }
      bound += maxSum * (1 + 1.0 / 127) / 254.0 + 1e-5 * maxSum;
      for (size_t e = 0; e < count; ++e) {
        double exact = 0;
        for (int r = 0; r < n; ++r) exact += run.inputs[r][e];
        const double d = run.ranks[0].recv[e] - exact;
        ASSERT_LE(std::fabs(d), bound) << "block " << block << " n=" << n << " element " << e;
        err2 += d * d;
        ref2 += exact * exact;
      }
      EXPECT_LT(std::sqrt(err2 / ref2), 0.02) << "block " << block << " n=" << n;
    }
  }
}

// With ratio 1 top-k sends everything: the result is the fp32 sum.
TEST(CompressedSchedule, SparseWithEveryElementIsExact) {
  algos::SparseCompressedAllReduce algo;
  auto codec = topkCodec(1.0);
  std::string error;
  SimRun run = testing::runCompressed(algo, *codec, 6, 2001, 300, true, false,
                                      testing::SendMode::Rendezvous, &error);
  ASSERT_EQ(error, "");
  for (size_t e = 0; e < 2001; ++e) {
    float sum = 0;
    for (int r = 0; r < 6; ++r) sum += run.inputs[r][e];
    ASSERT_EQ(run.ranks[3].recv[e], sum) << e;
  }
}

// Error feedback through the schedule: over T calls the results add up to the inputs minus
// what the residuals still hold.
TEST(CompressedSchedule, SparseFeedbackDelaysNothingBeyondTheLastResidual) {
  algos::SparseCompressedAllReduce algo;
  auto codec = topkCodec(0.05);
  const int n = 5, T = 20;
  const size_t count = 997;
  std::vector<algos::Schedule> schedules;
  std::vector<testing::FloatRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    schedules.push_back(
        algo.build(testing::compressedArgs(*codec, n, r, count, 128, false, false, true)));
    ranks[r].residual.assign(count, 0.0f);
  }
  std::vector<double> sentSum(count, 0.0), inputSum(count, 0.0);
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < n; ++r) {
      ranks[r].send = randomInput(count, static_cast<uint32_t>(t * 100 + r));
      ranks[r].recv.assign(count, 0.0f);
      for (size_t e = 0; e < count; ++e) inputSum[e] += ranks[r].send[e];
    }
    ASSERT_EQ(testing::simulateCompressed(schedules, ranks, *codec, static_cast<uint64_t>(t)), "");
    for (size_t e = 0; e < count; ++e) sentSum[e] += ranks[0].recv[e];
  }
  double worst = 0, pending = 0;
  for (size_t e = 0; e < count; ++e) {
    double left = 0;
    for (int r = 0; r < n; ++r) left += ranks[r].residual[e];
    worst = std::max(worst, std::fabs(sentSum[e] + left - inputSum[e]));
    pending = std::max(pending, std::fabs(left));
  }
  EXPECT_LT(worst, 1e-3);
  EXPECT_GT(pending, 0.1);  // the residuals do hold something: the check above is not vacuous
}

// The question: one quantisation per contribution (two-shot) or a ring that
// dequantises, adds and requantises at every hop? The ring below is that ring's arithmetic:
// shard j's partial sum travels p - 1 hops, requantised before each, and the owner's final sum
// is quantised once for the all-gather.
TEST(CompressedSchedule, TwoShotBeatsPerHopRequantisation) {
  algos::TwoShotCompressedAllReduce algo;
  auto codec = int8Codec(64);
  std::printf("# ranks  two-shot rel L2   ring rel L2   ratio\n");
  for (int n : {4, 8, 16}) {
    const size_t count = 1 << 16;
    std::string error;
    SimRun run = testing::runCompressed(algo, *codec, n, count, 1 << 20, false, false,
                                        testing::SendMode::Buffered, &error);
    ASSERT_EQ(error, "");
    std::vector<float> ring(count, 0.0f);
    for (int j = 0; j < n; ++j) {
      const algos::Range shard = algos::evenPart(count, n, j);
      std::vector<float> partial(
          run.inputs[(j + 1) % n].begin() + static_cast<long>(shard.offset),
          run.inputs[(j + 1) % n].begin() + static_cast<long>(shard.offset + shard.count));
      for (int hop = 2; hop <= n; ++hop) {
        std::vector<float> next(shard.count, 0.0f);
        roundTripAdd(*codec, partial.data(), shard.count, next.data());
        const auto& x = run.inputs[(j + hop) % n];
        for (size_t e = 0; e < shard.count; ++e) next[e] += x[shard.offset + e];
        partial = std::move(next);
      }
      roundTripAdd(*codec, partial.data(), shard.count, ring.data() + shard.offset);
    }
    double e2 = 0, r2 = 0, ref2 = 0;
    for (size_t e = 0; e < count; ++e) {
      double exact = 0;
      for (int r = 0; r < n; ++r) exact += run.inputs[r][e];
      e2 += std::pow(run.ranks[0].recv[e] - exact, 2);
      r2 += std::pow(ring[e] - exact, 2);
      ref2 += exact * exact;
    }
    const double twoShot = std::sqrt(e2 / ref2), perHop = std::sqrt(r2 / ref2);
    std::printf("%7d  %15.5f  %12.5f  %6.2f\n", n, twoShot, perHop, perHop / twoShot);
    EXPECT_LT(twoShot, perHop) << n;
  }
}

// c2hier quantises three times (each input, each group's sum, the total), half a step each,
// with steps from the sum over ranks of each rank's largest magnitude: every rank must hold the
// same bits, within that of the exact sum (divided by `div` for Avg), and a long tensor within 3%
// relative L2 error.
void expectHierarchicalInt8(const SimRun& run, int n, size_t count, double div,
                            const std::string& what) {
  double total = 0, err2 = 0, ref2 = 0;
  for (int r = 0; r < n; ++r) {
    double m = 0;
    for (float x : run.inputs[r]) m = std::max(m, static_cast<double>(std::fabs(x)));
    total += m;
  }
  const double bound = (3 * total / 254.0 * 1.02 + 1e-5 * total) / div;
  for (size_t e = 0; e < count; ++e) {
    double exact = 0;
    for (int r = 0; r < n; ++r) exact += run.inputs[r][e];
    exact /= div;
    for (int r = 1; r < n; ++r)
      ASSERT_EQ(run.ranks[r].recv[e], run.ranks[0].recv[e]) << what << " rank " << r;
    const double d = run.ranks[0].recv[e] - exact;
    ASSERT_LE(std::fabs(d), bound) << what << " element " << e;
    err2 += d * d;
    ref2 += exact * exact;
  }
  if (count > 100) {
    EXPECT_LT(std::sqrt(err2 / ref2), 0.03) << what;
  }
}

// c2hier on equal racks (and hosts with several ranks): every rank the same bits, the error of
// three quantisations at most, and no deadlock when sends complete only with their receives.
TEST(CompressedSchedule, HierarchicalOnEqualGroups) {
  algos::HierCompressedAllReduce algo;
  auto codec = int8Codec();
  struct Shape {
    int racks, hostsPerRack, ranksPerHost;
  };
  for (Shape shape : {Shape{2, 2, 1}, Shape{2, 4, 1}, Shape{3, 3, 1}, Shape{4, 2, 1},
                      Shape{2, 2, 2}, Shape{1, 3, 2}}) {
    const int n = shape.racks * shape.hostsPerRack * shape.ranksPerHost;
    std::vector<int> hostOf(n), rackOf(shape.racks * shape.hostsPerRack);
    for (int r = 0; r < n; ++r) hostOf[r] = r / shape.ranksPerHost;
    for (size_t h = 0; h < rackOf.size(); ++h) rackOf[h] = static_cast<int>(h) / shape.hostsPerRack;
    const algos::Topology topo = algos::Topology::hostsAndRacks(hostOf, rackOf, {}, {}, {});
    for (size_t count : {1ul, 5ul, 777ul, 4099ul})
      for (bool inPlace : {false, true}) {
        const std::string what =
            std::to_string(shape.racks) + "x" + std::to_string(shape.hostsPerRack) + "x" +
            std::to_string(shape.ranksPerHost) + " count=" + std::to_string(count);
        for (int r = 0; r < n; ++r) {
          algos::CollArgs a =
              testing::compressedArgs(*codec, n, r, count, 100, inPlace, count % 2 == 0, false);
          a.topology = &topo;
          ASSERT_TRUE(algo.supports(a)) << what;
        }
        std::string error;
        const SimRun run =
            testing::runCompressed(algo, *codec, n, count, 100, inPlace, count % 2 == 0,
                                   testing::SendMode::Rendezvous, &error, &topo, 5);
        ASSERT_EQ(error, "") << what;
        expectHierarchicalInt8(run, n, count, count % 2 == 0 ? n : 1, what);
      }
  }
  // One group, or every rank a group of its own: nothing to gain (the selector takes c2shot).
  const algos::Topology oneRack = algos::Topology::hostsAndRacks({0, 1, 2}, {0, 0, 0}, {}, {}, {});
  algos::CollArgs a = testing::compressedArgs(*codec, 3, 0, 10, 10, false, false, false);
  a.topology = &oneRack;
  EXPECT_FALSE(algo.supports(a));
  const algos::Topology flat = algos::Topology::flat(4);
  a = testing::compressedArgs(*codec, 4, 0, 10, 10, false, false, false);
  a.topology = &flat;
  EXPECT_FALSE(algo.supports(a));
}

// c2hier on racks of different sizes: units are handled by member u mod the rack's size.
TEST(CompressedSchedule, HierarchicalOnUnevenGroups) {
  algos::HierCompressedAllReduce algo;
  auto codec = int8Codec();
  for (std::vector<int> rackOf :
       {std::vector<int>{0, 0, 0, 1}, std::vector<int>{0, 1, 1, 1, 1, 2, 0},
        std::vector<int>{0, 1, 2, 1, 1}, std::vector<int>{1, 0, 1, 1, 1, 1, 0, 0, 1},
        std::vector<int>{0, 1, 0, 1, 0}})
    for (size_t count : {1ul, 6ul, 3001ul})
      for (bool inPlace : {false, true}) {
        const int n = static_cast<int>(rackOf.size());
        std::vector<int> hostOf(n);
        for (int r = 0; r < n; ++r) hostOf[r] = r;
        const algos::Topology topo = algos::Topology::hostsAndRacks(hostOf, rackOf, {}, {}, {});
        const std::string what = std::to_string(n) + " ranks, count " + std::to_string(count);
        const bool average = count == 6;
        for (int r = 0; r < n; ++r) {
          algos::CollArgs a =
              testing::compressedArgs(*codec, n, r, count, 250, inPlace, average, false);
          a.topology = &topo;
          ASSERT_TRUE(algo.supports(a)) << what;
        }
        std::string error;
        const SimRun run = testing::runCompressed(algo, *codec, n, count, 250, inPlace, average,
                                                  testing::SendMode::Rendezvous, &error, &topo, 7);
        ASSERT_EQ(error, "") << what;
        expectHierarchicalInt8(run, n, count, average ? n : 1, what);
      }
}

// csparsehier forwards the very messages csparse sends directly: the same bits.
TEST(CompressedSchedule, HierarchicalSparseIsTheSparseSchemeBitForBit) {
  algos::HierSparseCompressedAllReduce algo;
  auto codec = topkCodec(0.05);
  struct Shape {
    int racks, hostsPerRack;
  };
  for (Shape shape : {Shape{2, 2}, Shape{2, 4}, Shape{3, 3}, Shape{4, 2}, Shape{5, 3}}) {
    const int n = shape.racks * shape.hostsPerRack;
    std::vector<int> hostOf(n), rackOf(n);
    for (int r = 0; r < n; ++r) {
      hostOf[r] = r;
      rackOf[r] = (r * 7 + 3) % shape.racks;  // racks interleaved over rank order
    }
    // Equal racks need each residue equally often: 7 is coprime to every rack count here.
    const algos::Topology topo = algos::Topology::hostsAndRacks(hostOf, rackOf, {}, {}, {});
    for (size_t count : {1ul, 29ul, 1500ul})
      for (size_t chunk : {64ul, 1ul << 20})
        for (bool inPlace : {false, true}) {
          const std::string what =
              std::to_string(shape.racks) + "x" + std::to_string(shape.hostsPerRack) +
              " count=" + std::to_string(count) + " chunk=" + std::to_string(chunk);
          const bool average = count % 2 == 1;
          for (int r = 0; r < n; ++r) {
            algos::CollArgs a =
                testing::compressedArgs(*codec, n, r, count, chunk, inPlace, average, false);
            a.topology = &topo;
            ASSERT_TRUE(algo.supports(a)) << what;
          }
          std::string error;
          const SimRun run =
              testing::runCompressed(algo, *codec, n, count, chunk, inPlace, average,
                                     testing::SendMode::Rendezvous, &error, &topo, 50);
          ASSERT_EQ(error, "") << what;
          checkAgainst(run, sparseReference(*codec, run.inputs, count, chunk, average), n, what);
        }
  }
  // Racks of different sizes (and a lone host): gateways wrap around the smaller racks.
  for (std::vector<int> rackOf :
       {std::vector<int>{0, 0, 0, 1}, std::vector<int>{0, 1, 1, 1, 1, 2, 0},
        std::vector<int>{0, 1, 2, 1, 1}, std::vector<int>{1, 0, 1, 1, 1, 1, 0, 0, 1}}) {
    const int n = static_cast<int>(rackOf.size());
    std::vector<int> hostOf(n);
    for (int r = 0; r < n; ++r) hostOf[r] = r;
    const algos::Topology topo = algos::Topology::hostsAndRacks(hostOf, rackOf, {}, {}, {});
    for (bool inPlace : {false, true}) {
      std::vector<algos::Schedule> schedules;
      SimRun run;
      run.ranks.resize(n);
      for (int r = 0; r < n; ++r) {
        algos::CollArgs a = testing::compressedArgs(*codec, n, r, 1500, 64, inPlace, false, false);
        a.topology = &topo;
        ASSERT_TRUE(algo.supports(a)) << n;
        schedules.push_back(algo.build(a));
        run.inputs.push_back(randomInput(1500, 90u + static_cast<uint32_t>(r)));
        run.ranks[r].recv = inPlace ? run.inputs[r] : std::vector<float>(1500, -3.0f);
        if (!inPlace) run.ranks[r].send = run.inputs[r];
      }
      ASSERT_EQ(testing::simulateCompressed(schedules, run.ranks, *codec, 1,
                                            testing::SendMode::Rendezvous),
                "")
          << n << " ranks";
      checkAgainst(run, sparseReference(*codec, run.inputs, 1500, 64, false), n,
                   std::to_string(n) + " ranks");
    }
  }
}

TEST(CompressedSchedule, ExactSimulatorRefusesCodecSteps) {
  algos::TwoShotCompressedAllReduce algo;
  auto codec = int8Codec();
  std::vector<algos::Schedule> s;
  std::vector<testing::SimRank> ranks(2);
  for (int r = 0; r < 2; ++r) {
    s.push_back(algo.build(testing::compressedArgs(*codec, 2, r, 10, 10, false, false, false)));
    ranks[r].send.assign(10, 1);
    ranks[r].recv.assign(10, 0);
  }
  EXPECT_NE(testing::simulate(s, ranks).find("codec step"), std::string::npos);
}

}  // namespace
}  // namespace braid
