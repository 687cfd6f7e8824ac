// Grouping hosts into racks from measurements (pure), and the probe that picks which pairs to
// measure through an injected callback: synthetic clusters with noise, no network.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <set>
#include <thread>

#include "topo/comm_topology.h"
#include "topo/racks.h"

namespace braid::topo {
namespace {

// A synthetic cluster: rack[h] per host; pairs in one rack get `inside` Gbit/s, others
// `across`, each times a uniform factor in [1 - noise, 1 + noise].
struct Synthetic {
  std::vector<int> rack;
  double inside = 100, across = 12.5;
  double noise = 0.2;
  std::mt19937 rng{7};
  int calls = 0;

  LinkSample measure(int a, int b) {
    ++calls;
    std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
    bool same = rack[static_cast<size_t>(a)] == rack[static_cast<size_t>(b)];
    return {(same ? 3.0 : 12.0) * jitter(rng), (same ? inside : across) * jitter(rng)};
  }
  MeasureFn fn() {
    return [this](int a, int b, LinkSample* out) {
      *out = measure(a, b);
      return Status::Ok();
    };
  }
  std::vector<PairSample> allPairs() {
    std::vector<PairSample> out;
    for (int a = 0; a < static_cast<int>(rack.size()); ++a)
      for (int b = a + 1; b < static_cast<int>(rack.size()); ++b)
        out.push_back({a, b, measure(a, b)});
    return out;
  }
};

// Racks are numbered by their lowest host, so the expectation is the synthetic assignment
// renumbered the same way.
std::vector<int> canonical(const std::vector<int>& rack) {
  std::vector<int> seen, out;
  for (int r : rack) {
    auto it = std::find(seen.begin(), seen.end(), r);
    out.push_back(static_cast<int>(it - seen.begin()));
    if (it == seen.end()) seen.push_back(r);
  }
  return out;
}

TEST(Racks, EightHostsTwoRacksFromAllPairsWithNoise) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    Synthetic s{{0, 0, 0, 0, 1, 1, 1, 1}};
    s.rng.seed(seed);
    RackClustering c = clusterRacks(8, s.allPairs());
    EXPECT_EQ(c.racks, 2) << "seed " << seed;
    EXPECT_EQ(c.rackOfHost, canonical(s.rack)) << "seed " << seed;
    EXPECT_GT(c.thresholdGbps, 12.5 * 1.2);
    EXPECT_LT(c.thresholdGbps, 100 * 0.8);
    EXPECT_NEAR(8e-3 / c.intraRack.betaUsPerByte, 100, 20);
    EXPECT_NEAR(8e-3 / c.interRack.betaUsPerByte, 12.5, 2.5);
    EXPECT_NEAR(c.intraRack.alphaUs, 3, 0.6);
    EXPECT_NEAR(c.interRack.alphaUs, 12, 2.4);
  }
}

// Each side's link cost is the median of its samples, the token bucket and CPU per byte too.
TEST(Racks, LinkCostsAreMediansOfEachSide) {
  std::vector<PairSample> samples = {
      {0, 1, {2, 100, 200e3, 0.3e-3}}, {2, 3, {3, 90, 220e3, 0.5e-3}},
      {0, 2, {9, 30, 70e3, 0.4e-3}},   {1, 3, {7, 33, 80e3, 0.6e-3}},
      {0, 3, {8, 31, 75e3, 0.2e-3}},
  };
  RackClustering c = clusterRacks(4, samples);
  ASSERT_EQ(c.racks, 2);
  EXPECT_DOUBLE_EQ(c.intraRack.alphaUs, 2.5);
  EXPECT_DOUBLE_EQ(c.intraRack.burstBytes, 210e3);
  EXPECT_DOUBLE_EQ(c.intraRack.cpuUsPerByte, 0.4e-3);
  EXPECT_DOUBLE_EQ(c.interRack.alphaUs, 8);
  EXPECT_DOUBLE_EQ(c.interRack.betaUsPerByte, 8e-3 / 31);
  EXPECT_DOUBLE_EQ(c.interRack.burstBytes, 75e3);
  EXPECT_DOUBLE_EQ(c.interRack.cpuUsPerByte, 0.4e-3);
}

TEST(Racks, UniformBandwidthIsOneRack) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    Synthetic s{{0, 0, 0, 0, 0, 0, 0, 0}};
    s.rng.seed(seed);
    RackClustering c = clusterRacks(8, s.allPairs());
    EXPECT_EQ(c.racks, 1) << "seed " << seed;
    EXPECT_EQ(c.rackOfHost, std::vector<int>(8, 0));
    EXPECT_EQ(c.thresholdGbps, 0);
  }
}

TEST(Racks, NoMeasurementsIsOneRack) {
  RackClustering c = clusterRacks(5, {});
  EXPECT_EQ(c.racks, 1);
  EXPECT_EQ(c.rackOfHost, std::vector<int>(5, 0));
}

TEST(Racks, BadSamplesAreIgnored) {
  std::vector<PairSample> samples = {
      {0, 1, {2, 100}}, {2, 3, {2, 100}}, {1, 2, {10, 10}}, {0, 0, {1, 1}},  // self
      {0, 9, {1, 1}},                                                        // no such host
      {0, 3, {1, 0}},                                                        // no bandwidth
      {1, 3, {1, -5}},                                                       // nonsense
  };
  RackClustering c = clusterRacks(4, samples);
  EXPECT_EQ(c.racks, 2);
  EXPECT_EQ(c.rackOfHost, (std::vector<int>{0, 0, 1, 1}));
}

// A slow host (racks.h): alone in its rack while the others share racks, its links slower by
// minGapRatio or more than those between the other racks. Probed as the runtime probes, with
// `slow` a factor on every pair of host `host` (its own link), on top of the racks' rates.
RackClustering probeWithSlowHost(std::vector<int> rack, int host, double slow, unsigned seed) {
  Synthetic s{std::move(rack)};
  s.rng.seed(seed);
  MeasureFn fn = [&](int a, int b, LinkSample* out) {
    *out = s.measure(a, b);
    if (a == host || b == host) out->bandwidthGbps = std::min(out->bandwidthGbps, slow);
    return Status::Ok();
  };
  RackClustering c;
  EXPECT_TRUE(probeRacks(static_cast<int>(s.rack.size()), fn, {}, &c).ok());
  return c;
}

TEST(SlowHost, OneHostsSlowLinkAmongFastOnesIsNamed) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    RackClustering c = probeWithSlowHost({0, 0, 0, 0, 0, 0, 0, 0}, 3, 10, seed);
    EXPECT_EQ(c.slowHost, 3) << "seed " << seed;
    EXPECT_LE(c.slowHostGbps, 10);
    EXPECT_GT(c.othersGbps, 70);  // in-rack pairs, 100 +- 20%
  }
}

TEST(SlowHost, ASlowHostInOneOfTwoRacksIsNamed) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    // Uplinks at 12.5 (the others' cross-rack median), host 6's link at 5: 2.5x slower.
    RackClustering c = probeWithSlowHost({0, 1, 0, 1, 0, 1, 0, 1}, 6, 5, seed);
    EXPECT_EQ(c.racks, 3) << "seed " << seed;
    EXPECT_EQ(c.slowHost, 6) << "seed " << seed;
    EXPECT_LE(c.slowHostGbps, 5);
  }
}

TEST(SlowHost, RacksAndARackOfOneAsFastAsTheUplinksNameNobody) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    EXPECT_EQ(probeWithSlowHost({0, 0, 0, 0, 1, 1, 1, 1}, -1, 0, seed).slowHost, -1);
    EXPECT_EQ(probeWithSlowHost({0, 0, 0, 0, 0, 0, 0, 0}, -1, 0, seed).slowHost, -1);
    // Host 6 is a rack of its own, behind an uplink like the other racks'.
    RackClustering c = probeWithSlowHost({0, 0, 0, 1, 1, 1, 2}, -1, 0, seed);
    EXPECT_EQ(c.racks, 3) << "seed " << seed;
    EXPECT_EQ(c.slowHost, -1) << "seed " << seed;
  }
}

// Of two slow hosts the slower is named (the one the others wait for longest); host 5's links
// are no slower than the uplinks to host 2's rack of one.
TEST(SlowHost, OfTwoTheSlowerIsNamed) {
  std::vector<PairSample> samples;
  auto rate = [](int a, int b) { return a == 2 || b == 2 ? 5.0 : a == 5 || b == 5 ? 10.0 : 100.0; };
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b) samples.push_back({a, b, {3, rate(a, b)}});
  RackClustering c = clusterRacks(6, samples);
  EXPECT_EQ(c.racks, 3);
  EXPECT_EQ(c.slowHost, 2);
  EXPECT_EQ(c.slowHostGbps, 5);  // its fastest pair
  EXPECT_EQ(c.othersGbps, 100);
}

struct ProbeCase {
  std::vector<int> rack;
  int racks;
};

class Probe : public ::testing::TestWithParam<ProbeCase> {};

TEST_P(Probe, FindsTheRacksWithFewMeasurements) {
  const ProbeCase& pc = GetParam();
  const int n = static_cast<int>(pc.rack.size());
  for (unsigned seed = 1; seed <= 10; ++seed) {
    Synthetic s{pc.rack};
    s.rng.seed(seed);
    RackClustering c;
    std::vector<PairSample> samples;
    Status st = probeRacks(n, s.fn(), {}, &c, &samples);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(c.racks, pc.racks) << "seed " << seed;
    EXPECT_EQ(c.rackOfHost, canonical(pc.rack)) << "seed " << seed;
    EXPECT_LE(static_cast<int>(samples.size()), s.calls);
    EXPECT_LE(s.calls, 4 * n) << "the probe is bounded, not all pairs";
    EXPECT_LT(s.calls, n * (n - 1) / 2) << "fewer than all pairs";
    std::set<std::pair<int, int>> pairs;
    for (const PairSample& p : samples)
      EXPECT_TRUE(pairs.insert({std::min(p.a, p.b), std::max(p.a, p.b)}).second);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Clusters, Probe,
    ::testing::Values(
        ProbeCase{{0, 0, 0, 0, 1, 1, 1, 1}, 2},  // contiguous
        ProbeCase{{0, 1, 0, 1, 0, 1, 0, 1}, 2},  // interleaved: the ring sees only slow pairs
        ProbeCase{{1, 0, 0, 0, 0, 0, 0, 0}, 2},  // host 0 alone: the star sees only slow pairs
        ProbeCase{{0, 0, 0, 0, 0, 0, 0, 0}, 1},  // uniform
        ProbeCase{{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}, 4},  // four racks of three
        ProbeCase{{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2}, 3}));

// `s`'s measurements, except that the first of the pair (a, b) (lower host first) comes out at
// `gbps`; *spoiled says whether it happened.
MeasureFn spoilFirst(Synthetic& s, int a, int b, double gbps, bool* spoiled) {
  return [&s, a, b, gbps, spoiled](int x, int y, LinkSample* out) {
    *out = s.measure(x, y);
    if (std::min(x, y) == a && std::max(x, y) == b && !*spoiled) {
      *spoiled = true;
      out->bandwidthGbps = gbps;
    }
    return Status::Ok();
  };
}

// One in-rack pair measured at an uplink's rate the first time (a loaded machine): with racks
// interleaved, that pair is host 2's only one inside its rack, so the first clustering leaves
// host 2 alone. The probe measures it again and finds the two real racks.
TEST(Probe, OneBadMeasurementDoesNotMakeARack) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    Synthetic s{{0, 1, 0, 1, 0, 1, 0, 1}};
    s.rng.seed(seed);
    bool spoiled = false;
    MeasureFn noisy = spoilFirst(s, 0, 2, s.across, &spoiled);
    RackClustering c;
    std::vector<PairSample> samples;
    ASSERT_TRUE(probeRacks(8, noisy, {}, &c, &samples).ok());
    EXPECT_TRUE(spoiled);
    EXPECT_EQ(c.racks, 2) << "seed " << seed;
    EXPECT_EQ(c.rackOfHost, canonical(s.rack)) << "seed " << seed;
    EXPECT_LE(s.calls, 4 * 8);
  }
}

// Every measured pair between two halves of one rack comes out at an uplink's rate the first
// time: the first clustering cuts the rack in two, and no host is left alone. The fastest pair
// between each two racks is measured again, and the real rack comes back.
TEST(Probe, BadMeasurementsDoNotCutARackInTwo) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    Synthetic s{{0, 0, 0, 0, 1, 1, 1, 1}};
    s.rng.seed(seed);
    std::set<std::pair<int, int>> spoiled;
    MeasureFn noisy = [&](int a, int b, LinkSample* out) {
      *out = s.measure(a, b);
      const auto pair = std::make_pair(std::min(a, b), std::max(a, b));
      if (pair.first <= 1 && (pair.second == 2 || pair.second == 3) && spoiled.insert(pair).second)
        out->bandwidthGbps = s.across;
      return Status::Ok();
    };
    RackClustering c;
    ASSERT_TRUE(probeRacks(8, noisy, {}, &c).ok());
    EXPECT_GE(spoiled.size(), 2u) << "seed " << seed;
    EXPECT_EQ(c.racks, 2) << "seed " << seed;
    EXPECT_EQ(c.rackOfHost, canonical(s.rack)) << "seed " << seed;
    EXPECT_LE(s.calls, 4 * 8);
  }
}

// One pair measured faster than any link (a shaper's burst, as seen on the emulated cluster) is
// the only pair above the split: the first clustering makes
// it a rack of two and leaves every other host alone, and the probe then spent its whole
// measurement limit placing them. Measured again it is as fast as the others: one rack.
TEST(Probe, OneBurstDoesNotMakeARack) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    Synthetic s{{0, 0, 0, 0, 0, 0, 0, 0}};
    s.rng.seed(seed);
    bool spoiled = false;
    MeasureFn noisy = spoilFirst(s, 0, 1, 2 * s.inside, &spoiled);
    RackClustering c;
    ASSERT_TRUE(probeRacks(8, noisy, {}, &c).ok());
    EXPECT_TRUE(spoiled);
    EXPECT_EQ(c.racks, 1) << "seed " << seed;
    EXPECT_EQ(c.slowHost, -1) << "seed " << seed;
    EXPECT_LE(s.calls, 2 * 8) << "seed " << seed;
  }
}

// A rack of two whose one pair measures fast again stands, every other host alone.
TEST(Probe, ARackOfTwoHeldByOnePairStands) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    Synthetic s{{0, 0, 1, 2, 3, 4}};
    s.rng.seed(seed);
    RackClustering c;
    ASSERT_TRUE(probeRacks(6, s.fn(), {}, &c).ok());
    EXPECT_EQ(c.rackOfHost, canonical(s.rack)) << "seed " << seed;
  }
}

// A host that really is alone stays alone, at the cost of one more measurement per other rack.
TEST(Probe, ALoneHostIsConfirmedOnce) {
  Synthetic s{{0, 0, 0, 1, 0, 0, 0, 0}};
  RackClustering c;
  std::vector<PairSample> samples;
  ASSERT_TRUE(probeRacks(8, s.fn(), {}, &c, &samples).ok());
  EXPECT_EQ(c.rackOfHost, canonical(s.rack));
  EXPECT_EQ(s.calls, static_cast<int>(samples.size()) + 1);
}

TEST(ProbeLimits, StopsAtTheBudget) {
  Synthetic s{{0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1}};
  ProbeOptions options;
  options.budget = std::chrono::milliseconds(50);
  MeasureFn slow = [&](int a, int b, LinkSample* out) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    *out = s.measure(a, b);
    return Status::Ok();
  };
  RackClustering c;
  ASSERT_TRUE(probeRacks(16, slow, options, &c).ok());
  // Each measurement takes at least 10 ms, so at most 5 start inside 50 ms (of the 39 pairs the
  // probe would otherwise measure). A loaded machine may fit fewer; it never fits more.
  EXPECT_LE(s.calls, 5) << "a measurement starts only inside the budget";
  EXPECT_EQ(c.rackOfHost.size(), 16u);
}

TEST(ProbeLimits, StopsAtThePairLimit) {
  Synthetic s{{0, 1, 2, 3, 4, 5, 6, 7}};  // every host its own rack: the worst case
  ProbeOptions options;
  options.maxPairs = 10;
  RackClustering c;
  ASSERT_TRUE(probeRacks(8, s.fn(), options, &c).ok());
  EXPECT_EQ(s.calls, 10);
}

TEST(ProbeLimits, MeasurementFailureNamesThePair) {
  MeasureFn broken = [](int a, int b, LinkSample*) {
    return a == 2 || b == 2 ? systemError("host unreachable") : Status::Ok();
  };
  RackClustering c;
  Status s = probeRacks(
      4,
      [&](int a, int b, LinkSample* out) {
        *out = {1, 10};
        return broken(a, b, out);
      },
      {}, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("probe between hosts 1 and 2: host unreachable"), std::string::npos)
      << s.message();
}

class ProbeEnv : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("BRAID_TOPO_PROBE");
    unsetenv("BRAID_CLUSTER_FILE");
  }
};

TEST_F(ProbeEnv, CommunicatorTopologyFromTheProbe) {
  unsetenv("BRAID_CLUSTER_FILE");
  Synthetic s{{0, 0, 0, 0, 1, 1, 1, 1}};
  CommTopologyInputs in;
  for (int h = 0; h < 8; ++h)
    for (int local = 0; local < 2; ++local)
      in.rankHosts.push_back(std::string("h").append(std::to_string(h)));
  in.intraHost = {0.2, 1e-5};
  in.interHost = {50, 1e-3};
  in.measure = s.fn();
  CommTopology t;
  ASSERT_TRUE(buildCommTopology(in, &t).ok());
  ASSERT_EQ(t.topology.levels(), 2);
  EXPECT_EQ(t.topology.groupOf[0][5], 2);
  EXPECT_EQ(t.topology.groupOf[1],
            (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(t.topology.link[0].alphaUs, 0.2);
  EXPECT_NEAR(8e-3 / t.topology.link[1].betaUsPerByte, 100, 20);
  EXPECT_NEAR(8e-3 / t.topology.link[2].betaUsPerByte, 12.5, 2.5);
  EXPECT_NE(t.describe().find("rack rack1: ranks 8-15"), std::string::npos) << t.describe();
}

TEST_F(ProbeEnv, ProbeOffMeansHostsOnly) {
  setenv("BRAID_TOPO_PROBE", "0", 1);
  Synthetic s{{0, 0, 1, 1}};
  CommTopologyInputs in;
  in.rankHosts = {"a", "b", "c", "d"};
  in.interHost = {50, 1e-3};
  in.measure = s.fn();
  CommTopology t;
  ASSERT_TRUE(buildCommTopology(in, &t).ok());
  EXPECT_EQ(s.calls, 0);
  EXPECT_EQ(t.topology.levels(), 1);
  EXPECT_DOUBLE_EQ(t.topology.link[1].alphaUs, 50);
  EXPECT_EQ(t.source, "hosts only");
}

TEST_F(ProbeEnv, AFailedProbeFallsBackToHostsOnly) {
  CommTopologyInputs in;
  in.rankHosts = {"a", "b", "c"};
  in.interHost = {50, 1e-3};
  in.measure = [](int, int, LinkSample*) { return systemError("no route"); };
  CommTopology t;
  ASSERT_TRUE(buildCommTopology(in, &t).ok());
  EXPECT_EQ(t.source, "hosts only");
  EXPECT_EQ(t.topology.groupOf[0], (std::vector<int>{0, 1, 2}));
}

// Every host sends to host h + d and receives from h - d at once, for d = 1 .. rounds; a flow
// inside a rack runs at the host link's rate, a flow between racks at its rate or the rack
// uplinks' share, whichever is less: `uplink` over the flows leaving its sender's rack or entering
// its receiver's rack in that round. Uplinks as fast as a host link are invisible to a pair
// measured alone. Each rate times a factor in [1 - noise, 1].
std::vector<PairSample> loadedRounds(const std::vector<int>& rack, double host, double uplink,
                                     int rounds, double noise, unsigned seed, int slowHost = -1,
                                     double slowGbps = 0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(1 - noise, 1);
  const int n = static_cast<int>(rack.size());
  const int racks = *std::max_element(rack.begin(), rack.end()) + 1;
  std::vector<PairSample> out;
  for (int d = 1; d <= rounds && d < n; ++d) {
    std::vector<int> leaving(static_cast<size_t>(racks)), entering(static_cast<size_t>(racks));
    for (int h = 0; h < n; ++h) {
      const int to = (h + d) % n;
      if (rack[static_cast<size_t>(h)] == rack[static_cast<size_t>(to)]) continue;
      ++leaving[static_cast<size_t>(rack[static_cast<size_t>(h)])];
      ++entering[static_cast<size_t>(rack[static_cast<size_t>(to)])];
    }
    for (int h = 0; h < n; ++h) {
      const int to = (h + d) % n;
      const int ra = rack[static_cast<size_t>(h)], rb = rack[static_cast<size_t>(to)];
      double gbps = h == slowHost || to == slowHost ? slowGbps : host;
      if (ra != rb)
        gbps = std::min({host, uplink / leaving[static_cast<size_t>(ra)],
                         uplink / entering[static_cast<size_t>(rb)]});
      out.push_back({h, to, {0, gbps * jitter(rng)}});
    }
  }
  return out;
}

TEST(RacksUnderLoad, UplinksThatOnlyARacksFlowsFillAreFound) {
  const std::vector<std::vector<int>> clusters = {
      {0, 1, 0, 1, 0, 1, 0, 1},        // ranks alternating two racks (bench/adapt.py's cluster)
      {0, 0, 0, 0, 1, 1, 1, 1},        // two racks in order: crossing pairs next to each other
      {0, 0, 0, 1, 1, 1, 2, 2},        // three racks, one of two hosts
      {0, 1, 2, 0, 1, 2},              // three racks interleaved
      {0, 0, 0, 0, 0, 1, 1, 1, 1, 1},  // ten hosts
  };
  for (const std::vector<int>& rack : clusters) {
    for (unsigned seed = 1; seed <= 10; ++seed) {
      const int n = static_cast<int>(rack.size());
      std::vector<PairSample> loaded = loadedRounds(rack, 2, 2, n - 1, 0.15, seed);
      double threshold = 0;
      std::vector<int> got = racksUnderLoad(n, loaded, {}, &threshold);
      EXPECT_EQ(got, canonical(rack)) << "hosts " << n << " seed " << seed;
      EXPECT_GT(threshold, 0);
    }
  }
}

TEST(RacksUnderLoad, AHostWithASlowLinkIsARackOfItsOwnBesideTheRacks) {
  // Host 3's link at a tenth: its flows are the slowest, the split below them is looked for again.
  for (unsigned seed = 1; seed <= 10; ++seed) {
    double threshold = 0;
    std::vector<PairSample> loaded =
        loadedRounds({0, 1, 0, 1, 0, 1, 0, 1}, 2, 2, 7, 0.15, seed, 3, 0.2);
    EXPECT_EQ(racksUnderLoad(8, loaded, {}, &threshold), (std::vector<int>{0, 1, 0, 2, 0, 1, 0, 1}))
        << seed;
    // With one switch, host 3 alone.
    loaded = loadedRounds({0, 0, 0, 0, 0, 0, 0, 0}, 2, 2, 7, 0.15, seed, 3, 0.2);
    EXPECT_EQ(racksUnderLoad(8, loaded, {}, &threshold), (std::vector<int>{0, 0, 0, 1, 0, 0, 0, 0}))
        << seed;
  }
}

TEST(RacksUnderLoad, FlowsTheCoresSlowAtRandomAreOutvoted) {
  // Every flow may lose up to half its rate (eight flows on two cores), five rounds of eight
  // hosts, one host slow or none.
  for (unsigned seed = 1; seed <= 20; ++seed) {
    double threshold = 0;
    EXPECT_EQ(racksUnderLoad(8, loadedRounds({0, 1, 0, 1, 0, 1, 0, 1}, 2, 2, 5, 0.45, seed), {},
                             &threshold),
              (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1}))
        << seed;
    EXPECT_EQ(racksUnderLoad(8, loadedRounds({0, 1, 0, 1, 0, 1, 0, 1}, 2, 2, 5, 0.45, seed, 6, 0.2),
                             {}, &threshold),
              (std::vector<int>{0, 1, 0, 1, 0, 1, 2, 1}))
        << seed;
  }
}

TEST(RacksUnderLoad, AFewRoundsOfInterleavedRacksAreEnough) {
  // Three rounds of eight hosts (the probe's budget ran out): every pair at distance 1-3.
  for (unsigned seed = 1; seed <= 10; ++seed) {
    std::vector<int> rack = {0, 1, 0, 1, 0, 1, 0, 1};
    double threshold = 0;
    EXPECT_EQ(racksUnderLoad(8, loadedRounds(rack, 2, 2, 3, 0.15, seed), {}, &threshold),
              canonical(rack));
  }
}

TEST(RacksUnderLoad, FlowsMeasuredOnTheEmulatedClusterWhereTheCoresBoundThem) {
  // Gbit/s of every flow of seven rounds, as the probe measured them on tools/netcluster's 8
  // hosts, 2 racks, ranks alternating, host links and uplinks 2 Gbit/s: a flow between racks
  // shares its uplink with three others (0.5), and the flows inside a rack, eight at once on 2
  // cores, run at 0.6-1.6. Taken one by one, some pairs fall on the wrong side of any split.
  const double flows[][3] = {
      {0, 1, 0.435}, {1, 2, 0.407}, {2, 3, 0.582}, {3, 4, 0.400}, {4, 5, 0.457}, {5, 6, 0.480},
      {6, 7, 0.502}, {7, 0, 0.489}, {0, 2, 0.690}, {1, 3, 0.672}, {2, 4, 1.037}, {3, 5, 0.828},
      {4, 6, 0.615}, {5, 7, 0.727}, {6, 0, 0.931}, {7, 1, 0.887}, {0, 3, 0.492}, {1, 4, 0.420},
      {2, 5, 0.625}, {3, 6, 0.769}, {4, 7, 0.393}, {5, 0, 0.553}, {6, 1, 0.527}, {7, 2, 0.625},
      {0, 4, 0.800}, {1, 5, 0.860}, {2, 6, 0.681}, {3, 7, 1.347}, {4, 0, 1.289}, {5, 1, 1.158},
      {6, 2, 0.963}, {7, 3, 1.118}, {0, 5, 0.438}, {1, 6, 0.519}, {2, 7, 0.435}, {3, 0, 0.644},
      {4, 1, 0.416}, {5, 2, 0.471}, {6, 3, 0.487}, {7, 4, 0.554}, {0, 6, 0.826}, {1, 7, 0.701},
      {2, 0, 0.707}, {3, 1, 1.198}, {4, 2, 1.580}, {5, 3, 0.763}, {6, 4, 1.370}, {7, 5, 1.047},
      {0, 7, 0.395}, {1, 0, 0.633}, {2, 1, 0.436}, {3, 2, 0.496}, {4, 3, 0.463}, {5, 4, 0.548},
      {6, 5, 0.420}, {7, 6, 0.548}};
  std::vector<PairSample> loaded;
  for (const auto& f : flows)
    loaded.push_back({static_cast<int>(f[0]), static_cast<int>(f[1]), {0, f[2]}});
  double threshold = 0;
  EXPECT_EQ(racksUnderLoad(8, loaded, {}, &threshold), (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(RacksUnderLoad, OneSwitchOrUplinksThatCarryEveryFlowFindNoRacks) {
  double threshold = 1;
  // One rack; then two racks whose uplinks carry all of a rack's flows at the host rate.
  EXPECT_TRUE(
      racksUnderLoad(8, loadedRounds({0, 0, 0, 0, 0, 0, 0, 0}, 2, 2, 7, 0.2, 3), {}, &threshold)
          .empty());
  EXPECT_EQ(threshold, 0);
  EXPECT_TRUE(
      racksUnderLoad(8, loadedRounds({0, 1, 0, 1, 0, 1, 0, 1}, 2, 8, 7, 0.2, 3), {}, &threshold)
          .empty());
  // Every host its own rack says nothing: four hosts in a cycle of fast pairs whose diagonals
  // are slow, so every fast pair is outvoted by the two hosts measured with both.
  const std::vector<PairSample> cycle = {{0, 1, {0, 4}}, {1, 2, {0, 4}}, {2, 3, {0, 4}},
                                         {3, 0, {0, 4}}, {0, 2, {0, 1}}, {1, 3, {0, 1}}};
  EXPECT_TRUE(racksUnderLoad(4, cycle, {}, &threshold).empty());
  EXPECT_EQ(threshold, 0);
  // Nothing measured, out-of-range hosts and rates that are not numbers are no evidence.
  EXPECT_TRUE(racksUnderLoad(4, {}, {}, &threshold).empty());
  std::vector<PairSample> bad = {
      {0, 9, {0, 1}}, {-1, 2, {0, 5}}, {1, 1, {0, 5}}, {2, 3, {0, std::nan("")}}};
  EXPECT_TRUE(racksUnderLoad(4, bad, {}, &threshold).empty());
}

TEST(RacksUnderLoad, PriceRacksTakesTheLinksFromPairsMeasuredAlone) {
  // Pairs alone: inside a rack 2 Gbit/s, across 1.9 (the uplink carries one pair at full rate).
  const std::vector<int> rack = {0, 1, 0, 1, 0, 1};
  std::vector<PairSample> alone;
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b)
      alone.push_back({a, b, {a % 2 == b % 2 ? 20.0 : 30.0, a % 2 == b % 2 ? 2.0 : 1.9}});
  RackClustering c = priceRacks(6, alone, rack, 1.2);
  EXPECT_EQ(c.racks, 2);
  EXPECT_EQ(c.rackOfHost, rack);
  EXPECT_DOUBLE_EQ(c.thresholdGbps, 1.2);
  EXPECT_NEAR(8e-3 / c.intraRack.betaUsPerByte, 2.0, 1e-9);
  EXPECT_NEAR(8e-3 / c.interRack.betaUsPerByte, 1.9, 1e-9);
  EXPECT_DOUBLE_EQ(c.intraRack.alphaUs, 20.0);
  EXPECT_DOUBLE_EQ(c.interRack.alphaUs, 30.0);
  EXPECT_EQ(c.slowHost, -1);
}

}  // namespace
}  // namespace braid::topo
