// Runs every rank's schedule in memory, with FIFO message queues between ranks, so algorithms
// are tested without any transport: data movement, dependencies and the matching of sends to
// receives. Arithmetic is int64 sum (exact), or max; enough to see every element's provenance.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "algos/schedule.h"

namespace braid::testing {

struct SimRank {
  std::vector<int64_t> send, recv;
};

// When a send completes. Buffered: at once (a small message the transport copies). Rendezvous:
// only together with its matching receive, once that is ready too (a large message the receiver
// copies out of the sender's buffer): a schedule whose receive waits on a send to the same
// peer's own waiting receive deadlocks here, as it would on a real transport.
enum class SendMode { Buffered, Rendezvous };

// Returns "" on success, else what went wrong (deadlock, size mismatch, bad region).
inline std::string simulate(const std::vector<algos::Schedule>& schedules, std::vector<SimRank>& ranks,
                            int nranks, bool average = false, SendMode mode = SendMode::Buffered) {
  using algos::Buffer;
  using algos::Step;
  using algos::StepKind;
  const int n = nranks;
  std::vector<std::vector<int64_t>> scratch(n);
  for (int r = 0; r < n; ++r) scratch[r].assign(schedules[r].scratchCount, 0);
  std::vector<std::deque<std::vector<int64_t>>> channel(n * n);  // [from * n + to]
  std::vector<std::vector<uint32_t>> unmet(n);
  std::vector<std::vector<bool>> done(n);
  std::vector<std::vector<uint32_t>> sendQ(n * n), recvQ(n * n);
  std::vector<size_t> sendHead(n * n, 0), recvHead(n * n, 0);
  size_t pending = 0;
  for (int r = 0; r < n; ++r) {
    const auto& s = schedules[r];
    unmet[r].resize(s.steps.size());
    done[r].assign(s.steps.size(), false);
    for (uint32_t i = 0; i < s.steps.size(); ++i) {
      const Step& st = s.steps[i];
      unmet[r][i] = st.depCount;
      const bool local = st.kind == StepKind::Copy || st.kind == StepKind::Reduce || st.kind == StepKind::FinishAvg;
      if (st.kind == StepKind::Encode || st.kind == StepKind::Decode || st.kind == StepKind::DecodeAccumulate)
        return "rank " + std::to_string(r) + " step " + std::to_string(i) +
               ": a codec step (use simulateCompressed)";
      if (st.peer >= n || (st.peer < 0 && !local))
        return "rank " + std::to_string(r) + " step " + std::to_string(i) + ": bad peer";
      if (st.kind == StepKind::Send) sendQ[r * n + st.peer].push_back(i);
      if (st.kind == StepKind::Recv || st.kind == StepKind::RecvReduce) recvQ[r * n + st.peer].push_back(i);
    }
    pending += s.steps.size();
  }
  auto buf = [&](int r, const algos::Region& reg) -> int64_t* {
    std::vector<int64_t>& v = reg.buffer == Buffer::Send ? ranks[r].send
                              : reg.buffer == Buffer::Recv ? ranks[r].recv : scratch[r];
    static int64_t empty;
    if (reg.offset + reg.count > v.size()) return nullptr;
    return reg.count == 0 ? &empty : v.data() + reg.offset;
  };
  auto finish = [&](int r, uint32_t i) {
    done[r][i] = true;
    --pending;
    const auto& s = schedules[r];
    for (uint32_t k = s.dependentsBegin[i]; k < s.dependentsBegin[i + 1]; ++k) --unmet[r][s.dependents[k]];
  };
  while (pending > 0) {
    bool moved = false;
    for (int r = 0; r < n; ++r) {
      const auto& s = schedules[r];
      for (uint32_t i = 0; i < s.steps.size(); ++i) {
        const Step& st = s.steps[i];
        if (done[r][i] || unmet[r][i] != 0) continue;
        if (st.kind == StepKind::Copy || st.kind == StepKind::Reduce || st.kind == StepKind::FinishAvg) {
          int64_t* d = buf(r, st.dst);
          int64_t* src = buf(r, st.src);
          if (!d || !src) return "rank " + std::to_string(r) + ": region out of bounds";
          if (st.kind == StepKind::Copy) std::copy(src, src + st.src.count, d);
          else if (st.kind == StepKind::Reduce) for (size_t e = 0; e < st.dst.count; ++e) d[e] += src[e];
          else for (size_t e = 0; e < st.dst.count; ++e) d[e] /= n;
          (void)average;
          finish(r, i);
          moved = true;
        } else if (st.kind == StepKind::Send) {
          if (mode == SendMode::Rendezvous) continue;  // completed by its receive, below
          size_t q = r * n + st.peer;
          if (sendQ[q][sendHead[q]] != i) continue;  // FIFO: earlier sends first
          int64_t* src = buf(r, st.src);
          if (!src) return "rank " + std::to_string(r) + ": send region out of bounds";
          channel[q].emplace_back(src, src + st.src.count);
          sendHead[q]++;
          finish(r, i);
          moved = true;
        } else {
          size_t q = st.peer * n + r;
          size_t mine = r * n + st.peer;
          if (recvQ[mine][recvHead[mine]] != i) continue;
          if (mode == SendMode::Rendezvous && channel[q].empty()) {
            const int from = st.peer;
            if (sendHead[q] >= sendQ[q].size()) continue;
            const uint32_t j = sendQ[q][sendHead[q]];
            if (unmet[from][j] != 0) continue;
            int64_t* src = buf(from, schedules[from].steps[j].src);
            if (!src) return "rank " + std::to_string(from) + ": send region out of bounds";
            channel[q].emplace_back(src, src + schedules[from].steps[j].src.count);
            sendHead[q]++;
            finish(from, j);
          }
          if (channel[q].empty()) continue;
          std::vector<int64_t> msg = std::move(channel[q].front());
          channel[q].pop_front();
          if (msg.size() != st.dst.count)
            return "rank " + std::to_string(r) + " step " + std::to_string(i) + ": received " +
                   std::to_string(msg.size()) + " elements, expected " + std::to_string(st.dst.count);
          int64_t* d = buf(r, st.dst);
          if (!d) return "rank " + std::to_string(r) + ": recv region out of bounds";
          if (st.kind == StepKind::Recv) {
            std::copy(msg.begin(), msg.end(), d);
          } else {
            int64_t* src = buf(r, st.src);
            if (!src) return "rank " + std::to_string(r) + ": reduce source out of bounds";
            for (size_t e = 0; e < msg.size(); ++e) d[e] = src[e] + msg[e];
          }
          recvHead[mine]++;
          finish(r, i);
          moved = true;
        }
      }
    }
    if (!moved) return "deadlock: " + std::to_string(pending) + " steps cannot run";
  }
  for (size_t q = 0; q < channel.size(); ++q)
    if (!channel[q].empty()) return "unreceived messages on channel " + std::to_string(q);
  return "";
}

}  // namespace braid::testing
