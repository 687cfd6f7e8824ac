// Runs compressed schedules in memory, as schedule_sim.h runs exact ones: every rank's steps
// with FIFO byte queues between ranks, the real codec for Encode / DecodeAccumulate / Decode,
// fp32 data (Send, Recv, Scratch), bytes (Packed) and an fp32 accumulator (Accum). Each rank
// may carry an error-feedback residual the size of its input.
#pragma once

#include <cstddef>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "algos/schedule.h"
#include "common/schedule_sim.h"
#include "compress/codec.h"

namespace braid::testing {

struct FloatRank {
  std::vector<float> send, recv;
  std::vector<float> residual;  // empty: no error feedback
};

// Returns "" on success, else what went wrong (deadlock, size mismatch, bad region, codec error).
inline std::string simulateCompressed(const std::vector<algos::Schedule>& schedules,
                                      std::vector<FloatRank>& ranks, int n,
                                      const compress::Codec& codec, uint64_t seed = 1,
                                      SendMode mode = SendMode::Buffered) {
  using algos::Buffer;
  using algos::Step;
  using algos::StepKind;
  auto err = [](int r, uint32_t i, const std::string& what) {
    return "rank " + std::to_string(r) + " step " + std::to_string(i) + ": " + what;
  };
  // Per rank: the five buffers as bytes.
  std::vector<std::vector<std::vector<char>>> mem(n, std::vector<std::vector<char>>(5));
  auto& B = mem;
  for (int r = 0; r < n; ++r) {
    B[r][0].resize(ranks[r].send.size() * 4);
    if (!B[r][0].empty()) std::memcpy(B[r][0].data(), ranks[r].send.data(), B[r][0].size());
    B[r][1].resize(ranks[r].recv.size() * 4);
    if (!B[r][1].empty()) std::memcpy(B[r][1].data(), ranks[r].recv.data(), B[r][1].size());
    B[r][2].assign(schedules[r].scratchCount * 4, 0);
    B[r][3].assign(schedules[r].packedBytes, 0);
    B[r][4].assign(schedules[r].accumCount * 4, 0);
  }
  auto at = [&](int r, const algos::Region& reg) -> char* {
    auto& v = B[r][static_cast<size_t>(reg.buffer)];
    const size_t unit = algos::unitBytes(reg.buffer, 4);
    if ((reg.offset + reg.count) * unit > v.size()) return nullptr;
    static char empty;
    return reg.count == 0 ? &empty : v.data() + reg.offset * unit;
  };
  auto bytes = [](const algos::Region& reg) { return reg.count * algos::unitBytes(reg.buffer, 4); };
  std::vector<std::deque<std::vector<char>>> channel(n * n);
  std::vector<std::vector<uint32_t>> unmet(n), sendQ(n * n), recvQ(n * n);
  std::vector<std::vector<bool>> done(n);
  std::vector<size_t> sendHead(n * n, 0), recvHead(n * n, 0);
  size_t pending = 0;
  for (int r = 0; r < n; ++r) {
    const auto& s = schedules[r];
    unmet[r].resize(s.steps.size());
    done[r].assign(s.steps.size(), false);
    for (uint32_t i = 0; i < s.steps.size(); ++i) {
      const Step& st = s.steps[i];
      unmet[r][i] = st.depCount;
      const bool net = st.kind == StepKind::Send || st.kind == StepKind::Recv || st.kind == StepKind::RecvReduce;
      if (net != (st.peer >= 0) || st.peer >= n) return err(r, i, "bad peer");
      if (st.kind == StepKind::Send) sendQ[r * n + st.peer].push_back(i);
      if (st.kind == StepKind::Recv || st.kind == StepKind::RecvReduce) recvQ[r * n + st.peer].push_back(i);
    }
    pending += s.steps.size();
  }
  auto finish = [&](int r, uint32_t i) {
    done[r][i] = true;
    --pending;
    const auto& s = schedules[r];
    for (uint32_t k = s.dependentsBegin[i]; k < s.dependentsBegin[i + 1]; ++k) --unmet[r][s.dependents[k]];
  };
  // A local step; "" or an error.
  auto runLocal = [&](int r, uint32_t i, const Step& st) -> std::string {
    char* d = at(r, st.dst);
    char* src = at(r, st.src);
    if (!d || !src) return err(r, i, "region out of bounds");
    float* df = reinterpret_cast<float*>(d);
    const float* sf = reinterpret_cast<const float*>(src);
    switch (st.kind) {
      case StepKind::Copy: std::memmove(d, src, bytes(st.dst)); break;
      case StepKind::Reduce: for (size_t e = 0; e < st.dst.count; ++e) df[e] += sf[e]; break;
      case StepKind::FinishAvg: for (size_t e = 0; e < st.dst.count; ++e) df[e] /= static_cast<float>(n); break;
      case StepKind::Encode: {
        float* res = nullptr;
        if (st.feedback && !ranks[r].residual.empty()) {
          if (st.residualOffset + st.elements > ranks[r].residual.size()) return err(r, i, "residual out of bounds");
          res = ranks[r].residual.data() + st.residualOffset;
        }
        if (st.elements != st.src.count) return err(r, i, "encode of a region that is not its elements");
        size_t written = 0;
        Status s = codec.encode(src, st.elements, ncclFloat32, res, seed * 1000003 + i,
                                {reinterpret_cast<std::byte*>(d), st.dst.count}, &written);
        if (!s.ok()) return err(r, i, s.message());
        break;
      }
      case StepKind::DecodeAccumulate:
      case StepKind::Decode: {
        if (st.elements != st.dst.count) return err(r, i, "decode into a region that is not its elements");
        std::span<const std::byte> in{reinterpret_cast<const std::byte*>(src), st.src.count};
        Status s = st.kind == StepKind::Decode ? codec.decode(in, st.elements, ncclFloat32, d)
                                               : codec.decodeAccumulate(in, st.elements, df);
        if (!s.ok()) return err(r, i, s.message());
        break;
      }
      default: return err(r, i, "not a local step");
    }
    return "";
  };
  while (pending > 0) {
    bool moved = false;
    for (int r = 0; r < n; ++r) {
      const auto& s = schedules[r];
      for (uint32_t i = 0; i < s.steps.size(); ++i) {
        const Step& st = s.steps[i];
        if (done[r][i] || unmet[r][i] != 0) continue;
        if (st.peer < 0) {
          std::string e = runLocal(r, i, st);
          if (!e.empty()) return e;
          finish(r, i);
          moved = true;
        } else if (st.kind == StepKind::Send) {
          if (mode == SendMode::Rendezvous) continue;  // completed by its receive, below
          const size_t q = r * n + st.peer;
          if (sendQ[q][sendHead[q]] != i) continue;
          char* src = at(r, st.src);
          if (!src) return err(r, i, "send region out of bounds");
          channel[q].emplace_back(src, src + bytes(st.src));
          sendHead[q]++;
          finish(r, i);
          moved = true;
        } else {
          const size_t q = st.peer * n + r, mine = r * n + st.peer;
          if (recvQ[mine][recvHead[mine]] != i) continue;
          if (mode == SendMode::Rendezvous && channel[q].empty()) {
            const int from = st.peer;
            if (sendHead[q] >= sendQ[q].size()) continue;
            const uint32_t j = sendQ[q][sendHead[q]];
            if (unmet[from][j] != 0) continue;
            const Step& sst = schedules[from].steps[j];
            char* src = at(from, sst.src);
            if (!src) return err(from, j, "send region out of bounds");
            channel[q].emplace_back(src, src + bytes(sst.src));
            sendHead[q]++;
            finish(from, j);
          }
          if (channel[q].empty()) continue;
          std::vector<char> msg = std::move(channel[q].front());
          channel[q].pop_front();
          if (msg.size() != bytes(st.dst))
            return err(r, i, "received " + std::to_string(msg.size()) + " bytes, expected " +
                                 std::to_string(bytes(st.dst)));
          char* d = at(r, st.dst);
          if (!d) return err(r, i, "recv region out of bounds");
          if (st.kind == StepKind::Recv) {
            std::memcpy(d, msg.data(), msg.size());
          } else {
            const float* sf = reinterpret_cast<const float*>(at(r, st.src));
            const float* mf = reinterpret_cast<const float*>(msg.data());
            float* df = reinterpret_cast<float*>(d);
            for (size_t e = 0; e < st.dst.count; ++e) df[e] = sf[e] + mf[e];
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
  for (int r = 0; r < n; ++r) {
    if (!B[r][0].empty()) std::memcpy(ranks[r].send.data(), B[r][0].data(), B[r][0].size());
    if (!B[r][1].empty()) std::memcpy(ranks[r].recv.data(), B[r][1].data(), B[r][1].size());
  }
  return "";
}

}  // namespace braid::testing
