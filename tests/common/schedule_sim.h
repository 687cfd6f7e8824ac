// Runs every rank's schedule in memory, so algorithms are tested without any transport: data
// movement, dependencies and the matching of sends to receives. One engine moves bytes: each
// rank's five buffers (algos::Buffer) are byte arrays, messages are the bytes of a send's
// region, the k-th send of a rank to a peer meets that peer's k-th receive from it (FIFO per
// pair, as the transports match them). What the bytes mean is the arithmetic's business
// (SimArithmetic): the exact int64 sum of plain schedules (simulate), or the fp32 data, the
// Packed codec messages and the Accum accumulator of compressed schedules with the real codecs
// (simulateCompressed).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "algos/schedule.h"
#include "compress/codec.h"

namespace braid::testing {

// When a send completes. Buffered: at once (a small message the transport copies). Rendezvous:
// only together with its matching receive, once that is ready too (a large message the receiver
// copies out of the sender's buffer): a schedule whose receive waits on a send to the same
// peer's own waiting receive deadlocks here, as it would on a real transport.
enum class SendMode { Buffered, Rendezvous };

// One rank's memory: the buffers of algos::Buffer, indexed by it, as bytes.
using SimMemory = std::array<std::vector<std::byte>, 5>;

// What the bytes mean. Regions of Send, Recv and Scratch count elements of typeSize() bytes
// (Packed bytes, Accum fp32, algos::unitBytes); the engine hands over regions it checked are in
// bounds.
class SimArithmetic {
 public:
  virtual ~SimArithmetic() = default;
  virtual size_t typeSize() const = 0;
  // "" when this arithmetic can run steps of this kind, else why not (checked before any runs).
  virtual std::string refuses(algos::StepKind kind) const = 0;
  // A local step (Copy, Reduce, FinishAvg, Encode, Decode, DecodeAccumulate) of `rank`, the
  // schedule's step `index`: "" or what went wrong.
  virtual std::string local(int rank, uint32_t index, const algos::Step& st, std::byte* dst,
                            const std::byte* src) const = 0;
  // RecvReduce: dst = src OP incoming, dst.count elements.
  virtual void reduceIncoming(const algos::Step& st, std::byte* dst, const std::byte* src,
                              const std::byte* incoming) const = 0;
};

// Runs schedules[r] on memory[r] for every rank r. The caller fills each rank's Send and Recv
// (a buffer NCCL does not give a rank stays empty, so touching it is out of bounds); Scratch,
// Packed and Accum are sized from the schedule and zeroed. Returns "" on success, else what went
// wrong (bad peer, region out of bounds, size mismatch, deadlock, unreceived messages, or the
// arithmetic's error).
inline std::string runSchedules(const std::vector<algos::Schedule>& schedules,
                                std::vector<SimMemory>& memory, const SimArithmetic& arith,
                                SendMode mode) {
  using algos::StepKind;
  const int n = static_cast<int>(schedules.size());
  if (memory.size() != schedules.size()) return "one memory per schedule";
  auto err = [](int r, uint32_t i, const std::string& what) {
    return "rank " + std::to_string(r) + " step " + std::to_string(i) + ": " + what;
  };
  auto isNet = [](StepKind k) {
    return k == StepKind::Send || k == StepKind::Recv || k == StepKind::RecvReduce;
  };
  auto bytes = [&](const algos::Region& reg) {
    return reg.count * algos::unitBytes(reg.buffer, arith.typeSize());
  };
  // The region's bytes, or null when it does not fit its buffer.
  auto at = [&](int r, const algos::Region& reg) -> std::byte* {
    std::vector<std::byte>& v = memory[r][static_cast<size_t>(reg.buffer)];
    const size_t unit = algos::unitBytes(reg.buffer, arith.typeSize());
    if ((reg.offset + reg.count) * unit > v.size()) return nullptr;
    static std::byte empty;
    return reg.count == 0 ? &empty : v.data() + reg.offset * unit;
  };

  const size_t pairs = static_cast<size_t>(n) * n;  // [from * n + to]
  std::vector<std::vector<uint32_t>> unmet(n), sendQ(pairs), recvQ(pairs);
  std::vector<std::vector<bool>> done(n);
  std::vector<size_t> sendHead(pairs, 0), recvHead(pairs, 0);
  std::vector<std::deque<std::vector<std::byte>>> channel(pairs);
  std::vector<std::pair<int, uint32_t>> work;  // steps that may be able to run now
  size_t pending = 0;
  for (int r = 0; r < n; ++r) {
    const algos::Schedule& s = schedules[r];
    memory[r][static_cast<size_t>(algos::Buffer::Scratch)].assign(s.scratchCount * arith.typeSize(),
                                                                  std::byte{0});
    memory[r][static_cast<size_t>(algos::Buffer::Packed)].assign(s.packedBytes, std::byte{0});
    memory[r][static_cast<size_t>(algos::Buffer::Accum)].assign(s.accumCount * 4, std::byte{0});
    unmet[r].resize(s.steps.size());
    done[r].assign(s.steps.size(), false);
    for (uint32_t i = 0; i < s.steps.size(); ++i) {
      const algos::Step& st = s.steps[i];
      if (std::string why = arith.refuses(st.kind); !why.empty()) return err(r, i, why);
      if (isNet(st.kind) != (st.peer >= 0) || st.peer >= n) return err(r, i, "bad peer");
      unmet[r][i] = st.depCount;
      if (st.depCount == 0) work.emplace_back(r, i);
      if (st.kind == StepKind::Send) sendQ[r * n + st.peer].push_back(i);
      if (st.kind == StepKind::Recv || st.kind == StepKind::RecvReduce)
        recvQ[r * n + st.peer].push_back(i);
    }
    pending += s.steps.size();
  }
  auto head = [&](size_t q, const std::vector<std::vector<uint32_t>>& queues,
                  const std::vector<size_t>& heads, int rank) {
    if (heads[q] < queues[q].size()) work.emplace_back(rank, queues[q][heads[q]]);
  };
  auto finish = [&](int r, uint32_t i) {
    done[r][i] = true;
    --pending;
    const algos::Schedule& s = schedules[r];
    for (uint32_t k = s.dependentsBegin[i]; k < s.dependentsBegin[i + 1]; ++k)
      if (--unmet[r][s.dependents[k]] == 0) work.emplace_back(r, s.dependents[k]);
  };

  while (!work.empty()) {
    const auto [r, i] = work.back();
    work.pop_back();
    if (done[r][i] || unmet[r][i] != 0) continue;
    const algos::Step& st = schedules[r].steps[i];
    if (st.peer < 0) {
      std::byte* d = at(r, st.dst);
      std::byte* src = at(r, st.src);
      if (!d || !src) return err(r, i, "region out of bounds");
      if (std::string e = arith.local(r, i, st, d, src); !e.empty()) return e;
      finish(r, i);
    } else if (st.kind == StepKind::Send) {
      const size_t q = r * n + st.peer, theirs = st.peer * n + r;  // our sends, the peer's receives
      if (sendQ[q][sendHead[q]] != i) continue;  // FIFO: earlier sends to this peer first
      if (mode == SendMode::Rendezvous) {        // completed by its receive, below
        head(theirs, recvQ, recvHead, st.peer);
        continue;
      }
      const std::byte* src = at(r, st.src);
      if (!src) return err(r, i, "send region out of bounds");
      channel[q].emplace_back(src, src + bytes(st.src));
      ++sendHead[q];
      finish(r, i);
      head(q, sendQ, sendHead, r);
      head(theirs, recvQ, recvHead, st.peer);
    } else {
      const size_t mine = r * n + st.peer, q = st.peer * n + r;  // our receives, the peer's sends
      if (recvQ[mine][recvHead[mine]] != i) continue;
      std::vector<std::byte> buffered;
      std::span<const std::byte> msg;
      if (mode == SendMode::Buffered) {
        if (channel[q].empty()) continue;
        buffered = std::move(channel[q].front());
        channel[q].pop_front();
        msg = buffered;
      } else {
        if (sendHead[q] >= sendQ[q].size()) continue;
        const uint32_t j = sendQ[q][sendHead[q]];
        if (unmet[st.peer][j] != 0) continue;  // its send is not ready: it will try us again
        const algos::Step& sst = schedules[st.peer].steps[j];
        const std::byte* src = at(st.peer, sst.src);
        if (!src) return err(st.peer, j, "send region out of bounds");
        msg = {src, bytes(sst.src)};
        ++sendHead[q];
        finish(st.peer, j);
        head(q, sendQ, sendHead, st.peer);
      }
      if (msg.size() != bytes(st.dst))
        return err(r, i,
                   "received " + std::to_string(msg.size()) + " bytes, expected " +
                       std::to_string(bytes(st.dst)));
      std::byte* d = at(r, st.dst);
      if (!d) return err(r, i, "recv region out of bounds");
      if (st.kind == StepKind::Recv) {
        if (!msg.empty()) std::memcpy(d, msg.data(), msg.size());
      } else {
        const std::byte* src = at(r, st.src);
        if (!src || st.src.count != st.dst.count) return err(r, i, "reduce source out of bounds");
        arith.reduceIncoming(st, d, src, msg.data());
      }
      ++recvHead[mine];
      finish(r, i);
      head(mine, recvQ, recvHead, r);
    }
  }
  if (pending > 0) return "deadlock: " + std::to_string(pending) + " steps cannot run";
  for (size_t q = 0; q < channel.size(); ++q)
    if (!channel[q].empty())
      return "unreceived messages from rank " + std::to_string(q / n) + " to rank " +
             std::to_string(q % n);
  return "";
}

// Element access over the bytes (no alignment or aliasing assumptions).
template <typename T>
T load(const std::byte* p, size_t e) {
  T v;
  std::memcpy(&v, p + e * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void store(std::byte* p, size_t e, T v) {
  std::memcpy(p + e * sizeof(T), &v, sizeof(T));
}

// The arithmetic both kinds of schedule share: elements of T, summed; Avg divides by nranks.
template <typename T>
class SumArithmetic : public SimArithmetic {
 public:
  explicit SumArithmetic(int nranks) : nranks_(nranks) {}
  size_t typeSize() const override { return sizeof(T); }
  std::string local(int rank, uint32_t index, const algos::Step& st, std::byte* d,
                    const std::byte* src) const override {
    using algos::StepKind;
    const size_t count = st.dst.count;
    switch (st.kind) {
      case StepKind::Copy:
        if (st.src.count != count) return where(rank, index) + "copy of a region of another size";
        std::memmove(d, src, count * sizeof(T));  // fp32 Accum to fp32 data is a plain copy too
        return "";
      case StepKind::Reduce:
        if (st.src.count != count) return where(rank, index) + "reduce of a region of another size";
        for (size_t e = 0; e < count; ++e) store<T>(d, e, load<T>(d, e) + load<T>(src, e));
        return "";
      case StepKind::FinishAvg:
        for (size_t e = 0; e < count; ++e) store<T>(d, e, load<T>(d, e) / static_cast<T>(nranks_));
        return "";
      default: return codec(rank, index, st, d, src);
    }
  }
  void reduceIncoming(const algos::Step& st, std::byte* d, const std::byte* src,
                      const std::byte* incoming) const override {
    for (size_t e = 0; e < st.dst.count; ++e)
      store<T>(d, e, load<T>(src, e) + load<T>(incoming, e));
  }

 protected:
  static std::string where(int rank, uint32_t index) {
    return "rank " + std::to_string(rank) + " step " + std::to_string(index) + ": ";
  }
  // Encode, Decode, DecodeAccumulate.
  virtual std::string codec(int rank, uint32_t index, const algos::Step& st, std::byte* d,
                            const std::byte* src) const = 0;
  int nranks_;
};

// Plain schedules: int64 elements, summed exactly (enough to see every element's provenance).
struct SimRank {
  std::vector<int64_t> send, recv;
};

class ExactArithmetic final : public SumArithmetic<int64_t> {
 public:
  using SumArithmetic::SumArithmetic;
  std::string refuses(algos::StepKind kind) const override {
    const bool codecStep = kind == algos::StepKind::Encode || kind == algos::StepKind::Decode ||
                           kind == algos::StepKind::DecodeAccumulate;
    return codecStep ? "a codec step (use simulateCompressed)" : "";
  }

 private:
  std::string codec(int rank, uint32_t index, const algos::Step&, std::byte*,
                    const std::byte*) const override {
    return where(rank, index) + "a codec step";
  }
};

template <typename T>
void toBytes(const std::vector<T>& v, std::vector<std::byte>& out) {
  out.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
}
template <typename T>
void fromBytes(const std::vector<std::byte>& in, std::vector<T>& v) {
  if (!v.empty()) std::memcpy(v.data(), in.data(), v.size() * sizeof(T));
}

// Runs the schedules on ranks[r].send and .recv (elements of the arithmetic's type) and, on
// success, writes both back.
template <typename Rank>
std::string simulateOn(const std::vector<algos::Schedule>& schedules, std::vector<Rank>& ranks,
                       const SimArithmetic& arith, SendMode mode) {
  std::vector<SimMemory> memory(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    toBytes(ranks[r].send, memory[r][static_cast<size_t>(algos::Buffer::Send)]);
    toBytes(ranks[r].recv, memory[r][static_cast<size_t>(algos::Buffer::Recv)]);
  }
  std::string error = runSchedules(schedules, memory, arith, mode);
  for (size_t r = 0; r < ranks.size() && error.empty(); ++r) {
    fromBytes(memory[r][static_cast<size_t>(algos::Buffer::Send)], ranks[r].send);
    fromBytes(memory[r][static_cast<size_t>(algos::Buffer::Recv)], ranks[r].recv);
  }
  return error;
}

// Plain schedules, one per rank of `ranks`: "" on success, else what went wrong.
inline std::string simulate(const std::vector<algos::Schedule>& schedules,
                            std::vector<SimRank>& ranks, SendMode mode = SendMode::Buffered) {
  return simulateOn(schedules, ranks, ExactArithmetic(static_cast<int>(ranks.size())), mode);
}

// Compressed schedules: fp32 data (Send, Recv, Scratch), codec messages (Packed) and an fp32
// accumulator (Accum), the real codec for Encode / DecodeAccumulate / Decode. Each rank may carry
// an error-feedback residual the size of its input.
struct FloatRank {
  std::vector<float> send, recv;
  std::vector<float> residual;  // empty: no error feedback
};

class CodecArithmetic final : public SumArithmetic<float> {
 public:
  CodecArithmetic(int nranks, const compress::Codec& codec, uint64_t seed,
                  std::vector<FloatRank>& ranks)
      : SumArithmetic(nranks), codec_(codec), seed_(seed), ranks_(ranks) {}
  std::string refuses(algos::StepKind) const override { return ""; }

 private:
  std::string codec(int rank, uint32_t index, const algos::Step& st, std::byte* d,
                    const std::byte* src) const override {
    using algos::StepKind;
    if (st.kind == StepKind::Encode) {
      std::vector<float>& residual = ranks_[rank].residual;
      float* res = nullptr;
      if (st.feedback && !residual.empty()) {
        if (st.residualOffset + st.elements > residual.size())
          return where(rank, index) + "residual out of bounds";
        res = residual.data() + st.residualOffset;
      }
      if (st.elements != st.src.count)
        return where(rank, index) + "encode of a region that is not its elements";
      size_t written = 0;
      Status s = codec_.encode(src, st.elements, ncclFloat32, res, seed_ * 1000003 + index,
                               {d, st.dst.count}, &written);
      return s.ok() ? "" : where(rank, index) + s.message();
    }
    if (st.kind != StepKind::Decode && st.kind != StepKind::DecodeAccumulate)
      return where(rank, index) + "not a local step";
    if (st.elements != st.dst.count)
      return where(rank, index) + "decode into a region that is not its elements";
    std::span<const std::byte> in{src, st.src.count};
    // Accum is fp32, and the data here is too: decoding straight into the bytes is exact.
    Status s = st.kind == StepKind::Decode
                   ? codec_.decode(in, st.elements, ncclFloat32, d)
                   : codec_.decodeAccumulate(in, st.elements, reinterpret_cast<float*>(d));
    return s.ok() ? "" : where(rank, index) + s.message();
  }

  const compress::Codec& codec_;
  uint64_t seed_;
  std::vector<FloatRank>& ranks_;
};

// Compressed schedules, one per rank of `ranks` (fp32): "" on success, else what went wrong.
// `seed` seeds the codec's stochastic rounding (per step).
inline std::string simulateCompressed(const std::vector<algos::Schedule>& schedules,
                                      std::vector<FloatRank>& ranks, const compress::Codec& codec,
                                      uint64_t seed = 1, SendMode mode = SendMode::Buffered) {
  return simulateOn(schedules, ranks,
                    CodecArithmetic(static_cast<int>(ranks.size()), codec, seed, ranks), mode);
}

}  // namespace braid::testing
