#include "algos/operation_compile.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>

namespace braid::algos {

namespace {

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
          sends_[pairFor(r, st.peer)].push_back(static_cast<uint32_t>(g));
          out.link = index_;
          break;
        }
        case StepKind::Recv:
        case StepKind::RecvReduce: {
          // The message from st.peer to r is, a whole number of blocks back, the message from
          // st.peer's stand-in to the rank as far back from r.
          const int from = c_.standIn(st.peer);
          const int to = c_.backFrom(r, st.peer);
          recvs_[pairFor(from, to)].push_back(static_cast<uint32_t>(g));
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
    shortest_ = std::min(shortest_, s.steps.size());
    if (topo_.memoryUsPerByte > 0) countMemoryTraffic(r, s);
    if (topo_.signatures && topo_.alphaScale > 1.0) addLoneSignatures(r, s);
  }

  // Whether the steps still fit the 32-bit step and dependent numbers, the 24-bit dependency
  // counts, and the budget (OperationOptions::maxSteps).
  bool fits() const {
    return c_.steps.size() < UINT32_MAX && c_.dependents.size() < UINT32_MAX &&
           c_.pairs.size() < UINT32_MAX && !tooManyDeps_ && !overBudget();
  }
  // Over the budget once the steps compiled pass it, or once they would with each of the
  // block's ranks still to come as long as the shortest schedule compiled so far (taken after at
  // least kProjectAfter ranks, and an eighth of the block): a block that will not fit is given
  // up after a part of its schedules is built, which is what compiling costs (a ring at 3,072
  // ranks: 64 of a 512-rank block's schedules, not the 333 that reach the budget), while a block
  // whose first ranks are its longest (a root, a host's leader) is not. At the block's last rank
  // the two agree.
  bool overBudget() const {
    if (maxSteps_ == 0) return false;
    const size_t ranks = c_.rankBase.size() - 1, block = static_cast<size_t>(c_.period);
    if (ranks >= kProjectAfter && ranks * 8 >= block && ranks < block)
      return c_.steps.size() + (block - ranks) * shortest_ > maxSteps_;
    return c_.steps.size() > maxSteps_;
  }

  Compiled finish(const GroupPerms& perms) && {
    c_.steps.emplace_back().dependentsBegin = static_cast<uint32_t>(c_.dependents.size());
    for (size_t k = 0; k < c_.pairs.size(); ++k) {
      Compiled::Pair& p = c_.pairs[k];
      const std::vector<uint32_t>& sends = sends_[k];
      const std::vector<uint32_t>& recvs = recvs_[k];
      p.firstMessage = c_.messages.size();
      p.sends = static_cast<uint32_t>(sends.size());
      p.recvs = static_cast<uint32_t>(recvs.size());
      for (size_t i = 0; i < recvs.size(); ++i)
        c_.steps[recvs[i]].link =
            i < sends.size() ? static_cast<uint32_t>(p.firstMessage + i) : Compiled::kNoMessage;
      for (size_t i = 0; i < sends.size(); ++i)
        c_.messages.push_back({sends[i], i < recvs.size() ? recvs[i] : Compiled::kNoMessage, -1});
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
  // The index of the pair from `from` to `to`, made if new.
  uint32_t pairFor(int from, int to) {
    const uint64_t key =
        static_cast<uint64_t>(from) * static_cast<uint64_t>(c_.n) + static_cast<uint64_t>(to);
    auto [it, fresh] = pairIndex_.try_emplace(key, static_cast<uint32_t>(c_.pairs.size()));
    if (fresh) {
      Compiled::Pair p;
      p.from = from;
      p.to = to;
      p.receiver = c_.standIn(to);
      p.level = topo_.commonLevel(from, to);
      c_.pairs.push_back(p);
      sends_.emplace_back();
      recvs_.emplace_back();
    }
    index_ = it->second;
    return index_;
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

  // Fewer ranks than this are too few to stand for the rest of a block.
  static constexpr size_t kProjectAfter = 64;

  Compiled c_;
  size_t typeSize_;
  const Topology& topo_;
  bool signaturesOnDataEdges_;
  size_t maxSteps_;
  bool tooManyDeps_ = false;
  size_t shortest_ = SIZE_MAX;  // the fewest steps of a rank compiled so far
  std::unordered_map<uint64_t, uint32_t> pairIndex_;
  uint32_t index_ = 0;
  std::vector<std::vector<uint32_t>> sends_, recvs_;  // per pair, in order, until finish
};

// Rank schedules asked for in groups in a known order (compile's: every rank alone, or each of
// a block's ranks with its images), every other group built on a second thread while the caller
// builds and compiles the rest (OperationOptions::buildAhead): building and compiling them took
// a fifth of braid-sim's time (rhd AllReduce, 1,536 ranks).
class BuiltAhead {
 public:
  // Group g is the schedules of ranks rankAt(g, 0 .. size - 1), for g < groups.
  BuiltAhead(const ScheduleSource& source, size_t groups, size_t size,
             std::function<int(size_t, size_t)> rankAt)
      : source_(source), groups_(groups), size_(size), rankAt_(std::move(rankAt)) {
    own_.storage.resize(size);
    for (Group& g : slots_) g.storage.resize(size);
    helper_ = std::thread([this] { buildOdd(); });
  }
  ~BuiltAhead() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    helper_.join();
  }

  // The next group's schedules, read until the next call.
  const std::vector<const Schedule*>& next() {
    const size_t g = asked_++;
    if (g % 2 == 0) {
      if (g > 0) release(g - 1);
      build(g, &own_);
      return own_.result;
    }
    std::unique_lock<std::mutex> lock(mu_);
    Group& slot = slots_[(g / 2) % kSlots];
    cv_.wait(lock, [&] { return slot.built == g + 1 || failed_; });
    // What building threw there (out of memory, say) is thrown here, on the caller's thread.
    if (failed_) std::rethrow_exception(failed_);
    return slot.result;
  }

 private:
  static constexpr size_t kSlots = 4;  // odd groups built ahead of their turn, at most
  struct Group {
    std::vector<Schedule> storage;
    std::vector<const Schedule*> result;
    size_t built = 0;  // 1 + the group it holds, 0 while free (the helper's slots)
  };

  void build(size_t g, Group* into) {
    into->result.clear();
    for (size_t j = 0; j < size_; ++j)
      into->result.push_back(&source_(rankAt_(g, j), into->storage[j]));
  }
  // The helper: groups 1, 3, 5, ... into the slots, each once the caller has let it go.
  void buildOdd() {
    for (size_t g = 1; g < groups_; g += 2) {
      Group& slot = slots_[(g / 2) % kSlots];
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || slot.built == 0; });
        if (stop_) return;
      }
      std::exception_ptr failed;
      try {
        build(g, &slot);
      } catch (...) {
        failed = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        slot.built = g + 1;
        failed_ = failed;
      }
      cv_.notify_all();
      if (failed) return;
    }
  }
  void release(size_t g) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots_[(g / 2) % kSlots].built = 0;
    }
    cv_.notify_all();
  }

  const ScheduleSource& source_;
  const size_t groups_, size_;
  const std::function<int(size_t, size_t)> rankAt_;
  Group own_;
  std::array<Group, kSlots> slots_;
  size_t asked_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::exception_ptr failed_;  // what the helper's building threw
  std::thread helper_;
};

// Calls visit(group) with the schedules of ranks rankAt(g, 0 .. size - 1) for g = 0, 1, ...
// while it returns true, up to `groups`. The first group is built here: where it is the only
// one visited (a block that fails at its first rank), a second thread would build in vain.
template <typename RankAt, typename Visit>
void forEachGroup(const ScheduleSource& source, bool buildAhead, size_t groups, size_t size,
                  RankAt rankAt, Visit visit) {
  std::vector<Schedule> storage(size);
  std::vector<const Schedule*> group;
  for (size_t g = 0; g < groups; ++g) {
    if (g == 1 && buildAhead && std::thread::hardware_concurrency() > 1) {
      std::optional<BuiltAhead> ahead;
      try {
        ahead.emplace(source, groups - 1, size,
                      [&](size_t h, size_t j) { return rankAt(h + 1, j); });
      } catch (const std::system_error&) {
        // No second thread to be had: every group is built here.
      }
      if (ahead) {
        for (size_t h = 1; h < groups; ++h)
          if (!visit(ahead->next())) return;
        return;
      }
    }
    group.clear();
    for (size_t j = 0; j < size; ++j) group.push_back(&source(rankAt(g, j), storage[j]));
    if (!visit(group)) return;
  }
}

}  // namespace

std::unique_ptr<Compiled> compileOperation(int n, const ScheduleSource& source, size_t typeSize,
                                           const Topology& topo, const OperationOptions& options,
                                           bool* overBudget) {
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
        // Each of the block's ranks, then its images under the checked maps.
        const std::vector<int> checked = map.checked();
        forEachGroup(
            source, options.buildAhead, static_cast<size_t>(period), 1 + checked.size(),
            [&](size_t r, size_t j) {
              return j == 0 ? static_cast<int>(r) : map.apply(static_cast<int>(r), checked[j - 1]);
            },
            [&](const std::vector<const Schedule*>& group) {
              for (size_t j = 1; j < group.size() && same; ++j)
                same = isMoved(*group[0], *group[j], map, checked[j - 1], typeSize, sameDeps);
              if (same) compiler.add(*group[0]);
              return same && compiler.fits();
            });
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
  forEachGroup(
      source, options.buildAhead, static_cast<size_t>(n), 1,
      [](size_t r, size_t) { return static_cast<int>(r); },
      [&](const std::vector<const Schedule*>& group) {
        compiler.add(*group[0]);
        return compiler.fits();
      });
  *overBudget = compiler.overBudget();
  if (!compiler.fits()) return nullptr;
  return std::make_unique<Compiled>(std::move(compiler).finish({}));
}

}  // namespace braid::algos
