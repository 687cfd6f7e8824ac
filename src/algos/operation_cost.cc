#include "algos/operation_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <queue>
#include <vector>

#include "algos/interval_set.h"
#include "algos/operation_compile.h"

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

  // The earliest t' >= t with [t', t' + length) free, and where that gap ends; a run of
  // searches from growing times resumes at the cursor.
  using Cursor = IntervalSet::Cursor;
  double earliest(Cursor* c, double t, double length, double* freeUntil) const {
    return busy_.earliestGap(c, t, length, freeUntil);
  }
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
    for (Compiled::Message& m : c.messages) m.arrival = -1;
    for (Compiled::Pair& p : c.pairs) {
      p.linkFree = 0;
      p.launched = 0;
      p.resumePending = false;
      if (p.sends > 0) {
        p.headSend = c.messages[p.firstMessage].send;
        p.headRecv = c.messages[p.firstMessage].recv;
      }
    }
    if (topo.alphaScale > 1.0) cores_ = c.simulated() / topo.alphaScale;
    way_.assign(2 * static_cast<size_t>(topo.levels()), 0);
    search_.resize(way_.size());
    levelBytes_.assign(static_cast<size_t>(topo.levels()) + 1, 0.0);
    // Steps that wait for nothing are ready at 0. A connection's sends among them need no event
    // each (a pipeline's first exchange has thousands, every one in the heap at once): they are
    // ready from the start, and one resume event per connection, in the first one's place among
    // the ties, launches them in turn as the connection frees.
    for (uint32_t g : c.roots) {
      const int r =
          static_cast<int>(std::upper_bound(c.rankBase.begin(), c.rankBase.end(), size_t{g}) -
                           c.rankBase.begin() - 1);
      Compiled::Step& st = c.steps[g];
      if (st.kind() != StepKind::Send) {
        events_.push({0.0, r, g});
        continue;
      }
      st.unmet = Compiled::kReady;
      if (!c.pairs[st.link].resumePending) {
        c.pairs[st.link].resumePending = true;
        events_.push({0.0, r, g, true, st.link});
      }
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
      if (!events_.empty()) {
        const Event& next = events_.top();
        __builtin_prefetch(&c_.steps[next.step()]);
        if (next.pair != kNone) __builtin_prefetch(&c_.pairs[next.pair]);
        if (next.message != kNone) __builtin_prefetch(&c_.messages[next.message]);
      }
      // This event's step (fetched the same way) finishes soon: its dependents' list next.
      __builtin_prefetch(c_.dependents.data() + c_.steps[e.step()].dependentsBegin);
      now_ = e.time;
      if (e.resume()) {
        c_.pairs[e.pair].resumePending = false;
        launch(e.pair);
      } else {
        becomeReady(e.rank(), e.step(), e.time);
      }
    }
    bool matched = finished_ == c_.stepCount();
    for (const Compiled::Pair& p : c_.pairs) matched = matched && p.sends == p.recvs;
    if (!matched) return std::numeric_limits<double>::infinity();
    // Where ranks outnumber cores, the cores' total work bounds the time too: each message
    // between hosts costs its sender and its receiver about a link alpha of CPU in the kernel's
    // network path, every message its bytes' CPU (LinkCost::cpuUsPerByte), and alphaScale
    // ranks share each core. On the emulated cluster (8 ranks on 2 cores) small AllReduces
    // ranked by messages sent more than by rounds: direct (56 messages, one round) 0.44 ms, tree
    // (28) 0.60, rhd (48) 0.71, ring (112) 0.81 at 1 KiB.
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
  // An event: its time, and its rank, step and kind packed so that one integer comparison
  // orders ties by rank, then step, then kind; and the pair or message it will read, fetched
  // while the event before it is handled (each is a miss at thousands of ranks, and found only
  // through the step).
  struct Event {
    double time;
    uint64_t key;  // rank << 33 | step << 1 | resume
    uint32_t pair = kNone, message = kNone;

    // resume: not a step becoming ready: `step`'s connection has sent its last message and may
    // start the next (launch).
    Event(double t, int rank, uint32_t step, bool resume = false, uint32_t pair = kNone,
          uint32_t message = kNone)
        : time(t),
          key(static_cast<uint64_t>(rank) << 33 | static_cast<uint64_t>(step) << 1 |
              (resume ? 1u : 0u)),
          pair(pair),
          message(message) {}
    int rank() const { return static_cast<int>(key >> 33); }
    uint32_t step() const { return static_cast<uint32_t>(key >> 1); }
    bool resume() const { return key & 1; }
    // Ties go by rank, then step: the order does not depend on the heap's, and a rank's image
    // a block away meets its ties as the rank does (OperationOptions::symmetry).
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : key > o.key; }
  };

  static constexpr uint32_t kNone = UINT32_MAX;
  // The event for step d becoming ready, with what it will read.
  static Event readyEvent(double t, int r, uint32_t g, const Compiled::Step& d) {
    switch (d.kind()) {
      case StepKind::Send: return {t, r, g, false, d.link};
      case StepKind::Recv:
      case StepKind::RecvReduce: return {t, r, g, false, kNone, d.link};
      default: return {t, r, g};
    }
  }

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
          const double arrival = c_.messages[st.link].arrival;
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
    Compiled::Pair& p = c_.pairs[pairIndex];
    while (p.launched < p.sends) {
      const uint32_t g = p.headSend, recv = p.headRecv;
      if (!c_.steps[g].ready()) return;
      const size_t message = p.firstMessage + p.launched;
      // Read at the end of this message: its receive, and the next message's record.
      if (recv != Compiled::kNoMessage) __builtin_prefetch(&c_.steps[recv]);
      if (p.launched + 1 < p.sends) __builtin_prefetch(&c_.messages[message + 1]);
      if (p.linkFree > now_) {
        if (!p.resumePending) {
          p.resumePending = true;
          events_.push({p.linkFree, p.from, g, true, pairIndex});
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
      // its earliest gap, until all of them in a row accept it. The start only grows, so each
      // port's search resumes where its last ended, and a port whose last gap still holds the
      // message accepts it without one (at thousands of ranks a message's start moves a dozen
      // times or more, each move past one busy interval of one port).
      double start = std::max(c_.steps[g].readyAt, p.linkFree);
      PortSearch* search = search_.data();
      std::fill_n(search, 2 * level, PortSearch{});
      for (int k = 0, accepted = 0; accepted < 2 * level; k = k + 1 == 2 * level ? 0 : k + 1) {
        const double length = busyFor(k / 2, start);
        if (start < search[k].freeUntil && start + length <= search[k].freeUntil) {
          ++accepted;
          continue;
        }
        const double t =
            port(k / 2, way[k]).earliest(&search[k].cursor, start, length, &search[k].freeUntil);
        if (t > start)
          start = t, accepted = 1;
        else
          ++accepted;
      }
      // The message takes as long as its slowest port (without shaping: the level's beta).
      double transfer = level == 0 ? b * link.betaUsPerByte : 0.0;
      for (int l = 0; l < level; ++l) transfer = std::max(transfer, busyFor(l, start));
      p.linkFree = start + transfer;
      for (int k = 0; k < 2 * level; ++k) port(k / 2, way[k]).book(start, length(k / 2, way[k]));
      double arrival = start + link.alphaUs * topo_.alphaScale + transfer;
      // The CPU a message's bytes cost its two ends, on the pool where ranks outnumber cores:
      // between hosts the kernel's network path, inside a host the copies through shared
      // memory (a link's cpuUsPerByte; inside a host 0 unless a cluster map declares it).
      if (level > 0) cpuWork_ += 2 * link.alphaUs;
      cpuWork_ += b * link.cpuUsPerByte;
      if (cores_ > 0 && link.cpuUsPerByte > 0)
        arrival = std::max(arrival, cpuDone(start, b * link.cpuUsPerByte / cores_));
      levelBytes_[static_cast<size_t>(level)] += b * (c_.n / c_.period);
      c_.messages[message].arrival = arrival;
      finish(p.from, g, arrival);
      if (++p.launched < p.sends) {
        p.headSend = c_.messages[message + 1].send;
        p.headRecv = c_.messages[message + 1].recv;
      }
      if (recv != Compiled::kNoMessage && c_.steps[recv].ready())
        completeRecv(p.receiver, recv, arrival);
    }
  }

  // Where ranks outnumber cores they share them: the simulated ranks' cores are one pool, and a
  // message's CPU work (its bytes x the link's CPU per byte, spread over the pool) takes the
  // pool's earliest gap from the message's start. The message arrives no sooner than that work
  // is done, so messages that leave together queue for the cores as they would for a port:
  // eight emulated hosts on two cores move 2 Gbit/s each alone, and much less all at once.
  double cpuDone(double t, double length) {
    cpu_.forget(now_);
    Port::Cursor cursor;
    double freeUntil = 0;
    const double at = cpu_.earliest(&cursor, t, length, &freeUntil);
    cpu_.book(at, length);
    return at + length;
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
    for (uint32_t k = c_.steps[g].dependentsBegin; k < end; ++k)
      __builtin_prefetch(&c_.steps[c_.dependents[k]]);  // each is a miss: let them overlap
    for (uint32_t k = c_.steps[g].dependentsBegin; k < end; ++k) {
      Compiled::Step& d = c_.steps[c_.dependents[k]];
      d.readyAt = std::max(d.readyAt, t);
      if (--d.unmet == 0) events_.push(readyEvent(d.readyAt, r, c_.dependents[k], d));
    }
  }

  Compiled& c_;
  const Topology& topo_;
  std::vector<double> codecFree_;  // per simulated rank
  std::vector<int> way_;           // launch's ports of the message it places
  // launch's search on each of way_'s ports: where it stands, and where its last gap ends.
  struct PortSearch {
    Port::Cursor cursor;
    double freeUntil = -std::numeric_limits<double>::infinity();
  };
  std::vector<PortSearch> search_;
  std::vector<double> levelBytes_;
  std::vector<std::vector<Port>> ports_;  // [level][port class, out and in]
  Port cpu_{0, 0};    // the simulated ranks' cores, where ranks outnumber them (cpuDone)
  double cores_ = 0;  // how many: simulated ranks / Topology::alphaScale; 0 where not shared
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
      compileOperation(nranks, source, typeSize, topo, options, &report->overBudget);
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
