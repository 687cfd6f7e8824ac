#include "algos/cost_model.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "algos/topology.h"

namespace braid::algos {

double codecStepUs(const Step& st, double gammaUsPerByte) {
  // Priced by the fp32 bytes processed: decoding runs at about the speed of a reduction,
  // encoding (block maxima and rounding, or top-k selection) at about a third of it
  // (docs/compression.md, measured throughput).
  const double bytes = static_cast<double>(st.elements) * 4.0;
  return st.kind == StepKind::Encode ? 3.0 * bytes * gammaUsPerByte : bytes * gammaUsPerByte;
}

namespace {

// Where a rank is walked alone on a topology, its receives also wait for their senders. The m-th
// message from peer p leaves when this rank's m-th message to p's mirror image left, if the rank
// sent the mirror anything before the receive in schedule order (a ring's rank is where its
// neighbours are in theirs). The mirror is taken in the smallest group the two share (2 i - j
// among its members, i this rank's place and j p's): a ring's successor for its predecessor,
// also where the ring is one of a hierarchy's, whose first member's predecessor is its last
// (taken in the whole communicator, the mirror of a hierarchy's first rank was no peer of its
// at all, and its receives waited for nothing: at 256 ranks hierpipe priced 0.52-0.62 of its
// whole operation from 4 MiB). Else the
// sender cone, where there is one, evaluates p's schedule up to that message (a tree's parent
// waits for its children's subtrees, a leaf for the root's answer); failing that, the m-th
// message to p itself, as in an exchange. The message arrives a hop later (Flows::hop: the hop's
// latency and transfer as the ranks of the host that play the same part see them on average,
// since a chunk passing along a ring crosses every kind of hop in turn). Without it a rank never
// waits for a predecessor, and a ring's receives pipelined at their port's rate: a
// latency-bound ring at thousands of ranks priced a fraction of its whole operation.
struct Senders {
  int rank = 0;
  const Topology* topo = nullptr;                 // null: receives wait for nothing but their port
  std::map<int, std::vector<double>> sendStarts;  // per peer, each message's start
  std::map<int, size_t> received;                 // per peer, messages received so far
  SenderCone* cone = nullptr;                     // places what the mirror does not
  std::map<int, std::vector<int>> members;        // per level, this rank's group, in rank order

  void sent(int peer, double start) {
    if (topo) sendStarts[peer].push_back(start);
  }
  // `peer`'s mirror image: 2 i - j in the smallest group holding both (see above).
  int mirrorOf(int peer) {
    const int level = topo->commonLevel(rank, peer);
    if (level >= topo->levels()) {
      const int n = topo->nranks();
      return ((2 * rank - peer) % n + n) % n;
    }
    std::vector<int>& group = members[level];
    if (group.empty()) {
      const std::vector<int>& of = topo->groupOf[static_cast<size_t>(level)];
      for (int q = 0; q < topo->nranks(); ++q)
        if (of[static_cast<size_t>(q)] == of[static_cast<size_t>(rank)]) group.push_back(q);
    }
    auto at = [&](int q) {
      return static_cast<long>(std::lower_bound(group.begin(), group.end(), q) - group.begin());
    };
    const long size = static_cast<long>(group.size());
    return group[static_cast<size_t>(((2 * at(rank) - at(peer)) % size + size) % size)];
  }
  // When the sender of a message from `peer` started it; -1 where unknown.
  double from(int peer) {
    if (!topo) return -1.0;
    const size_t m = received[peer]++;
    auto sentTo = [&](int image) -> const std::vector<double>* {
      auto it = sendStarts.find(image);
      return it == sendStarts.end() ? nullptr : &it->second;
    };
    // A peer that is its own mirror (half the group away) is an exchange partner, as in
    // halving-doubling: the cone, else the exchange rule, places it.
    const int image = mirrorOf(peer);
    if (const auto* mirror = image == peer ? nullptr : sentTo(image))
      return mirror->size() > m ? (*mirror)[m] : -1.0;
    if (cone) {
      if (const double t = cone->sendStart(peer, rank, m); t >= 0) return t;
    }
    const auto* exchange = sentTo(peer);
    return exchange && exchange->size() > m ? (*exchange)[m] : -1.0;
  }
};

// When step `st` of `s` may start: its dependencies' latest finish.
double readyAt(const Schedule& s, const Step& st, const std::vector<double>& finish) {
  double start = 0.0;
  for (uint32_t k = 0; k < st.depCount; ++k)
    start = std::max(start, finish[s.deps[st.depBegin + k]]);
  return start;
}

// The time of a step that moves no message: a reduction, a copy or a codec step.
double localUs(const Step& st, double bytes, double gamma, double copy) {
  switch (st.kind) {
    case StepKind::Reduce:
    case StepKind::FinishAvg: return bytes * gamma;
    case StepKind::Copy: return bytes * copy;
    case StepKind::Encode:
    case StepKind::DecodeAccumulate:
    case StepKind::Decode: return codecStepUs(st, gamma);
    default: return 0.0;
  }
}

// The pricing walk shared by both entry points; `linkOf(peer)` names the link level and cost.
// `linkOf(peer, step, out)` names the link level and the message's cost per byte.
template <typename LinkOf>
double walk(const Schedule& s, size_t typeSize, double gamma, double copy, int levels,
            LinkOf linkOf, Senders senders = {}, Flows flows = {}) {
  std::vector<double> finish(s.steps.size(), 0.0);
  std::vector<double> sendPort(static_cast<size_t>(levels) + 1, 0.0), recvPort(sendPort);
  double end = 0.0;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    double start = readyAt(s, st, finish);
    const double bytes = stepBytes(st, typeSize);
    double done = start + localUs(st, bytes, gamma, copy);
    switch (st.kind) {
      case StepKind::Send:
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        const bool out = st.kind == StepKind::Send;
        auto [level, link, beta] = linkOf(st.peer, i, out);
        double& port = (out ? sendPort : recvPort)[static_cast<size_t>(level)];
        start = std::max(start, port);
        done = start + link.alphaUs + bytes * beta;
        if (out) {
          senders.sent(st.peer, start);
        } else if (const double sent = senders.from(st.peer); sent >= 0) {
          const double hop = flows.hop ? flows.hop(flows.context, i) : link.alphaUs + bytes * beta;
          done = std::max(done, sent + hop);
        }
        port = start + bytes * beta;  // the next message may overlap our latency
        if (st.kind == StepKind::RecvReduce) done += bytes * gamma;
        break;
      }
      default: break;
    }
    finish[i] = done;
    end = std::max(end, done);
  }
  return end;
}

// A rank's link to `peer` on the topology: the level, its cost, and the message's cost per byte
// with the flows that share its ports (cost_model.h, FlowCount).
auto topologyLink(const Topology& t, int rank, const Flows& flows) {
  return [&t, rank, flows](int peer, size_t step, bool out) {
    const int level = t.commonLevel(rank, peer);
    const LinkCost& link = t.link[static_cast<size_t>(level)];
    double beta = link.betaUsPerByte;
    if (flows.count)
      for (int l = 0; l < level; ++l)
        beta = std::max(beta, flows.count(flows.context, step, l, out) *
                                  t.link[static_cast<size_t>(l) + 1].betaUsPerByte);
    return std::make_tuple(level, link, beta);
  };
}

}  // namespace

double estimateMicroseconds(const Schedule& s, size_t typeSize, const CostParams& c) {
  return walk(s, typeSize, c.gammaUsPerByte, c.copyUsPerByte, 0,
              [&](int, size_t, bool) { return std::make_tuple(0, c.link, c.link.betaUsPerByte); });
}

double estimateMicroseconds(const Schedule& s, size_t typeSize, const Topology& t, int rank) {
  return estimateMicroseconds(s, typeSize, t, rank, Flows{});
}

double estimateMicroseconds(const Schedule& s, size_t typeSize, const Topology& t, int rank,
                            Flows flows) {
  return walk(s, typeSize, t.gammaUsPerByte, t.gammaUsPerByte, t.levels(),
              topologyLink(t, rank, flows), Senders{rank, &t, {}, {}, flows.cone, {}}, flows);
}

// A rank the cone has taken on: its schedule's steps, evaluated on demand.
struct SenderCone::Rank {
  int rank;
  const Schedule& s;
  std::vector<double> finish;  // per step, once known
  std::vector<double> start;   // per send step, once known: when its message left
  std::vector<uint8_t> state;  // per step: kUnknown, kOpen (its dependencies are being
                               // evaluated), kKnown
  std::vector<uint32_t> nth;   // per send or receive: its place among those to or from its peer
  std::map<int, std::vector<uint32_t>> sendSteps;  // per peer, its send steps in order
};

namespace {
constexpr uint8_t kUnknown = 0, kOpen = 1, kKnown = 2;
}  // namespace

SenderCone::SenderCone(const Topology& topology, size_t typeSize, ScheduleOf scheduleOf,
                       const void* context, size_t maxSteps)
    : topo_(topology),
      typeSize_(typeSize),
      scheduleOf_(scheduleOf),
      context_(context),
      maxSteps_(maxSteps) {}

SenderCone::~SenderCone() = default;

SenderCone::Rank* SenderCone::rankState(int r) {
  auto it = ranks_.find(r);
  if (it != ranks_.end()) return it->second.get();
  if (steps_ >= maxSteps_) return nullptr;
  const Schedule& s = scheduleOf_(context_, r);
  steps_ += s.steps.size();
  const size_t n = s.steps.size();
  auto q = std::unique_ptr<Rank>(new Rank{r,
                                          s,
                                          std::vector<double>(n, 0.0),
                                          std::vector<double>(n, 0.0),
                                          std::vector<uint8_t>(n, kUnknown),
                                          std::vector<uint32_t>(n, 0),
                                          {}});
  std::map<int, uint32_t> received;
  for (size_t i = 0; i < n; ++i) {
    const Step& st = s.steps[i];
    if (st.kind == StepKind::Send) {
      auto& sends = q->sendSteps[st.peer];
      q->nth[i] = static_cast<uint32_t>(sends.size());
      sends.push_back(static_cast<uint32_t>(i));
    } else if (st.kind == StepKind::Recv || st.kind == StepKind::RecvReduce) {
      q->nth[i] = received[st.peer]++;
    }
  }
  return ranks_.emplace(r, std::move(q)).first->second.get();
}

// Evaluates step `target` of q and the steps it depends on, without recursion inside q (a
// ring's step depends on the one before it, thousands deep): a step is known once its
// dependencies are, at its dependencies' finish (no port queue: the cone's ranks are not walked
// in schedule order) plus its own time, a receive no earlier than its sender's message arrives.
bool SenderCone::evaluate(Rank& q, uint32_t target) {
  if (q.state[target] == kKnown) return true;
  if (q.state[target] == kOpen) return false;  // asked again while being evaluated: a cycle
  const Schedule& s = q.s;
  std::vector<uint32_t> stack{target}, opened;
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    const Step& st = s.steps[i];
    if (q.state[i] == kKnown) {
      stack.pop_back();
      continue;
    }
    if (q.state[i] == kUnknown) {
      q.state[i] = kOpen;
      opened.push_back(i);
      for (uint32_t k = 0; k < st.depCount; ++k) {
        const uint32_t d = s.deps[st.depBegin + k];
        if (q.state[d] == kUnknown) {
          stack.push_back(d);
        } else if (q.state[d] == kOpen) {
          // Open, yet not in this evaluation (a step comes after the steps it depends on, so
          // none of them is open here): an evaluation of q further up the cone waits for this
          // one, and the step waits on itself through other ranks.
          for (uint32_t o : opened)
            if (q.state[o] == kOpen) q.state[o] = kUnknown;
          return false;
        }
      }
      continue;
    }
    const double start = readyAt(s, st, q.finish);
    const double bytes = stepBytes(st, typeSize_);
    const double gamma = topo_.gammaUsPerByte;
    double done = start + localUs(st, bytes, gamma, gamma);
    if (st.kind == StepKind::Send || st.kind == StepKind::Recv || st.kind == StepKind::RecvReduce) {
      const LinkCost& link = topo_.link[static_cast<size_t>(topo_.commonLevel(q.rank, st.peer))];
      const double hop = link.alphaUs + bytes * link.betaUsPerByte;
      done = start + hop;
      if (st.kind == StepKind::Send) {
        q.start[i] = start;
      } else {
        if (const double sent = sendStart(st.peer, q.rank, q.nth[i]); sent >= 0)
          done = std::max(done, sent + hop);
        if (st.kind == StepKind::RecvReduce) done += bytes * gamma;
      }
    }
    q.finish[i] = done;
    q.state[i] = kKnown;
    stack.pop_back();
  }
  return true;
}

double SenderCone::sendStart(int from, int to, size_t m) {
  if (from < 0 || from >= topo_.nranks() || depth_ >= kMaxDepth) return -1.0;
  Rank* q = rankState(from);
  if (!q) return -1.0;
  auto it = q->sendSteps.find(to);
  if (it == q->sendSteps.end() || it->second.size() <= m) return -1.0;
  const uint32_t step = it->second[m];
  ++depth_;
  const bool known = evaluate(*q, step);
  --depth_;
  return known ? q->start[step] : -1.0;
}

}  // namespace braid::algos
