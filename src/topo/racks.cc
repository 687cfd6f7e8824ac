#include "topo/racks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "base/log.h"

namespace braid::topo {
namespace {

struct UnionFind {
  explicit UnionFind(int n) : parent(static_cast<size_t>(n)) {
    std::iota(parent.begin(), parent.end(), 0);
  }
  int find(int x) {
    while (parent[static_cast<size_t>(x)] != x)
      x = parent[static_cast<size_t>(x)] =
          parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    return x;
  }
  void join(int a, int b) {
    a = find(a), b = find(b);
    if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
  }
  // Each element's group, numbered in order of the group's lowest element.
  std::vector<int> groups() {
    std::vector<int> groupOfRoot(parent.size(), -1), out(parent.size());
    int next = 0;
    for (size_t x = 0; x < parent.size(); ++x) {
      int& g = groupOfRoot[static_cast<size_t>(find(static_cast<int>(x)))];
      if (g < 0) g = next++;
      out[x] = g;
    }
    return out;
  }
  std::vector<int> parent;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

algos::LinkCost medianLink(std::span<const PairSample> samples) {
  std::vector<double> lat, bw, burst, cpu;
  for (const PairSample& s : samples) {
    lat.push_back(s.link.latencyUs);
    bw.push_back(s.link.bandwidthGbps);
    burst.push_back(s.link.burstBytes);
    cpu.push_back(s.link.cpuUsPerByte);
  }
  double b = median(bw);
  return {median(lat), b > 0 ? 8e-3 / b : algos::LinkCost{}.betaUsPerByte, median(burst),
          median(cpu)};
}

bool usable(const PairSample& s, int nhosts) {
  return s.a >= 0 && s.b >= 0 && s.a < nhosts && s.b < nhosts && s.a != s.b &&
         s.link.bandwidthGbps > 0 && std::isfinite(s.link.bandwidthGbps);
}

// Sets out->slowHost (racks.h) from the pairs the racks were found from.
void nameSlowHost(std::span<const PairSample> valid, const RackOptions& options,
                  RackClustering* out) {
  const std::vector<int>& rackOf = out->rackOfHost;
  std::vector<int> size(static_cast<size_t>(out->racks), 0);
  for (int r : rackOf) ++size[static_cast<size_t>(r)];
  if (*std::max_element(size.begin(), size.end()) < 2) return;  // no baseline: every host alone
  for (int h = 0; h < static_cast<int>(rackOf.size()); ++h) {
    if (size[static_cast<size_t>(rackOf[static_cast<size_t>(h)])] != 1) continue;
    double fastest = 0;
    std::vector<double> others, othersAcross;
    for (const PairSample& s : valid) {
      const double bw = s.link.bandwidthGbps;
      if (s.a == h || s.b == h) {
        fastest = std::max(fastest, bw);
        continue;
      }
      others.push_back(bw);
      if (rackOf[static_cast<size_t>(s.a)] != rackOf[static_cast<size_t>(s.b)])
        othersAcross.push_back(bw);
    }
    if (fastest <= 0 || others.empty()) continue;
    // A rack of one whose links are as fast as the uplinks between the other racks is a rack.
    if (!othersAcross.empty() && fastest * options.minGapRatio > median(othersAcross)) continue;
    if (out->slowHost >= 0 && fastest >= out->slowHostGbps) continue;
    out->slowHost = h;
    out->slowHostGbps = fastest;
    out->othersGbps = median(others);
  }
}

}  // namespace

RackClustering clusterRacks(int nhosts, std::span<const PairSample> samples,
                            const RackOptions& options) {
  RackClustering out;
  out.rackOfHost.assign(static_cast<size_t>(std::max(nhosts, 0)), 0);
  out.racks = nhosts > 0 ? 1 : 0;
  std::vector<PairSample> valid;
  for (const PairSample& s : samples)
    if (usable(s, nhosts)) valid.push_back(s);
  out.intraRack = out.interRack = medianLink(valid);

  // The widest gap between neighbouring bandwidths (on a log scale, so it is a ratio).
  std::vector<double> bw;
  for (const PairSample& s : valid) bw.push_back(s.link.bandwidthGbps);
  std::sort(bw.begin(), bw.end());
  double gap = 1, threshold = 0;
  for (size_t i = 1; i < bw.size(); ++i)
    if (bw[i] / bw[i - 1] > gap) {
      gap = bw[i] / bw[i - 1];
      threshold = std::sqrt(bw[i] * bw[i - 1]);
    }
  if (gap < options.minGapRatio) return out;  // uniform: one rack

  // Hosts joined by a fast pair share a rack; a rack is what fast pairs connect.
  UnionFind uf(nhosts);
  for (const PairSample& s : valid)
    if (s.link.bandwidthGbps >= threshold) uf.join(s.a, s.b);
  std::vector<int> rackOfHost = uf.groups();
  if (*std::max_element(rackOfHost.begin(), rackOfHost.end()) == 0)
    return out;  // slow pairs inside one connected rack: outliers, not uplinks
  return priceRacks(nhosts, valid, std::move(rackOfHost), threshold, options);
}

RackClustering priceRacks(int nhosts, std::span<const PairSample> alone,
                          std::vector<int> rackOfHost, double thresholdGbps,
                          const RackOptions& options) {
  RackClustering out;
  std::vector<PairSample> valid, inside, across;
  for (const PairSample& s : alone)
    if (usable(s, nhosts)) valid.push_back(s);
  out.rackOfHost = std::move(rackOfHost);
  out.rackOfHost.resize(static_cast<size_t>(std::max(nhosts, 0)), 0);
  out.racks = nhosts > 0 ? *std::max_element(out.rackOfHost.begin(), out.rackOfHost.end()) + 1 : 0;
  out.thresholdGbps = out.racks > 1 ? thresholdGbps : 0;
  for (const PairSample& s : valid)
    (out.rackOfHost[static_cast<size_t>(s.a)] == out.rackOfHost[static_cast<size_t>(s.b)] ? inside
                                                                                          : across)
        .push_back(s);
  out.intraRack = inside.empty() ? medianLink(across) : medianLink(inside);
  out.interRack = across.empty() ? out.intraRack : medianLink(across);
  if (out.racks > 1) nameSlowHost(valid, options, &out);
  return out;
}

std::vector<int> racksUnderLoad(int nhosts, std::span<const PairSample> loaded,
                                const RackOptions& options, double* thresholdGbps) {
  *thresholdGbps = 0;
  // Each pair's faster measurement, either way: noise (a loaded core) only lowers a rate, and a
  // pair meets the same sharing both ways round a ring (round d's flows reversed are round
  // hosts - d's).
  std::map<std::pair<int, int>, double> fastest;
  for (const PairSample& s : loaded) {
    if (!usable(s, nhosts)) continue;
    auto [it, fresh] =
        fastest.try_emplace({std::min(s.a, s.b), std::max(s.a, s.b)}, s.link.bandwidthGbps);
    if (!fresh) it->second = std::max(it->second, s.link.bandwidthGbps);
  }
  // Where every host sends at once the cores may bound the fast flows too, and the two sides
  // spread into each other: the split is the one that best separates the rates in two (on a log
  // scale, the largest variance between the two sides), taken when the sides' geometric means
  // are minGapRatio apart; a pair on the wrong side is outvoted below.
  std::vector<double> logs;
  for (const auto& [pair, gbps] : fastest) logs.push_back(std::log(gbps));
  std::sort(logs.begin(), logs.end());
  const double total = std::accumulate(logs.begin(), logs.end(), 0.0);
  double best = 0, below = 0, threshold = 0, gap = 1;
  for (size_t i = 1; i < logs.size(); ++i) {
    below += logs[i - 1];
    const double n0 = static_cast<double>(i), n1 = static_cast<double>(logs.size() - i);
    const double m0 = below / n0, m1 = (total - below) / n1;
    const double between = n0 * n1 * (m1 - m0) * (m1 - m0);
    if (logs[i] > logs[i - 1] && between > best) {
      best = between;
      gap = std::exp(m1 - m0);
      threshold = std::exp((logs[i] + logs[i - 1]) / 2);
    }
  }
  if (gap < options.minGapRatio) return {};

  // fast[a][b]: 1 fast, 0 slow, -1 not measured.
  const size_t n = static_cast<size_t>(nhosts);
  std::vector<std::vector<int8_t>> fast(n, std::vector<int8_t>(n, -1));
  for (const auto& [pair, gbps] : fastest) {
    const auto [a, b] = pair;
    fast[static_cast<size_t>(a)][static_cast<size_t>(b)] =
        fast[static_cast<size_t>(b)][static_cast<size_t>(a)] = gbps >= threshold;
  }
  UnionFind uf(nhosts);
  for (const auto& [pair, gbps] : fastest) {
    if (gbps < threshold) continue;
    const std::vector<int8_t>& a = fast[static_cast<size_t>(pair.first)];
    const std::vector<int8_t>& b = fast[static_cast<size_t>(pair.second)];
    int agree = 0, disagree = 0;
    for (size_t c = 0; c < n; ++c)
      if (a[c] >= 0 && b[c] >= 0) (a[c] == b[c] ? agree : disagree)++;
    if (agree > disagree || agree + disagree == 0) uf.join(pair.first, pair.second);
  }
  std::vector<int> rackOfHost = uf.groups();
  if (rackOfHost.empty() || *std::max_element(rackOfHost.begin(), rackOfHost.end()) == 0) return {};

  // A host slow with every other (its own link) takes the split for itself, and the racks among
  // the others are below it: they are looked for again without the hosts left alone, which stay
  // racks of their own. Where no two hosts were found together nothing was learnt.
  std::vector<int> size(n, 0), others;
  for (int r : rackOfHost) ++size[static_cast<size_t>(r)];
  for (int h = 0; h < nhosts; ++h)
    if (size[static_cast<size_t>(rackOfHost[static_cast<size_t>(h)])] > 1) others.push_back(h);
  if (others.empty()) return {};
  *thresholdGbps = threshold;
  if (others.size() == n || others.size() < 3) return rackOfHost;
  std::vector<int> index(n, -1);
  for (size_t i = 0; i < others.size(); ++i)
    index[static_cast<size_t>(others[i])] = static_cast<int>(i);
  std::vector<PairSample> among;
  for (const PairSample& s : loaded)
    if (usable(s, nhosts) && index[static_cast<size_t>(s.a)] >= 0 &&
        index[static_cast<size_t>(s.b)] >= 0)
      among.push_back({index[static_cast<size_t>(s.a)], index[static_cast<size_t>(s.b)], s.link});
  double inner = 0;
  std::vector<int> sub = racksUnderLoad(static_cast<int>(others.size()), among, options, &inner);
  if (sub.empty()) return rackOfHost;
  // The hosts left alone keep a rack each; the others take the racks found among them.
  UnionFind split(nhosts);
  for (size_t i = 0; i < others.size(); ++i)
    for (size_t j = i + 1; j < others.size(); ++j)
      if (sub[i] == sub[j]) split.join(others[i], others[j]);
  return split.groups();
}

Status probeRacks(int nhosts, const MeasureFn& measure, const ProbeOptions& options,
                  RackClustering* out, std::vector<PairSample>* samplesOut) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + options.budget;
  const size_t maxPairs = static_cast<size_t>(options.maxPairs > 0 ? options.maxPairs : 4 * nhosts);
  std::vector<PairSample> samples;
  std::set<std::pair<int, int>> measured;
  size_t measurements = 0;
  bool stopped = false;

  // Measures a pair (again, with `sample`); once the budget or the measurement limit is spent it
  // sets `stopped` and the probe clusters what it has.
  auto measureOnce = [&](int a, int b, PairSample* sample) -> Status {
    if (measurements >= maxPairs || Clock::now() >= deadline) {
      stopped = true;
      return Status::Ok();
    }
    ++measurements;
    return measure(a, b, &sample->link).withContext(strfmt("probe between hosts %d and %d", a, b));
  };
  auto take = [&](int a, int b) -> Status {
    if (a == b || stopped || !measured.insert({std::min(a, b), std::max(a, b)}).second)
      return Status::Ok();
    PairSample s{a, b, {}};
    BRAID_TRY(measureOnce(a, b, &s));
    if (!stopped) samples.push_back(s);
    return Status::Ok();
  };

  // Ring and star: in a uniform cluster this is all it takes, and the ring gives the star a
  // baseline (a host 0 alone in its rack sees only slow pairs, which alone look uniform).
  for (int h = 0; h + 1 < nhosts; ++h) BRAID_TRY(take(h, h + 1));
  if (nhosts > 2) BRAID_TRY(take(nhosts - 1, 0));
  for (int h = 2; h < nhosts; ++h) BRAID_TRY(take(0, h));

  std::set<int> leaders{0};
  RackClustering racks = clusterRacks(nhosts, samples, options.racks);
  // The other way round: a shaper's burst can make one pair measure faster than any link, and
  // that pair alone above the split makes a rack of two and leaves every other host alone. A split
  // whose fast side is a single pair is accepted only if that pair measures fast again; the slower
  // of the two counts.
  std::set<size_t> remeasured;  // indices into samples, each measured again at most once
  auto confirmLoneFastPair = [&]() -> Status {
    size_t fast = samples.size(), above = 0;
    for (size_t i = 0; i < samples.size() && racks.racks > 1; ++i)
      if (samples[i].link.bandwidthGbps >= racks.thresholdGbps) ++above, fast = i;
    if (above != 1 || !remeasured.insert(fast).second) return Status::Ok();
    PairSample& s = samples[fast];
    PairSample second = s;
    BRAID_TRY(measureOnce(s.a, s.b, &second));
    if (!stopped && second.link.bandwidthGbps < s.link.bandwidthGbps) s = second;
    racks = clusterRacks(nhosts, samples, options.racks);
    return Status::Ok();
  };
  BRAID_TRY(confirmLoneFastPair());
  auto place = [&]() -> Status {
    while (!stopped) {
      // Racks that hold a leader are complete (their leader measured everything unplaced then).
      std::set<int> placedRacks;
      for (int l : leaders) placedRacks.insert(racks.rackOfHost[static_cast<size_t>(l)]);
      std::vector<int> unplaced;
      for (int h = 0; h < nhosts; ++h)
        if (!placedRacks.count(racks.rackOfHost[static_cast<size_t>(h)])) unplaced.push_back(h);
      if (unplaced.empty()) break;
      leaders.insert(unplaced.front());
      for (size_t i = 1; i < unplaced.size(); ++i) BRAID_TRY(take(unplaced.front(), unplaced[i]));
      racks = clusterRacks(nhosts, samples, options.racks);
    }
    return Status::Ok();
  };
  BRAID_TRY(place());

  // A split may owe itself to one bad measurement: with hosts of two racks interleaved, a host
  // has often a single measured pair inside its rack, and a loaded machine sometimes measures
  // that pair at an uplink's rate (a host left alone, or a rack cut in two). Noise only ever
  // lowers a measured bandwidth (contention, scheduling), so the pairs nearest the split from
  // below, the fastest measured pair between each two racks, are measured again and the faster
  // of the two kept, before the split is accepted; racks that are real stay apart. Each pair is
  // measured again at most once (and within the budget), so this ends.
  for (;;) {
    std::map<std::pair<int, int>, size_t> fastest;  // (rack, other rack) -> sample
    for (size_t i = 0; i < samples.size() && racks.racks > 1; ++i) {
      const PairSample& s = samples[i];
      const int ra = racks.rackOfHost[static_cast<size_t>(s.a)];
      const int rb = racks.rackOfHost[static_cast<size_t>(s.b)];
      if (ra == rb) continue;
      auto [it, fresh] = fastest.try_emplace({std::min(ra, rb), std::max(ra, rb)}, i);
      if (!fresh && samples[it->second].link.bandwidthGbps < s.link.bandwidthGbps) it->second = i;
    }
    std::vector<size_t> again;
    for (const auto& [key, i] : fastest)
      if (remeasured.insert(i).second) again.push_back(i);
    if (again.empty() || stopped) break;
    for (size_t i : again) {
      PairSample& s = samples[i];
      PairSample second = s;
      BRAID_TRY(measureOnce(s.a, s.b, &second));
      if (!stopped && second.link.bandwidthGbps > s.link.bandwidthGbps) s = second;
    }
    racks = clusterRacks(nhosts, samples, options.racks);
    BRAID_TRY(confirmLoneFastPair());
    BRAID_TRY(place());
  }
  BRAID_INFO(kGraph, "probe: %zu measurements between %d hosts%s: %d racks (split at %.3g Gbit/s)",
             measurements, nhosts, stopped ? " (stopped by budget or pair limit)" : "", racks.racks,
             racks.thresholdGbps);
  *out = std::move(racks);
  if (samplesOut) *samplesOut = std::move(samples);
  return Status::Ok();
}

}  // namespace braid::topo
