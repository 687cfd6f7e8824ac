#include "algos/operation_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

#include "algos/interval_set.h"

namespace braid::algos {

namespace {

// A port's busy intervals. A message takes the earliest gap that fits it from the time it is
// ready, so one that waits for a busy link further on does not hold this one meanwhile (a host
// sends in-rack data while a cross-rack message waits for the uplink). First-come first-served
// ports had priced hierpipe above hier at 64-256 MiB on the emulated cluster, where it measured
// 16-17% faster.
// Where the link is shaped (LinkCost::burstBytes) the port also holds its token bucket: it fills
// at the link's rate while the port idles, up to its depth, and a message spends the credit
// first and keeps the port busy only for the rest. Credit is kept in booking order, which is
// nearly time order (the simulation is event-driven).
class Port {
 public:
  Port(double depthUs, double creditUs)
      : depthUs_(depthUs), creditUs_(std::min(creditUs, depthUs)) {}

  // How long a message that needs `length` of link time at full rate keeps the port busy when
  // it starts at t.
  double busyFor(double t, double length) const { return std::max(0.0, length - creditAt(t)); }

  double depth() const { return depthUs_; }
  double busyUs() const { return busyUs_; }  // all the time booked on it

  // The earliest t' >= t with [t', t' + length) free.
  double earliest(double t, double length) const { return busy_.earliestGap(t, length); }
  // Drops the intervals that end by t: nothing is asked of the port before the event being
  // handled, and a congested port books far ahead, so its past would otherwise grow without end.
  void forget(double t) { busy_.eraseEndingBy(t); }
  // The bucket at t: what it held when last used, plus what it gained since (at one microsecond
  // of link time per microsecond), at most its depth.
  double creditAt(double t) const {
    if (depthUs_ <= 0) return 0;
    return std::min(depthUs_, creditUs_ + std::max(0.0, t - creditAsOf_));
  }

  // Books a message needing `length` at full rate from t: spends credit, then the rest.
  void book(double t, double length) {
    const double credit = creditAt(t);
    creditUs_ = credit - std::min(credit, length);
    creditAsOf_ = std::max(creditAsOf_, t);
    length -= credit - creditUs_;
    if (length <= 0) return;
    busyUs_ += length;
    creditAsOf_ = std::max(creditAsOf_, t + length);
    busy_.insert(t, t + length);
  }

 private:
  IntervalSet busy_;
  double depthUs_;
  double creditUs_;
  double creditAsOf_ = 0;
  double busyUs_ = 0;
};

// One operation's schedules reduced to what the simulation reads, for the ranks it simulates
// (every rank, or one block of them: OperationOptions::symmetry). Steps are numbered across
// those ranks; a message is a pair's: from a simulated rank to any rank, matched in order.
struct Compiled {
  // A step as the simulation reads and updates it, in 32 bytes: at thousands of ranks the event
  // loop visits millions of steps in no useful order, and a step's fields in one cache line cost
  // one miss where an array per field cost one each (launch's loads were its hot spots).
  struct Step {
    // Messages: their bytes. Copies, reductions and codec steps: their duration in
    // microseconds. Receives: the bytes, which a RecvReduce reduces after arrival.
    double value = 0;
    double readyAt = 0;            // simulation: when its last dependency completed
    uint32_t dependentsBegin = 0;  // its dependents: [dependentsBegin, the next step's)
    // Sends: their pair. Receives: their message's slot among the arrival times, or kNoMessage
    // where the pair sends fewer messages than it receives.
    uint32_t link = 0;
    uint32_t unmet = 0;            // simulation: dependencies not met, kReady once it ran
    uint32_t depCountAndKind = 0;  // dependencies in the low 24 bits, the StepKind in the top 8

    uint32_t depCount() const { return depCountAndKind & kMaxDeps; }
    StepKind kind() const { return static_cast<StepKind>(depCountAndKind >> 24); }
    bool ready() const { return unmet == kReady; }
  };
  static constexpr uint32_t kMaxDeps = (1u << 24) - 1;
  static constexpr uint32_t kNoMessage = UINT32_MAX;
  static constexpr uint32_t kReady = UINT32_MAX;

  int n = 0;                     // ranks in the operation
  int period = 0;                // ranks simulated: 0 .. period - 1 (n: all)
  bool xorBlocks = false;        // blocks are related by XOR, not by a shift (BlockMap)
  bool approximate = false;      // the blocks' dependencies differ (approximateSymmetry)
  std::vector<size_t> rankBase;  // rank r's steps are [rankBase[r], rankBase[r + 1])
  // Every simulated step, and one more whose dependentsBegin ends the last step's dependents.
  std::vector<Step> steps;
  std::vector<uint32_t> dependents;
  std::vector<uint32_t> roots;  // steps that wait for nothing
  struct Pair {
    int from, to, receiver;  // receiver: the simulated rank that stands for `to`
    int level;               // Topology::commonLevel(from, to)
    std::vector<uint32_t> sends, recvs;
    size_t arrivalBase = 0;  // its messages' slots in OperationSim's arrival times
  };
  std::vector<Pair> pairs;
  size_t messages = 0;
  // Ports: per level, per group, the port class it shares a timeline with (itself, or its
  // images under the shift) and how many blocks' messages each booking stands for.
  std::vector<std::vector<int>> portClass, classGroup;
  std::vector<std::vector<double>> classWeight;
  std::vector<double> hostTraffic, hostFootprint;  // the memory bound's inputs, per host
  double loneSignatureUs = 0;                      // CPU work of signatures sent alone

  size_t stepCount() const { return steps.size() - 1; }
  int simulated() const { return period; }
  // The simulated rank that stands for `rank`.
  int standIn(int rank) const { return rank % period; }
  // `rank` moved as far as `peer` is from its stand-in, backwards: the message from `peer` to
  // `rank` is the message from peer's stand-in to this rank.
  int backFrom(int rank, int peer) const {
    const int k = peer - peer % period;  // the block map that takes the stand-in to `peer`
    return xorBlocks ? rank ^ k : (rank - k + n) % n;
  }
};

// How the ranks of one block relate to those of another (OperationOptions::symmetry), with
// the block's P ranks: rank r + k P does what rank r does (a shift: rings), or rank r XOR k P
// does (P and the rank count powers of two: recursive halving and doubling, whose partners are
// r XOR 2^i).
struct BlockMap {
  int n, period;
  bool xorBlocks;
  int apply(int rank, int k) const { return xorBlocks ? rank ^ k : (rank + k) % n; }
  // Maps whose powers and compositions give every block's: one shift by P, or XOR by each bit
  // from P's up.
  std::vector<int> generators() const {
    if (!xorBlocks) return {period};
    std::vector<int> out;
    for (int k = period; k < n; k *= 2) out.push_back(k);
    return out;
  }
  // The maps under which the block's schedules are checked: a shift to the next block and to
  // the last; for XOR, each generator and all of them at once (to the last block).
  std::vector<int> checked() const {
    std::vector<int> out = xorBlocks ? generators() : std::vector<int>{period};
    if (n - period != out.back()) out.push_back(n - period);
    return out;
  }
};

using GroupPerms = std::vector<std::vector<std::vector<int>>>;  // [generator][level][group]

// The orbits of level l's groups under the permutations (none: every group its own); *cls:
// each group's orbit, numbered in order of their first group.
std::vector<std::vector<size_t>> orbits(const GroupPerms& perms, int l, size_t groups,
                                        std::vector<int>* cls) {
  std::vector<std::vector<size_t>> out;
  cls->assign(groups, -1);
  for (size_t g = 0; g < groups; ++g) {
    if ((*cls)[g] >= 0) continue;
    const int id = static_cast<int>(out.size());
    std::vector<size_t>& orbit = out.emplace_back(1, g);
    (*cls)[g] = id;
    for (size_t i = 0; i < orbit.size(); ++i)
      for (const auto& perm : perms) {
        const size_t h = static_cast<size_t>(perm[static_cast<size_t>(l)][orbit[i]]);
        if ((*cls)[h] < 0) (*cls)[h] = id, orbit.push_back(h);
      }
  }
  return out;
}

// Whether every generator of `map` takes each level's groups onto groups of that level;
// `perms[i][l][g]`: the group that generator i takes level l's group g to. For XOR, also
// whether no block map but the identity keeps a group where it is: XOR by less than a group's
// ranks does, and then one simulated message would stand for several on that group's port at
// once, a fluid share of it that priced rhd up to 20% off the whole simulation where a rack's
// hosts share its uplink (32 ranks, 2 racks, 1 MiB).
bool groupMaps(const Topology& t, const BlockMap& map, GroupPerms* perms) {
  const int n = t.nranks();
  perms->clear();
  for (int k : map.generators()) {
    std::vector<std::vector<int>>& perm = perms->emplace_back(static_cast<size_t>(t.levels()));
    for (int l = 0; l < t.levels(); ++l) {
      const auto& of = t.groupOf[static_cast<size_t>(l)];
      std::vector<int>& p = perm[static_cast<size_t>(l)];
      p.assign(static_cast<size_t>(t.groups(l)), -1);
      std::vector<char> taken(p.size(), 0);
      for (int r = 0; r < n; ++r) {
        int& image = p[static_cast<size_t>(of[static_cast<size_t>(r)])];
        const int to = of[static_cast<size_t>(map.apply(r, k))];
        if (image < 0) {
          if (taken[static_cast<size_t>(to)]) return false;
          taken[static_cast<size_t>(to)] = 1;
          image = to;
        } else if (image != to) {
          return false;
        }
      }
    }
  }
  if (map.xorBlocks) {
    std::vector<int> cls;
    for (int l = 0; l < t.levels(); ++l)
      for (const auto& orbit : orbits(*perms, l, static_cast<size_t>(t.groups(l)), &cls))
        if (static_cast<int>(orbit.size()) != n / map.period) return false;
  }
  return true;
}

// Whether `b` is `a` with every peer moved by block map `k` (the symmetry check); with
// `sameDeps` off, whatever steps each waits for.
bool isMoved(const Schedule& a, const Schedule& b, const BlockMap& map, int k, size_t typeSize,
             bool sameDeps) {
  if (a.steps.size() != b.steps.size() || (sameDeps && a.deps != b.deps)) return false;
  auto near = [](double x, double y) { return std::abs(x - y) <= 8 + 1e-3 * std::max(x, y); };
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const Step &x = a.steps[i], &y = b.steps[i];
    if (x.kind != y.kind || (sameDeps && (x.depBegin != y.depBegin || x.depCount != y.depCount)))
      return false;
    if ((x.peer < 0) != (y.peer < 0) || (x.peer >= 0 && map.apply(x.peer, k) != y.peer))
      return false;
    if (!near(stepBytes(x, typeSize), stepBytes(y, typeSize)) ||
        !near(static_cast<double>(x.elements), static_cast<double>(y.elements)))
      return false;
  }
  return true;
}

class Compiler {
 public:
  Compiler(const BlockMap& map, size_t typeSize, const Topology& topo, bool signaturesOnDataEdges,
           size_t maxSteps)
      : typeSize_(typeSize),
        topo_(topo),
        signaturesOnDataEdges_(signaturesOnDataEdges),
        maxSteps_(maxSteps) {
    c_.n = map.n;
    c_.period = map.period;
    c_.xorBlocks = map.xorBlocks;
    c_.rankBase.push_back(0);
    c_.hostTraffic.assign(static_cast<size_t>(topo.groups(0)), 0.0);
    c_.hostFootprint = c_.hostTraffic;
  }

  // Adds the next simulated rank's schedule.
  void add(const Schedule& s) {
    const int r = static_cast<int>(c_.rankBase.size()) - 1;
    const size_t base = c_.steps.size();
    for (size_t i = 0; i < s.steps.size(); ++i) {
      const Step& st = s.steps[i];
      const size_t g = base + i;
      tooManyDeps_ = tooManyDeps_ || st.depCount > Compiled::kMaxDeps;
      Compiled::Step& out = c_.steps.emplace_back();
      out.depCountAndKind =
          std::min(st.depCount, Compiled::kMaxDeps) | static_cast<uint32_t>(st.kind) << 24;
      out.dependentsBegin = static_cast<uint32_t>(c_.dependents.size());
      if (st.depCount == 0) c_.roots.push_back(static_cast<uint32_t>(g));
      for (uint32_t k = s.dependentsBegin[i]; k < s.dependentsBegin[i + 1]; ++k)
        c_.dependents.push_back(static_cast<uint32_t>(base + s.dependents[k]));
      double value = stepBytes(st, typeSize_);
      switch (st.kind) {
        case StepKind::Send: {
          pairFor(r, st.peer).sends.push_back(static_cast<uint32_t>(g));
          out.link = index_;
          break;
        }
        case StepKind::Recv:
        case StepKind::RecvReduce: {
          // The message from st.peer to r is, a whole number of blocks back, the message from
          // st.peer's stand-in to the rank as far back from r.
          const int from = c_.standIn(st.peer);
          const int to = c_.backFrom(r, st.peer);
          pairFor(from, to).recvs.push_back(static_cast<uint32_t>(g));
          break;  // its link is set once every pair's messages are counted (finish)
        }
        case StepKind::Copy:
        case StepKind::Reduce:
        case StepKind::FinishAvg: value *= topo_.gammaUsPerByte; break;
        case StepKind::Encode:
        case StepKind::DecodeAccumulate:
        case StepKind::Decode: value = codecStepUs(st, topo_.gammaUsPerByte); break;
      }
      out.value = value;
    }
    c_.rankBase.push_back(c_.steps.size());
    if (topo_.memoryUsPerByte > 0) countMemoryTraffic(r, s);
    if (topo_.signatures && topo_.alphaScale > 1.0) addLoneSignatures(r, s);
  }

  // Whether the steps still fit the 32-bit step and dependent numbers, the 24-bit dependency
  // counts, and the budget (OperationOptions::maxSteps).
  bool fits() const {
    return c_.steps.size() < UINT32_MAX && c_.dependents.size() < UINT32_MAX &&
           c_.pairs.size() < UINT32_MAX && !tooManyDeps_ && !overBudget();
  }
  bool overBudget() const { return maxSteps_ > 0 && c_.steps.size() > maxSteps_; }

  Compiled finish(const GroupPerms& perms) && {
    c_.steps.emplace_back().dependentsBegin = static_cast<uint32_t>(c_.dependents.size());
    for (Compiled::Pair& p : c_.pairs) {
      p.arrivalBase = c_.messages;
      for (size_t i = 0; i < p.recvs.size(); ++i)
        c_.steps[p.recvs[i]].link =
            i < p.sends.size() ? static_cast<uint32_t>(p.arrivalBase + i) : Compiled::kNoMessage;
      c_.messages += p.sends.size();
    }
    const int levels = topo_.levels();
    c_.portClass.resize(static_cast<size_t>(levels));
    c_.classGroup.resize(c_.portClass.size());
    c_.classWeight.resize(c_.portClass.size());
    const double blocks = static_cast<double>(c_.n / c_.period);
    for (int l = 0; l < levels; ++l) {
      // The orbits of this level's groups under the block maps' permutations (none: every
      // group its own).
      for (const auto& orbit : orbits(perms, l, static_cast<size_t>(topo_.groups(l)),
                                      &c_.portClass[static_cast<size_t>(l)])) {
        c_.classGroup[static_cast<size_t>(l)].push_back(static_cast<int>(orbit.front()));
        c_.classWeight[static_cast<size_t>(l)].push_back(blocks /
                                                         static_cast<double>(orbit.size()));
      }
    }
    return std::move(c_);
  }

 private:
  Compiled::Pair& pairFor(int from, int to) {
    const uint64_t key =
        static_cast<uint64_t>(from) * static_cast<uint64_t>(c_.n) + static_cast<uint64_t>(to);
    auto [it, fresh] = pairIndex_.try_emplace(key, static_cast<uint32_t>(c_.pairs.size()));
    if (fresh) {
      Compiled::Pair p;
      p.from = from;
      p.to = to;
      p.receiver = c_.standIn(to);
      p.level = topo_.commonLevel(from, to);
      c_.pairs.push_back(std::move(p));
    }
    index_ = it->second;
    return c_.pairs[index_];
  }

  // The memory bound (see operation_cost.h): the bytes rank r's steps read and write in the
  // call's buffers, and the highest unit of each buffer they touch, for its host.
  void countMemoryTraffic(int r, const Schedule& s) {
    const size_t host = static_cast<size_t>(topo_.groupOf[0][static_cast<size_t>(r)]);
    size_t end[3] = {0, 0, 0};  // Send, Recv, Scratch: the highest unit a step touches
    auto touch = [&](const Region& region) {
      const size_t b = static_cast<size_t>(region.buffer);
      if (b < 3) end[b] = std::max(end[b], region.offset + region.count);
      return b < 3 ? static_cast<double>(region.count * typeSize_) : 0.0;
    };
    double& traffic = c_.hostTraffic[host];
    for (const Step& st : s.steps) {
      switch (st.kind) {
        case StepKind::Send: traffic += touch(st.src); break;
        case StepKind::Recv: traffic += touch(st.dst); break;
        case StepKind::RecvReduce:
        case StepKind::Copy: traffic += touch(st.src) + touch(st.dst); break;
        case StepKind::Reduce: traffic += touch(st.src) + 2 * touch(st.dst); break;
        case StepKind::FinishAvg: traffic += 2 * touch(st.dst); break;
        default: break;  // codec steps: their own buffers, priced by the codec's rate
      }
    }
    c_.hostFootprint[host] += static_cast<double>((end[0] + end[1] + end[2]) * typeSize_);
  }

  // The signatures that travel alone: to every peer checked (every rank, or the schedule's
  // peers: see OperationOptions) that the rank sends no data to (the others wait for the
  // first data message and leave with it).
  void addLoneSignatures(int r, const Schedule& s) {
    std::vector<char> data(static_cast<size_t>(c_.n));
    for (const Step& st : s.steps)
      if (st.kind == StepKind::Send) data[static_cast<size_t>(st.peer)] = 1;
    auto lone = [&](int p) {
      const int level = topo_.commonLevel(r, p);
      if (p != r && !data[static_cast<size_t>(p)] && level > 0)
        c_.loneSignatureUs += 2 * topo_.link[static_cast<size_t>(level)].alphaUs;
    };
    if (signaturesOnDataEdges_ && !s.peers.empty()) {
      for (int p : s.peers) lone(p);
    } else {
      for (int p = 0; p < c_.n; ++p) lone(p);
    }
  }

  Compiled c_;
  size_t typeSize_;
  const Topology& topo_;
  bool signaturesOnDataEdges_;
  size_t maxSteps_;
  bool tooManyDeps_ = false;
  std::unordered_map<uint64_t, uint32_t> pairIndex_;
  uint32_t index_ = 0;
};

// The compiled schedules of every rank, or of one block when a period is found and checked
// (OperationOptions::symmetry). Null when a schedule is too large to number, or the simulated
// ranks' steps exceed options.maxSteps (then *overBudget is set).
std::unique_ptr<Compiled> compile(int n, const ScheduleSource& source, size_t typeSize,
                                  const Topology& topo, const OperationOptions& options,
                                  bool* overBudget) {
  Schedule storage, other;
  GroupPerms perms;
  const bool pow2 = (n & (n - 1)) == 0;
  for (bool sameDeps : {true, false}) {
    if (!sameDeps && !options.approximateSymmetry) break;
    for (int period = 1; options.symmetry && period < n; ++period) {
      for (bool xorBlocks : {false, true}) {
        if (xorBlocks && !pow2) continue;
        const BlockMap map{n, period, xorBlocks};
        if (n % period != 0 || (xorBlocks && (period & (period - 1)) != 0) ||
            !groupMaps(topo, map, &perms))
          continue;
        Compiler compiler(map, typeSize, topo, options.signaturesOnDataEdges, options.maxSteps);
        bool same = true;
        for (int r = 0; r < period && same && compiler.fits(); ++r) {
          const Schedule& s = source(r, storage);
          for (int k : map.checked())
            same = same && isMoved(s, source(map.apply(r, k), other), map, k, typeSize, sameDeps);
          if (same) compiler.add(s);
        }
        if (same && compiler.fits()) {
          auto compiled = std::make_unique<Compiled>(std::move(compiler).finish(perms));
          compiled->approximate = !sameDeps;
          return compiled;
        }
        // A block that matched so far is over the budget: a longer period or every rank would
        // be too.
        if (same && compiler.overBudget()) {
          *overBudget = true;
          return nullptr;
        }
      }
    }
  }
  Compiler compiler({n, n, false}, typeSize, topo, options.signaturesOnDataEdges, options.maxSteps);
  for (int r = 0; r < n && compiler.fits(); ++r) compiler.add(source(r, storage));
  *overBudget = compiler.overBudget();
  if (!compiler.fits()) return nullptr;
  return std::make_unique<Compiled>(std::move(compiler).finish({}));
}

class OperationSim {
 public:
  // Token buckets per port: `credits` as a previous run left them (endCredits), or full.
  using Credits = std::vector<std::vector<double>>;
  // Runs on `c`'s steps, which it resets: one simulation at a time per Compiled.
  OperationSim(Compiled& c, const Topology& topo, const Credits* credits) : c_(c), topo_(topo) {
    for (Compiled::Step& st : c.steps) {
      st.readyAt = 0;
      st.unmet = st.depCount();
    }
    codecFree_.assign(static_cast<size_t>(c.simulated()), 0.0);
    arrival_.assign(c.messages, -1.0);
    launched_.assign(c.pairs.size(), 0);
    linkFree_.assign(c.pairs.size(), 0.0);
    resumePending_.assign(c.pairs.size(), 0);
    way_.assign(2 * static_cast<size_t>(topo.levels()), 0);
    levelBytes_.assign(static_cast<size_t>(topo.levels()) + 1, 0.0);
    for (uint32_t g : c.roots) {
      const int r =
          static_cast<int>(std::upper_bound(c.rankBase.begin(), c.rankBase.end(), size_t{g}) -
                           c.rankBase.begin() - 1);
      events_.push({0.0, r, g});
    }
    ports_.resize(static_cast<size_t>(topo.levels()));
    for (int l = 0; l < topo.levels(); ++l) {
      const LinkCost& up =
          topo.link[static_cast<size_t>(l) + 1];  // the link above level l's groups
      const double depthUs = up.burstBytes * up.betaUsPerByte;
      const size_t classes = c.classGroup[static_cast<size_t>(l)].size();
      for (size_t p = 0; p < 2 * classes; ++p)  // [2c]: out, [2c + 1]: in
        ports_[static_cast<size_t>(l)].emplace_back(
            depthUs, credits ? (*credits)[static_cast<size_t>(l)][p] : depthUs);
    }
  }

  double run() {
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      // The next event's step is fetched while this one is handled: at thousands of ranks the
      // steps are far larger than the caches, and each is a miss where it is first read.
      if (!events_.empty()) __builtin_prefetch(&c_.steps[events_.top().step]);
      now_ = e.time;
      if (e.resume) {
        resumePending_[c_.steps[e.step].link] = 0;
        launch(c_.steps[e.step].link);
      } else {
        becomeReady(e.rank, e.step, e.time);
      }
    }
    bool matched = finished_ == c_.stepCount();
    for (const Compiled::Pair& p : c_.pairs) matched = matched && p.sends.size() == p.recvs.size();
    if (!matched) return std::numeric_limits<double>::infinity();
    // Where ranks outnumber cores, the cores' total work bounds the time too: each message
    // between hosts costs its sender and its receiver about a link alpha of CPU in the kernel's
    // network path (shared memory costs a copy, priced by beta), and alphaScale ranks share each
    // core. On the emulated cluster (8 ranks on 2 cores) small AllReduces ranked by messages
    // sent more than by rounds: direct (56 messages, one round) 0.44 ms, tree (28) 0.60, rhd (48)
    // 0.71, ring (112) 0.81 at 1 KiB.
    if (topo_.alphaScale > 1.0)
      end_ = std::max(end_, topo_.alphaScale * (cpuWork_ + c_.loneSignatureUs) / c_.simulated());
    linksUs_ = end_;
    // The memory bound, per host: the share of its traffic its cache cannot hold, at its
    // memory's rate.
    for (size_t h = 0; h < c_.hostTraffic.size(); ++h) {
      const double f = c_.hostFootprint[h];
      const double missed = f / (f + topo_.cacheBytes / 2);
      end_ = std::max(end_, c_.hostTraffic[h] * missed * topo_.memoryUsPerByte);
    }
    return end_;
  }

  // run()'s price without the memory bound.
  double linksUs() const { return linksUs_; }

  // What every port's bucket holds when the operation ends (after run()).
  Credits endCredits() const {
    Credits credits(ports_.size());
    for (size_t l = 0; l < ports_.size(); ++l)
      for (const Port& p : ports_[l]) credits[l].push_back(p.creditAt(end_));
    return credits;
  }
  double deepestBucket() const {
    double d = 0;
    for (const auto& level : ports_)
      for (const Port& p : level) d = std::max(d, p.depth());
    return d;
  }

  void report(OperationReport* out) const {
    out->levelBytes = levelBytes_;
    for (size_t l = 0; l < ports_.size(); ++l) {
      for (size_t p = 0; p < ports_[l].size(); ++p) {
        if (ports_[l][p].busyUs() <= out->busiestUs) continue;
        out->busiestUs = ports_[l][p].busyUs();
        out->busiestLevel = static_cast<int>(l);
        out->busiestGroup = c_.classGroup[l][p / 2];
        out->busiestIn = p % 2 == 1;
      }
    }
  }

 private:
  struct Event {
    double time;
    int rank;
    uint32_t step;
    // Not a step becoming ready: `step`'s connection has sent its last message and may start
    // the next (launch).
    bool resume = false;
    // Ties go by rank, then step: the order does not depend on the heap's, and a rank's image
    // a block away meets its ties as the rank does (OperationOptions::symmetry).
    bool operator>(const Event& o) const {
      if (time != o.time) return time > o.time;
      if (rank != o.rank) return rank > o.rank;
      return step != o.step ? step > o.step : resume > o.resume;
    }
  };

  void becomeReady(int r, uint32_t g, double t) {
    Compiled::Step& st = c_.steps[g];
    st.unmet = Compiled::kReady;
    st.readyAt = t;
    switch (st.kind()) {
      case StepKind::Send: launch(st.link); break;
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        // A receive without its send never completes.
        if (st.link != Compiled::kNoMessage) {
          const double arrival = arrival_[st.link];
          if (arrival >= 0) completeRecv(r, g, arrival);
        }
        break;
      }
      case StepKind::Copy:
      case StepKind::Reduce:
      case StepKind::FinishAvg: finish(r, g, t + st.value); break;
      case StepKind::Encode:
      case StepKind::DecodeAccumulate:
      case StepKind::Decode: {
        // Codec steps share the rank's core: they queue behind each other.
        double& free = codecFree_[static_cast<size_t>(r)];
        free = std::max(t, free) + st.value;
        finish(r, g, free);
        break;
      }
    }
  }

  // Starts the pair's next message if its send is ready and the connection is idle. A
  // connection sends one message at a time, as a socket or a queue pair does: the next is
  // booked on the ports when the last has left (a resume event), not as soon as it is ready, so
  // connections that share a port interleave their messages there as a NIC interleaves
  // connections, instead of the first to be ready booking its whole backlog ahead of the rest
  // (a double binary tree's leaf sends, all ready at the start, held its NIC for the whole up
  // phase while the other tree's pipeline waited behind them).
  void launch(uint32_t pairIndex) {
    const Compiled::Pair& p = c_.pairs[pairIndex];
    size_t& launched = launched_[pairIndex];
    while (launched < p.sends.size() && c_.steps[p.sends[launched]].ready()) {
      const uint32_t g = p.sends[launched];
      // Read at the end of this message (its receive) and at the start of the next (its send).
      if (launched < p.recvs.size()) __builtin_prefetch(&c_.steps[p.recvs[launched]]);
      if (launched + 1 < p.sends.size()) __builtin_prefetch(&c_.steps[p.sends[launched + 1]]);
      if (linkFree_[pairIndex] > now_) {
        if (!resumePending_[pairIndex]) {
          resumePending_[pairIndex] = 1;
          events_.push({linkFree_[pairIndex], p.from, g, true});
        }
        return;
      }
      const double b = c_.steps[g].value;
      const int level = p.level;
      const LinkCost& link = topo_.link[static_cast<size_t>(level)];
      // Every port on the way must be free at once, each for its own level's beta (times the
      // blocks whose messages it carries, where a shift maps it onto itself).
      // A shaped port passes what its bucket holds at once, so how long each port is busy
      // depends on when the message starts.
      auto length = [&](int l, int port) {
        return b * topo_.link[static_cast<size_t>(l) + 1].betaUsPerByte *
               c_.classWeight[static_cast<size_t>(l)][static_cast<size_t>(port / 2)];
      };
      // way[2 l]: the port out of the sender's group at level l, way[2 l + 1]: into the
      // receiver's.
      int* way = way_.data();
      for (int l = 0; l < level; ++l) {
        way[2 * l] = portOf(l, p.from, 0);
        way[2 * l + 1] = portOf(l, p.to, 1);
        port(l, way[2 * l]).forget(now_);
        port(l, way[2 * l + 1]).forget(now_);
      }
      auto busyFor = [&](int l, double t) {
        return std::max(port(l, way[2 * l]).busyFor(t, length(l, way[2 * l])),
                        port(l, way[2 * l + 1]).busyFor(t, length(l, way[2 * l + 1])));
      };
      // The earliest start from which every port is free: each port in turn moves the start to
      // its earliest gap, until all of them in a row accept it.
      double start = std::max(c_.steps[g].readyAt, linkFree_[pairIndex]);
      for (int k = 0, accepted = 0; accepted < 2 * level; k = k + 1 == 2 * level ? 0 : k + 1) {
        const double t = port(k / 2, way[k]).earliest(start, busyFor(k / 2, start));
        if (t > start)
          start = t, accepted = 1;
        else
          ++accepted;
      }
      // The message takes as long as its slowest port (without shaping: the level's beta).
      double transfer = level == 0 ? b * link.betaUsPerByte : 0.0;
      for (int l = 0; l < level; ++l) transfer = std::max(transfer, busyFor(l, start));
      linkFree_[pairIndex] = start + transfer;
      for (int k = 0; k < 2 * level; ++k) port(k / 2, way[k]).book(start, length(k / 2, way[k]));
      const double arrival = start + link.alphaUs * topo_.alphaScale + transfer;
      if (level > 0) cpuWork_ += 2 * link.alphaUs + b * link.cpuUsPerByte;  // the kernel's work
      levelBytes_[static_cast<size_t>(level)] += b * (c_.n / c_.period);
      arrival_[p.arrivalBase + launched] = arrival;
      finish(p.from, g, arrival);
      const uint32_t recv = launched < p.recvs.size() ? p.recvs[launched] : UINT32_MAX;
      ++launched;
      if (recv != UINT32_MAX && c_.steps[recv].ready()) completeRecv(p.receiver, recv, arrival);
    }
  }

  // The port of `rank`'s group at `level`: [2 class] out of it, [2 class + 1] into it.
  int portOf(int level, int rank, int in) const {
    const size_t l = static_cast<size_t>(level);
    return 2 * c_.portClass[l][static_cast<size_t>(topo_.groupOf[l][static_cast<size_t>(rank)])] +
           in;
  }
  Port& port(int level, int index) {
    return ports_[static_cast<size_t>(level)][static_cast<size_t>(index)];
  }

  void completeRecv(int r, uint32_t g, double arrival) {
    const Compiled::Step& st = c_.steps[g];
    const double reduce = st.kind() == StepKind::RecvReduce ? st.value * topo_.gammaUsPerByte : 0.0;
    finish(r, g, std::max(st.readyAt, arrival) + reduce);
  }

  void finish(int r, uint32_t g, double t) {
    ++finished_;
    end_ = std::max(end_, t);
    const uint32_t end = c_.steps[g + 1].dependentsBegin;
    for (uint32_t k = c_.steps[g].dependentsBegin; k < end; ++k) {
      Compiled::Step& d = c_.steps[c_.dependents[k]];
      d.readyAt = std::max(d.readyAt, t);
      if (--d.unmet == 0) events_.push({d.readyAt, r, c_.dependents[k]});
    }
  }

  Compiled& c_;
  const Topology& topo_;
  std::vector<double> codecFree_;    // per simulated rank
  std::vector<double> arrival_;      // per message, -1 until sent
  std::vector<size_t> launched_;     // per pair
  std::vector<double> linkFree_;     // per pair: when its last message has left
  std::vector<char> resumePending_;  // per pair: a resume event is queued
  std::vector<int> way_;             // launch's ports of the message it places
  std::vector<double> levelBytes_;
  std::vector<std::vector<Port>> ports_;  // [level][port class, out and in]
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  size_t finished_ = 0;
  double now_ = 0.0;  // the time of the event being handled: no message starts before it
  double end_ = 0.0;
  double cpuWork_ = 0.0;  // microseconds of CPU all messages cost their two ends
  double linksUs_ = 0.0;
};

constexpr int kSteadyRounds = 16;

}  // namespace

double simulateOperation(int nranks, const ScheduleSource& source, size_t typeSize,
                         const Topology& topo, const OperationOptions& options,
                         OperationReport* report) {
  *report = OperationReport{};
  report->us = report->linksUs = std::numeric_limits<double>::infinity();
  if (nranks != topo.nranks() || nranks <= 0) return report->us;
  const std::unique_ptr<Compiled> compiled =
      compile(nranks, source, typeSize, topo, options, &report->overBudget);
  if (!compiled) return report->us;
  report->period = compiled->period;
  report->approximatePeriod = compiled->approximate;
  report->xorBlocks = compiled->xorBlocks;
  report->steps = compiled->stepCount();
  auto sim = std::make_unique<OperationSim>(*compiled, topo, nullptr);
  double us = sim->run();
  const double depth = sim->deepestBucket();
  // Shaped links: price a call in a steady stream of calls, as training issues them and the
  // benchmarks time them. A bucket starts each call with what the previous call left in it, so
  // the operation is run again from the buckets the last run left until they settle.
  if (depth > 0 && std::isfinite(us)) {
    OperationSim::Credits credits = sim->endCredits();
    for (int round = 0; round < kSteadyRounds; ++round) {
      auto next = std::make_unique<OperationSim>(*compiled, topo, &credits);
      us = next->run();
      OperationSim::Credits after = next->endCredits();
      double moved = 0;
      for (size_t l = 0; l < after.size(); ++l)
        for (size_t p = 0; p < after[l].size(); ++p)
          moved = std::max(moved, std::abs(after[l][p] - credits[l][p]));
      credits = std::move(after);
      sim = std::move(next);
      if (moved <= 0.01 * depth) break;
    }
  }
  report->us = us;
  report->linksUs = sim->linksUs();
  sim->report(report);
  return us;
}

double estimateMicroseconds(std::span<const Schedule> schedules, size_t typeSize,
                            const Topology& topo, bool signaturesOnDataEdges, double* linksUs) {
  OperationOptions options;
  options.signaturesOnDataEdges = signaturesOnDataEdges;
  OperationReport report;
  const double us = simulateOperation(
      static_cast<int>(schedules.size()),
      [&](int r, Schedule&) -> const Schedule& { return schedules[static_cast<size_t>(r)]; },
      typeSize, topo, options, &report);
  if (linksUs) *linksUs = report.linksUs;
  return us;
}

}  // namespace braid::algos
