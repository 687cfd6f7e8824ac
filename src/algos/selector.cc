#include "algos/selector.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>

#include "algos/cost_model.h"
#include "algos/operation_cost.h"
#include "base/strfmt.h"

namespace braid::algos {
namespace {

// Up to this many ranks the selector prices whole operations with every rank simulated (n
// schedules per candidate, once per distinct call); above it, see priceOperation.
constexpr int kWholeOperationRanks = 16;
// Above it, the whole operation (with the symmetric-block shortcut) while the ranks it simulates
// have at most this many steps in all: at most about a second of simulation per candidate on the
// benchmark machine, once per distinct call (tests/unit/selector_test.cc's 256-rank Clos: 12
// whole operations of every rank, up to 64 MiB, in 1.7 s).
constexpr size_t kWholeOperationSteps = size_t{1} << 21;
// The steps of the schedules a representatives' sender cone takes on (cost_model.h, SenderCone):
// building those schedules is what it costs, about 1 us a step for the pipelined hierarchy. At
// 3,072 ranks on the seed's Clos (bench/selector_scale.sh) half the whole operation's budget
// keeps each candidate's representatives within 0.75 s, where the whole budget took 1.3 s
// for the same choices.
constexpr size_t kConeSteps = kWholeOperationSteps / 2;
// Prices this close are a tie (selector.h's rule). Where shaped links are priced in a steady
// stream of calls, several schedules reach the slowest link's rate alike; the one-shot schedules
// then queue their burst at that link, which the model does not price: on the emulated cluster
// at 256 KiB, rhd 6.3-6.9 ms, hier 3.7-4.5 ms, hierpipe 3.35 ms, all priced 3.29 ms
// (bench/results/netcluster_allreduce.md, runs S1-S3).
constexpr double kTiePercent = 1.0;

// The tie preference (step 3 of selector.h's rule), by name: names are unique among one
// collective's algorithms, and a call's candidates are all of its collective.
constexpr std::string_view kTiePreference[] = {
    // Each collective's default first, what selectAlgorithm takes without a topology (direct
    // for the calls it serves, then the ring; chain; pairwise; p2p): the flat schedules, which
    // need no topology to be right, and the order ties went in when the choices in bench/results
    // were measured.
    "direct",
    "ring",
    "chain",
    "pairwise",
    "p2p",
    // The pipelined hierarchical AllReduce before the one-shot schedules, which send a level's
    // share in one burst that queues at the slowest link (above: hierpipe 3.35 ms, hier 3.7-4.5,
    // rhd 6.3-6.9 at one price); hier before rhd for the same measurement.
    "hierpipe",
    "hier",
    "rhd",
    // No tie between these was measured: the order they were registered in.
    "tree",
    "rackring",
    "hierdirect",
    // Compressed AllReduce: each codec's flat scheme before its rack-aware form, as above.
    "c2shot",
    "c2hier",
    "csparse",
    "csparsehier",
};

int collectiveFromName(std::string_view name) {
  static constexpr const char* kNames[] = {"allreduce",     "broadcast", "reduce", "allgather",
                                           "reducescatter", "alltoall",  "gather", "scatter",
                                           "send",          "recv"};
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i)
    if (name.size() == std::strlen(kNames[i]) &&
        strncasecmp(name.data(), kNames[i], name.size()) == 0)
      return i;
  return -2;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(sep, pos);
    if (end == std::string_view::npos) end = s.size();
    std::string_view part = s.substr(pos, end - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) out.push_back(part);
    pos = end + 1;
  }
  return out;
}

}  // namespace

Status AlgoFilter::parse(std::string_view spec, AlgoFilter* out) {
  *out = AlgoFilter{};
  for (std::string_view segment : split(spec, ';')) {
    Rule rule;
    if (size_t colon = segment.find(':'); colon != std::string_view::npos) {
      rule.coll = collectiveFromName(segment.substr(0, colon));
      if (rule.coll < -1)
        return invalidArgument("NCCL_ALGO: unknown collective \"%.*s\"", static_cast<int>(colon),
                               segment.data());
      segment.remove_prefix(colon + 1);
    }
    if (!segment.empty() && segment.front() == '^') {
      rule.exclude = true;
      segment.remove_prefix(1);
    }
    for (std::string_view name : split(segment, ',')) {
      std::string lower(name);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      rule.names.push_back(std::move(lower));
    }
    if (rule.names.empty())
      return invalidArgument("NCCL_ALGO: empty list in \"%.*s\"", static_cast<int>(spec.size()),
                             spec.data());
    out->rules_.push_back(std::move(rule));
  }
  return Status::Ok();
}

bool AlgoFilter::allows(Collective coll, std::string_view algorithm) const {
  const Rule* rule = nullptr;
  for (const Rule& r : rules_) {
    if (r.coll == static_cast<int>(coll))
      rule = &r;  // a collective's own rule wins
    else if (r.coll == -1 && (!rule || rule->coll == -1))
      rule = &r;
  }
  if (!rule) return true;
  bool listed = std::find(rule->names.begin(), rule->names.end(), algorithm) != rule->names.end();
  return rule->exclude ? !listed : listed;
}

namespace {

// Messages that share a representative rank's group ports, step by step, for the per-rank walk
// above kWholeOperationRanks (cost_model.h, Flows). At each level the rank's group is sampled
// (up to kFlowSamples of its other ranks, evenly spread, so the count costs a bounded number of
// schedules): a sampled rank whose schedule has the same steps as the representative's (same
// count, same kinds: the ranks play the same part, as in a ring or halving-doubling) and whose
// step i leaves the group the same way counts as a flow through the group's port at step i, and
// the sample stands for the group. Ranks with other parts (a tree's leaves and inner nodes, a
// hierarchy's leaders) are not counted: their steps do not line up.
//
// Where the sample is the whole group, what its ranks send out of it and receive into it over the
// whole call, lined up or not, bounds the price from below (portBoundUs): the group's port passes
// those bytes at the rate of the link above it, whatever the ranks' order. Without it a double
// binary tree, whose inner nodes and leaves share each NIC, was priced below what its NIC alone
// needs. A sample of a larger group bounds nothing: a rank at the group's edge, where a ring
// enters it, stands for dozens that send nothing out.
class GroupFlows {
 public:
  static constexpr int kFlowSamples = 8;

  template <typename ScheduleOf>
  GroupFlows(const Topology& topo, int rank, size_t typeSize, ScheduleOf&& scheduleOf) {
    const Schedule& mine = scheduleOf(rank);
    const size_t steps = mine.steps.size();
    const int levels = topo.levels();
    counts_.assign(static_cast<size_t>(levels) * 2, std::vector<double>(steps, 1.0));
    hopUs_.assign(steps, 0.0);
    addHops(topo, rank, mine, typeSize);
    double hoppers = 1;  // ranks whose hops hopUs_ sums
    for (int l = 0; l < levels; ++l) {
      const std::vector<int>& groupOf = topo.groupOf[static_cast<size_t>(l)];
      std::vector<int> members;
      for (int q = 0; q < topo.nranks(); ++q)
        if (q != rank && groupOf[static_cast<size_t>(q)] == groupOf[static_cast<size_t>(rank)])
          members.push_back(q);
      double crossing[2] = {0, 0};  // bytes into the group, out of it
      addCrossing(topo, rank, mine, l, typeSize, crossing);
      const size_t samples = std::min<size_t>(members.size(), kFlowSamples);
      const double weight = samples ? double(members.size()) / double(samples) : 0.0;
      const bool whole = samples == members.size();
      for (size_t k = 0; k < samples; ++k) {
        const int q = members[k * members.size() / samples];
        const Schedule& theirs = scheduleOf(q);
        if (whole) addCrossing(topo, q, theirs, l, typeSize, crossing);
        if (theirs.steps.size() != steps) continue;
        bool same = true;
        for (size_t i = 0; i < steps && same; ++i)
          same = theirs.steps[i].kind == mine.steps[i].kind;
        if (!same) continue;
        if (l == 0) {
          addHops(topo, q, theirs, typeSize);
          ++hoppers;
        }
        for (size_t i = 0; i < steps; ++i) {
          const Step& st = theirs.steps[i];
          if (st.peer < 0 || topo.commonLevel(q, st.peer) <= l) continue;
          counts_[static_cast<size_t>(2 * l + (st.kind == StepKind::Send))][i] += weight;
        }
      }
      if (!whole) continue;
      // A shaped link passes its bucket's depth at once.
      const LinkCost& up = topo.link[static_cast<size_t>(l) + 1];
      for (double bytes : crossing)
        boundUs_ = std::max(boundUs_, std::max(0.0, bytes - up.burstBytes) * up.betaUsPerByte);
    }
    for (double& hop : hopUs_) hop /= hoppers;
  }
  static double count(const void* self, size_t step, int level, bool out) {
    const auto* f = static_cast<const GroupFlows*>(self);
    return f->counts_[static_cast<size_t>(2 * level + out)][step];
  }
  // The longest any of the rank's group ports needs for the call's bytes (see above), in us.
  double portBoundUs() const { return boundUs_; }
  // cost_model.h's HopUs: a receive's hop averaged over the rank and the ranks of its host that
  // play its part (their steps line up).
  static double hop(const void* self, size_t step) {
    return static_cast<const GroupFlows*>(self)->hopUs_[step];
  }

 private:
  // Adds the bytes rank q's schedule s sends out of (crossing[1]) and receives into
  // (crossing[0]) its group at `level`.
  static void addCrossing(const Topology& topo, int q, const Schedule& s, int level,
                          size_t typeSize, double crossing[2]) {
    for (const Step& st : s.steps) {
      if (st.peer < 0 || topo.commonLevel(q, st.peer) <= level) continue;
      if (st.kind == StepKind::Send)
        crossing[1] += stepBytes(st, typeSize);
      else if (st.kind == StepKind::Recv || st.kind == StepKind::RecvReduce)
        crossing[0] += stepBytes(st, typeSize);
    }
  }

  // Adds rank q's receives' hops (latency and transfer on their links) to hopUs_.
  void addHops(const Topology& topo, int q, const Schedule& s, size_t typeSize) {
    for (size_t i = 0; i < s.steps.size(); ++i) {
      const Step& st = s.steps[i];
      if (st.peer < 0 || (st.kind != StepKind::Recv && st.kind != StepKind::RecvReduce)) continue;
      const LinkCost& link = topo.link[static_cast<size_t>(topo.commonLevel(q, st.peer))];
      hopUs_[i] += link.alphaUs + stepBytes(st, typeSize) * link.betaUsPerByte;
    }
  }

  std::vector<std::vector<double>> counts_;  // [2 level + out][step]
  std::vector<double> hopUs_;                // per receive step
  double boundUs_ = 0;
};

CollArgs rankView(const CollArgs& args, int r) {
  CollArgs v = args;
  v.rank = r;
  v.inPlace = false;  // ranks decide in-place each for itself: price what they share
  return v;
}

// The whole operation's price (see priceOperation) in *us and *linksUs; false, with nothing
// priced, where the ranks it would simulate (a symmetric block, or all of them) have more than
// kWholeOperationSteps steps in all.
bool priceWhole(const Algorithm& algo, const CollArgs& args, double* us, double* linksUs) {
  const int n = args.nranks;
  if (n <= kWholeOperationRanks) {
    std::vector<Schedule> all;
    all.reserve(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) all.push_back(algo.build(rankView(args, r)));
    *us = estimateMicroseconds(std::span<const Schedule>(all), args.typeSize, *args.topology,
                               needsEveryInput(args.coll), linksUs);
    return true;
  }
  OperationOptions options;
  options.signaturesOnDataEdges = needsEveryInput(args.coll);
  options.symmetry = true;
  // As braid-sim does: hier's and rhd's blocks differ in what their steps wait for, and at
  // 16,384 ranks on the seed's Clos only such a block of 512 ranks fits the budget (every rank
  // simulated does not); the block prices hier within 2% of every rank (operation_sim_test).
  options.approximateSymmetry = true;
  options.maxSteps = kWholeOperationSteps;
  options.buildAhead = true;  // the source builds from `algo` and `args` alone
  OperationReport report;
  simulateOperation(
      n,
      [&](int r, Schedule& storage) -> const Schedule& {
        storage = algo.build(rankView(args, r));
        return storage;
      },
      args.typeSize, *args.topology, options, &report);
  if (report.overBudget) return false;
  *us = report.us;
  *linksUs = report.linksUs;
  return true;
}

}  // namespace

// Every rank prices the same thing, so every rank picks the same algorithm: the whole operation
// (all ranks' schedules run together, links and uplinks shared) where that is affordable, else
// the slowest of a few representative ranks on their own. Up to kWholeOperationRanks every rank
// is simulated; above, the whole operation runs with the symmetric-block shortcut
// (OperationOptions::symmetry) while the ranks it simulates have at most kWholeOperationSteps
// steps in all, which bounds the work where no block is found.
double priceOperation(const Algorithm& algo, const CollArgs& args, double* linksUs) {
  double us = 0, links = 0;
  if (!priceWhole(algo, args, &us, &links)) us = priceRepresentatives(algo, args, &links);
  if (linksUs) *linksUs = links;
  return us;
}

// Each representative alone, its messages priced with the ports they share: the flows that other
// ranks of its groups send out of (or into) the same group at the same step, counted on a sample
// of those ranks (GroupFlows). Its receives wait for their senders: placed by the mirror rule
// (cost_model.cc), else evaluated in one sender cone that the representatives share, within
// kConeSteps.
double priceRepresentatives(const Algorithm& algo, const CollArgs& args, double* linksUs) {
  const int n = args.nranks;
  const Topology& topo = *args.topology;
  std::map<int, Schedule> built;
  auto scheduleOf = [&](int r) -> const Schedule& {
    auto it = built.find(r);
    if (it == built.end()) it = built.emplace(r, algo.build(rankView(args, r))).first;
    return it->second;
  };
  SenderCone cone(
      topo, args.typeSize,
      [](const void* context, int r) -> const Schedule& {
        return (*static_cast<const decltype(scheduleOf)*>(context))(r);
      },
      &scheduleOf, kConeSteps);
  double worst = 0.0;
  for (int r : {0, n / 2, n - 1, args.root}) {
    if (r < 0 || r >= n) continue;
    const GroupFlows flows(topo, r, args.typeSize, scheduleOf);
    const double walked =
        estimateMicroseconds(scheduleOf(r), args.typeSize, topo, r,
                             Flows{&GroupFlows::count, &flows, &GroupFlows::hop, &cone});
    worst = std::max({worst, walked, flows.portBoundUs()});
  }
  if (linksUs) *linksUs = worst;
  return worst;
}

int tiePreference(std::string_view name) {
  const auto* it = std::find(std::begin(kTiePreference), std::end(kTiePreference), name);
  return static_cast<int>(it - std::begin(kTiePreference));
}

bool preferred(const Algorithm& a, const Algorithm& b) {
  const int pa = tiePreference(a.name()), pb = tiePreference(b.name());
  return pa != pb ? pa < pb : a.name() < b.name();
}

size_t pickCheapest(std::span<const Priced> priced) {
  const double band = 1 + kTiePercent / 100;
  double best = std::numeric_limits<double>::infinity();
  for (const Priced& p : priced) best = std::min(best, p.us);
  double bestLinks = std::numeric_limits<double>::infinity();
  for (const Priced& p : priced)
    if (p.us <= best * band) bestLinks = std::min(bestLinks, p.linksUs);
  size_t winner = 0;
  bool found = false;
  for (size_t i = 0; i < priced.size(); ++i) {
    const Priced& p = priced[i];
    if (p.us > best * band || p.linksUs > bestLinks * band) continue;
    if (!found || preferred(*p.algorithm, *priced[winner].algorithm)) winner = i;
    found = true;
  }
  return winner;
}

Status chooseAlgorithm(const CollArgs& args, const AlgoFilter& filter, std::string_view forced,
                       Choice* out) {
  return chooseAlgorithm(args, filter, forced, algorithms(), out);
}

Status chooseAlgorithm(const CollArgs& args, const AlgoFilter& filter, std::string_view forced,
                       std::span<const Algorithm* const> registry, Choice* out) {
  *out = Choice{};
  std::vector<const Algorithm*> candidates;
  for (const Algorithm* algo : registry) {
    if (algo->compressed() != (args.codec != nullptr) || !algo->supports(args)) continue;
    if (!forced.empty() && algo->name() == forced) {  // names are unique per collective
      out->algorithm = algo;
      out->reason = "forced by BRAID_ALGO";
      if (args.topology) out->estimateUs = priceOperation(*algo, args);
      return Status::Ok();
    }
    candidates.push_back(algo);
  }
  if (candidates.empty())
    return internalError("no algorithm implements %s", collectiveName(args.coll));
  std::vector<const Algorithm*> allowed;
  for (const Algorithm* algo : candidates)
    if (filter.allows(args.coll, algo->name())) allowed.push_back(algo);
  if (allowed.empty()) {
    out->reason = "NCCL_ALGO allows none of them; ";
    allowed = candidates;
  }
  if (!args.topology) {
    out->algorithm =
        *std::min_element(allowed.begin(), allowed.end(),
                          [](const Algorithm* a, const Algorithm* b) { return preferred(*a, *b); });
    out->reason += "no topology to price with";
    return Status::Ok();
  }
  // Each candidate is priced as priceOperation does: its whole operation where that fits the
  // budget, else its representatives, whatever the other candidates' simulations cost. The
  // representatives err both ways (bench/results/selector_scale.md, 3,072 ranks: a ring's price
  // 1.17-1.24 times its whole operation, a tree's 0.39-0.73), so no candidate gains by being
  // priced as the others are: each is priced by its whole operation wherever that is affordable.
  std::vector<Priced> priced;
  for (const Algorithm* algo : allowed) {
    Priced& p = priced.emplace_back(Priced{algo});
    const bool whole = priceWhole(*algo, args, &p.us, &p.linksUs);
    if (!whole) p.us = priceRepresentatives(*algo, args, &p.linksUs);
    out->reason +=
        strfmt("%s%.*s %.1f us", out->reason.empty() ? "" : ", ",
               static_cast<int>(p.algorithm->name().size()), p.algorithm->name().data(), p.us);
    if (p.linksUs < p.us) out->reason += strfmt(" (links %.1f)", p.linksUs);
    if (!whole) out->reason += " (representatives)";
  }
  const Priced& winner = priced[pickCheapest(priced)];
  out->algorithm = winner.algorithm;
  out->estimateUs = winner.us;
  return Status::Ok();
}

}  // namespace braid::algos
