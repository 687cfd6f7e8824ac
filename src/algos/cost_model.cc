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

// Where a rank is walked alone on a topology, its receives also wait for their senders, taken
// to be where this rank is in its own schedule: the m-th message from peer p leaves when this
// rank's m-th message to p's mirror image (2 rank - p: a ring's successor for its predecessor)
// left, or its m-th message to p itself where it sends the mirror nothing (an exchange), if
// either was sent before the receive in schedule order; it arrives a hop later (Flows::hop: the
// hop's latency and transfer as the ranks of the host that play the same part see them on
// average, since a chunk passing along a ring crosses every kind of hop in turn). Without it a
// rank never waits for a predecessor, and a ring's receives pipelined at their port's rate: a
// latency-bound ring at thousands of ranks priced a fraction of its whole operation.
struct Senders {
  int rank = 0;
  int nranks = 0;                                 // 0: receives wait for nothing but their port
  std::map<int, std::vector<double>> sendStarts;  // per peer, each message's start
  std::map<int, size_t> received;                 // per peer, messages received so far

  void sent(int peer, double start) {
    if (nranks > 0) sendStarts[peer].push_back(start);
  }
  // When the sender of a message from `peer` started it; -1 where unknown.
  double from(int peer) {
    if (nranks <= 0) return -1.0;
    const size_t m = received[peer]++;
    for (int image : {((2 * rank - peer) % nranks + nranks) % nranks, peer}) {
      auto it = sendStarts.find(image);
      if (it != sendStarts.end()) return it->second.size() > m ? it->second[m] : -1.0;
    }
    return -1.0;
  }
};

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
    double start = 0.0;
    for (uint32_t k = 0; k < st.depCount; ++k)
      start = std::max(start, finish[s.deps[st.depBegin + k]]);
    const double bytes = stepBytes(st, typeSize);

    double done = start;
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
      case StepKind::Reduce:
      case StepKind::FinishAvg: done = start + bytes * gamma; break;
      case StepKind::Copy: done = start + bytes * copy; break;
      case StepKind::Encode:
      case StepKind::DecodeAccumulate:
      case StepKind::Decode: done = start + codecStepUs(st, gamma); break;
    }
    finish[i] = done;
    end = std::max(end, done);
  }
  return end;
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
  return walk(
      s, typeSize, t.gammaUsPerByte, t.gammaUsPerByte, t.levels(),
      [&](int peer, size_t step, bool out) {
        const int level = t.commonLevel(rank, peer);
        const LinkCost& link = t.link[static_cast<size_t>(level)];
        double beta = link.betaUsPerByte;
        if (flows.count)
          for (int l = 0; l < level; ++l)
            beta = std::max(beta, flows.count(flows.context, step, l, out) *
                                      t.link[static_cast<size_t>(l) + 1].betaUsPerByte);
        return std::make_tuple(level, link, beta);
      },
      Senders{rank, t.nranks(), {}, {}}, flows);
}

}  // namespace braid::algos
