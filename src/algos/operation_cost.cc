#include "algos/operation_cost.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <queue>
#include <vector>

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

  // The earliest t' >= t with [t', t' + length) free.
  double earliest(double t, double length) const {
    auto it = busy_.upper_bound(t);
    if (it != busy_.begin()) t = std::max(t, std::prev(it)->second);
    for (; it != busy_.end() && it->first < t + length; ++it) t = std::max(t, it->second);
    return t;
  }
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
    creditAsOf_ = std::max(creditAsOf_, t + length);
    double begin = t, end = t + length;
    auto it = busy_.lower_bound(begin);
    if (it != busy_.begin() && std::prev(it)->second >= begin) {
      --it;
      begin = it->first;
      end = std::max(end, it->second);
      it = busy_.erase(it);
    }
    while (it != busy_.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = busy_.erase(it);
    }
    busy_.emplace(begin, end);
  }

 private:
  std::map<double, double> busy_;  // start -> end, disjoint, touching ones merged
  double depthUs_;
  double creditUs_;
  double creditAsOf_ = 0;
};

class OperationSim {
 public:
  // Token buckets per port: `credits` as a previous run left them (endCredits), or full.
  using Credits = std::vector<std::vector<double>>;
  OperationSim(std::span<const Schedule> s, size_t typeSize, const Topology& topo,
               const Credits* credits, bool signaturesOnDataEdges)
      : s_(s),
        typeSize_(typeSize),
        topo_(topo),
        n_(static_cast<int>(s.size())),
        signaturesOnDataEdges_(signaturesOnDataEdges) {
    pairs_.resize(static_cast<size_t>(n_) * n_);
    ranks_.resize(static_cast<size_t>(n_));
    for (int r = 0; r < n_; ++r) {
      RankState& rs = ranks_[r];
      const size_t steps = s_[r].steps.size();
      rs.unmet.resize(steps);
      rs.readyAt.assign(steps, 0.0);
      rs.ready.assign(steps, false);
      rs.message.assign(steps, 0);
      total_ += steps;
      for (uint32_t i = 0; i < steps; ++i) {
        const Step& st = s_[r].steps[i];
        rs.unmet[i] = st.depCount;
        if (st.kind == StepKind::Send) {
          auto& q = pair(r, st.peer).sends;
          rs.message[i] = q.size();
          q.push_back(i);
        } else if (st.kind == StepKind::Recv || st.kind == StepKind::RecvReduce) {
          auto& q = pair(st.peer, r).recvs;
          rs.message[i] = q.size();
          q.push_back(i);
        }
        if (st.depCount == 0) events_.push({0.0, r, i});
      }
    }
    for (auto& p : pairs_) p.arrival.assign(p.sends.size(), -1.0);
    if (topo.memoryUsPerByte > 0) countMemoryTraffic();
    if (topo.signatures && topo.alphaScale > 1.0) addLoneSignatures();
    ports_.resize(static_cast<size_t>(topo.levels()));
    for (int l = 0; l < topo.levels(); ++l) {
      const int groups = topo.groups(l);
      const LinkCost& up =
          topo.link[static_cast<size_t>(l) + 1];  // the link above level l's groups
      const double depthUs = up.burstBytes * up.betaUsPerByte;
      for (int p = 0; p < 2 * groups; ++p)  // [2g]: out, [2g + 1]: in
        ports_[l].emplace_back(depthUs, credits ? (*credits)[l][static_cast<size_t>(p)] : depthUs);
    }
  }

  double run() {
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      becomeReady(e.rank, e.step, e.time);
    }
    bool matched = finished_ == total_;
    for (const Pair& p : pairs_) matched = matched && p.sends.size() == p.recvs.size();
    if (!matched) return std::numeric_limits<double>::infinity();
    // Where ranks outnumber cores, the cores' total work bounds the time too: each message
    // between hosts costs its sender and its receiver about a link alpha of CPU in the kernel's
    // network path (shared memory costs a copy, priced by beta), and alphaScale ranks share each
    // core. On the emulated cluster (8 ranks on 2 cores) small AllReduces ranked by messages
    // sent more than by rounds: direct (56 messages, one round) 0.44 ms, tree (28) 0.60, rhd (48)
    // 0.71, ring (112) 0.81 at 1 KiB.
    if (topo_.alphaScale > 1.0) end_ = std::max(end_, topo_.alphaScale * cpuWork_ / n_);
    linksUs_ = end_;
    end_ = std::max(end_, memoryBoundUs_);
    return end_;
  }

  // run()'s price without the memory bound.
  double linksUs() const { return linksUs_; }

  // What every port's bucket holds when the operation ends (after run()).
  Credits endCredits() const {
    Credits c(ports_.size());
    for (size_t l = 0; l < ports_.size(); ++l)
      for (const Port& p : ports_[l]) c[l].push_back(p.creditAt(end_));
    return c;
  }
  double deepestBucket() const {
    double d = 0;
    for (const auto& level : ports_)
      for (const Port& p : level) d = std::max(d, p.depth());
    return d;
  }

 private:
  struct Event {
    double time;
    int rank;
    uint32_t step;
    bool operator>(const Event& o) const { return time > o.time; }
  };
  struct Pair {  // messages from one rank to another, matched in order
    std::vector<uint32_t> sends, recvs;
    std::vector<double> arrival;  // per message, -1 until sent
    size_t launched = 0;
    double linkFree = 0.0;
  };
  struct RankState {
    std::vector<uint32_t> unmet;
    std::vector<double> readyAt;
    std::vector<bool> ready;
    std::vector<size_t> message;  // a send's or receive's index among its pair's messages
    double codecFree = 0.0;
  };

  Pair& pair(int from, int to) { return pairs_[static_cast<size_t>(from) * n_ + to]; }
  double bytes(const Step& st) const {
    return static_cast<double>(std::max(st.src.count * unitBytes(st.src.buffer, typeSize_),
                                        st.dst.count * unitBytes(st.dst.buffer, typeSize_)));
  }

  void becomeReady(int r, uint32_t i, double t) {
    RankState& rs = ranks_[r];
    rs.ready[i] = true;
    rs.readyAt[i] = t;
    const Step& st = s_[r].steps[i];
    switch (st.kind) {
      case StepKind::Send: launch(r, st.peer); break;
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        const Pair& p = pair(st.peer, r);  // a receive without its send never completes
        if (rs.message[i] < p.arrival.size() && p.arrival[rs.message[i]] >= 0)
          completeRecv(r, i, p.arrival[rs.message[i]]);
        break;
      }
      case StepKind::Copy:
      case StepKind::Reduce:
      case StepKind::FinishAvg: finish(r, i, t + bytes(st) * topo_.gammaUsPerByte); break;
      case StepKind::Encode:
      case StepKind::DecodeAccumulate:
      case StepKind::Decode: {
        // Codec steps share the rank's core: they queue behind each other.
        const double start = std::max(t, rs.codecFree);
        rs.codecFree = start + codecStepUs(st, topo_.gammaUsPerByte);
        finish(r, i, rs.codecFree);
        break;
      }
    }
  }

  // The memory bound (see operation_cost.h), per host: the bytes its ranks' steps read and write
  // in the call's buffers, the share of them its cache cannot hold, at its memory's rate.
  void countMemoryTraffic() {
    std::vector<double> traffic(static_cast<size_t>(topo_.groups(0))), footprint(traffic.size());
    for (int r = 0; r < n_; ++r) {
      const size_t host = static_cast<size_t>(topo_.groupOf[0][static_cast<size_t>(r)]);
      size_t end[3] = {0, 0, 0};  // Send, Recv, Scratch: the highest unit a step touches
      auto touch = [&](const Region& region) {
        const size_t b = static_cast<size_t>(region.buffer);
        if (b < 3) end[b] = std::max(end[b], region.offset + region.count);
        return b < 3 ? static_cast<double>(region.count * typeSize_) : 0.0;
      };
      for (const Step& st : s_[r].steps) {
        switch (st.kind) {
          case StepKind::Send: traffic[host] += touch(st.src); break;
          case StepKind::Recv: traffic[host] += touch(st.dst); break;
          case StepKind::RecvReduce:
          case StepKind::Copy: traffic[host] += touch(st.src) + touch(st.dst); break;
          case StepKind::Reduce: traffic[host] += touch(st.src) + 2 * touch(st.dst); break;
          case StepKind::FinishAvg: traffic[host] += 2 * touch(st.dst); break;
          default: break;  // codec steps: their own buffers, priced by the codec's rate
        }
      }
      footprint[host] += static_cast<double>((end[0] + end[1] + end[2]) * typeSize_);
    }
    for (size_t h = 0; h < traffic.size(); ++h) {
      const double missed = footprint[h] / (footprint[h] + topo_.cacheBytes / 2);
      memoryBoundUs_ = std::max(memoryBoundUs_, traffic[h] * missed * topo_.memoryUsPerByte);
    }
  }

  // The signatures that travel alone: to every peer checked (every rank, or the schedule's
  // peers: see the constructor) that the rank sends no data to (the others wait for the first
  // data message and leave with it).
  void addLoneSignatures() {
    std::vector<char> data(static_cast<size_t>(n_));
    for (int r = 0; r < n_; ++r) {
      std::fill(data.begin(), data.end(), 0);
      for (const Step& st : s_[r].steps)
        if (st.kind == StepKind::Send) data[static_cast<size_t>(st.peer)] = 1;
      auto lone = [&](int p) {
        const int level = topo_.commonLevel(r, p);
        if (p != r && !data[static_cast<size_t>(p)] && level > 0)
          cpuWork_ += 2 * topo_.link[static_cast<size_t>(level)].alphaUs;
      };
      if (signaturesOnDataEdges_ && !s_[r].peers.empty()) {
        for (int p : s_[r].peers) lone(p);
      } else {
        for (int p = 0; p < n_; ++p) lone(p);
      }
    }
  }

  // Starts the pair's messages in order while their sends are ready.
  void launch(int from, int to) {
    Pair& p = pair(from, to);
    RankState& rs = ranks_[from];
    while (p.launched < p.sends.size() && rs.ready[p.sends[p.launched]]) {
      const uint32_t i = p.sends[p.launched];
      const double b = bytes(s_[from].steps[i]);
      const int level = topo_.commonLevel(from, to);
      const LinkCost& link = topo_.link[static_cast<size_t>(level)];
      // Every port on the way must be free at once, each for its own level's beta.
      // A shaped port passes what its bucket holds at once, so how long each port is busy
      // depends on when the message starts.
      auto length = [&](int l) { return b * topo_.link[static_cast<size_t>(l) + 1].betaUsPerByte; };
      auto busyFor = [&](int l, double t) {
        return std::max(outPort(l, from).busyFor(t, length(l)),
                        inPort(l, to).busyFor(t, length(l)));
      };
      double start = std::max(rs.readyAt[i], p.linkFree);
      for (bool moved = true; moved;) {
        moved = false;
        for (int l = 0; l < level; ++l) {
          const double busy = busyFor(l, start);
          const double t =
              std::max(outPort(l, from).earliest(start, busy), inPort(l, to).earliest(start, busy));
          if (t > start) start = t, moved = true;
        }
      }
      // The message takes as long as its slowest port (without shaping: the level's beta).
      double transfer = level == 0 ? b * link.betaUsPerByte : 0.0;
      for (int l = 0; l < level; ++l) transfer = std::max(transfer, busyFor(l, start));
      p.linkFree = start + transfer;
      for (int l = 0; l < level; ++l) {
        outPort(l, from).book(start, length(l));
        inPort(l, to).book(start, length(l));
      }
      const double arrival = start + link.alphaUs * topo_.alphaScale + transfer;
      if (level > 0) cpuWork_ += 2 * link.alphaUs + b * link.cpuUsPerByte;  // the kernel's work
      p.arrival[p.launched] = arrival;
      finish(from, i, arrival);
      const uint32_t recv = p.launched < p.recvs.size() ? p.recvs[p.launched] : UINT32_MAX;
      ++p.launched;
      if (recv != UINT32_MAX && ranks_[to].ready[recv]) completeRecv(to, recv, arrival);
    }
  }

  Port& outPort(int level, int rank) { return ports_[level][2 * topo_.groupOf[level][rank]]; }
  Port& inPort(int level, int rank) { return ports_[level][2 * topo_.groupOf[level][rank] + 1]; }

  void completeRecv(int r, uint32_t i, double arrival) {
    const Step& st = s_[r].steps[i];
    const double reduce = st.kind == StepKind::RecvReduce ? bytes(st) * topo_.gammaUsPerByte : 0.0;
    finish(r, i, std::max(ranks_[r].readyAt[i], arrival) + reduce);
  }

  void finish(int r, uint32_t i, double t) {
    ++finished_;
    end_ = std::max(end_, t);
    RankState& rs = ranks_[r];
    const Schedule& s = s_[r];
    for (uint32_t k = s.dependentsBegin[i]; k < s.dependentsBegin[i + 1]; ++k) {
      const uint32_t d = s.dependents[k];
      rs.readyAt[d] = std::max(rs.readyAt[d], t);
      if (--rs.unmet[d] == 0) events_.push({rs.readyAt[d], r, d});
    }
  }

  std::span<const Schedule> s_;
  size_t typeSize_;
  const Topology& topo_;
  int n_;
  std::vector<Pair> pairs_;
  std::vector<RankState> ranks_;
  std::vector<std::vector<Port>> ports_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  size_t total_ = 0, finished_ = 0;
  double end_ = 0.0;
  double cpuWork_ = 0.0;        // microseconds of CPU all messages cost their two ends
  double memoryBoundUs_ = 0.0;  // the busiest host memory's time (countMemoryTraffic)
  double linksUs_ = 0.0;
  bool signaturesOnDataEdges_;
};

constexpr int kSteadyRounds = 16;

}  // namespace

double estimateMicroseconds(std::span<const Schedule> schedules, size_t typeSize,
                            const Topology& topo, bool signaturesOnDataEdges, double* linksUs) {
  double ignored;
  if (!linksUs) linksUs = &ignored;
  *linksUs = std::numeric_limits<double>::infinity();
  if (schedules.size() != static_cast<size_t>(topo.nranks()))
    return std::numeric_limits<double>::infinity();
  OperationSim first(schedules, typeSize, topo, nullptr, signaturesOnDataEdges);
  double us = first.run();
  *linksUs = first.linksUs();
  const double depth = first.deepestBucket();
  if (depth <= 0 || !std::isfinite(us)) return us;
  // Shaped links: price a call in a steady stream of calls, as training issues them and the
  // benchmarks time them. A bucket starts each call with what the previous call left in it, so
  // the operation is run again from the buckets the last run left until they settle.
  OperationSim::Credits credits = first.endCredits();
  for (int round = 0; round < kSteadyRounds; ++round) {
    OperationSim next(schedules, typeSize, topo, &credits, signaturesOnDataEdges);
    us = next.run();
    *linksUs = next.linksUs();
    OperationSim::Credits after = next.endCredits();
    double moved = 0;
    for (size_t l = 0; l < after.size(); ++l)
      for (size_t p = 0; p < after[l].size(); ++p)
        moved = std::max(moved, std::abs(after[l][p] - credits[l][p]));
    credits = std::move(after);
    if (moved <= 0.01 * depth) break;
  }
  return us;
}

}  // namespace braid::algos
