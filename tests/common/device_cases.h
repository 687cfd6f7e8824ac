// One collective call per rank on buffers that stand for device memory, for the tests of the
// device paths (stream_proxy_test, ipc_path_test): every collective in NCCL's layouts, in and out
// of place, a ring of sends and receives in one group, the input each rank writes and the output
// each must end with.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/exec/executor.h"
#include "core/plan/plan.h"

namespace braid::testing {

inline float caseValue(int rank, size_t i) { return float(rank * 1000 + int(i % 997)); }

struct DeviceCase {
  const char* name;
  algos::Collective coll;
  bool inPlace;
  int root = -1;
  int pinned = 0;  // 1: sendbuff, 2: recvbuff, 3: both stand for pinned host memory (no staging)
};

// The plan for `call` as the device paths receive it: stream-ordered, on `stream`.
inline Plan devicePlan(ncclComm* comm, const Call& call, const ResolvedOp& op, const void* send,
                       void* recv, cudaStream_t stream, Status* st) {
  Plan plan;
  *st = makePlan(comm, call, op, send, recv, &plan);
  const device::Buffers b = extents(comm, call, send, recv);
  plan.onDevice = true;
  plan.stream = stream;
  plan.sendBytes = b.sendBytes;
  plan.recvBytes = b.recvBytes;
  return plan;
}

// Rank `rank`'s buffers and calls for `c` with `n` elements per block.
class CaseRank {
 public:
  CaseRank(const DeviceCase& c, int rank, int nranks, size_t n)
      : c_(c), rank_(rank), nranks_(nranks), n_(n) {
    using algos::Collective;
    const size_t all = n * size_t(nranks);
    root_ = c.root < 0 ? -1 : c.root % nranks;
    sendBuf_.assign(all + 64, -1.0f);
    recvBuf_.assign(all + 64, -1.0f);
    send_ = sendBuf_.data();
    recv_ = recvBuf_.data();
    sendCount_ = recvCount_ = n;
    call_ = Call{c.coll, n, ncclFloat32};
    switch (c.coll) {
      case Collective::AllReduce:
      case Collective::Reduce: call_.reduces = true; break;
      case Collective::AllGather:
      case Collective::Gather: recvCount_ = all; break;
      case Collective::ReduceScatter:
        sendCount_ = all;
        call_.reduces = true;
        break;
      case Collective::AlltoAll: sendCount_ = recvCount_ = all; break;
      case Collective::Scatter: sendCount_ = all; break;
      default: break;
    }
    call_.root = root_;
    call_.inputCount = sendCount_;
    if (c.inPlace) {
      // NCCL's in-place layouts, in one buffer.
      recv_ = sendBuf_.data();
      if (c.coll == Collective::AllGather)
        send_ = recv_ + size_t(rank) * n;
      else if (c.coll == Collective::ReduceScatter)
        recv_ = send_ + size_t(rank) * n;
      else
        send_ = recv_;
      call_.inPlace = true;
    }
  }

  // The calls this rank makes (a Send and a Recv in one group for the ring), with their buffers.
  struct Made {
    Call call;
    const void* send;
    void* recv;
  };
  std::vector<Made> calls() const {
    if (c_.coll != algos::Collective::Send) return {{call_, send_, recv_}};
    Call s{algos::Collective::Send, n_, ncclFloat32}, v{algos::Collective::Recv, n_, ncclFloat32};
    s.root = (rank_ + 1) % nranks_;
    v.root = (rank_ + nranks_ - 1) % nranks_;
    return {{s, send_, nullptr}, {v, nullptr, recv_}};
  }
  // Writes this rank's input (the tests run it as a "kernel" on the stream, before the call).
  void writeInput() {
    for (size_t i = 0; i < sendCount_; ++i) send_[i] = caseValue(rank_, i);
  }
  // "" when the output is what the collective makes, else the first element that is not.
  std::string check() const {
    using algos::Collective;
    const size_t n = n_;
    for (size_t i = 0; i < recvCount_; ++i) {
      float want = 0;
      bool checked = true;
      switch (c_.coll) {
        case Collective::AllReduce:
          for (int q = 0; q < nranks_; ++q) want += caseValue(q, i);
          break;
        case Collective::Broadcast: want = caseValue(root_, i); break;
        case Collective::Reduce:
          checked = rank_ == root_;
          for (int q = 0; q < nranks_; ++q) want += caseValue(q, i);
          break;
        case Collective::AllGather: want = caseValue(int(i / n), i % n); break;
        case Collective::ReduceScatter:
          for (int q = 0; q < nranks_; ++q) want += caseValue(q, size_t(rank_) * n + i);
          break;
        case Collective::AlltoAll: want = caseValue(int(i / n), size_t(rank_) * n + i % n); break;
        case Collective::Gather:
          checked = rank_ == root_;
          want = caseValue(int(i / n), i % n);
          break;
        case Collective::Scatter: want = caseValue(root_, size_t(rank_) * n + i); break;
        case Collective::Send: want = caseValue((rank_ + nranks_ - 1) % nranks_, i); break;
        default: break;
      }
      if (checked && recv_[i] != want)
        return "element " + std::to_string(i) + " is " + std::to_string(recv_[i]) + ", want " +
               std::to_string(want);
    }
    return "";
  }

 private:
  DeviceCase c_;
  int rank_, nranks_, root_ = -1;
  size_t n_, sendCount_ = 0, recvCount_ = 0;
  std::vector<float> sendBuf_, recvBuf_;
  float* send_ = nullptr;
  float* recv_ = nullptr;
  Call call_{algos::Collective::AllReduce, 0, ncclFloat32};
};

// The cases every device path runs.
inline const std::vector<DeviceCase>& deviceCases() {
  using algos::Collective;
  static const std::vector<DeviceCase> cases = {
      {"AllReduce", Collective::AllReduce, false},
      {"AllReduce in place", Collective::AllReduce, true},
      {"Broadcast", Collective::Broadcast, false, 1},
      {"Broadcast in place", Collective::Broadcast, true, 1},
      {"Reduce", Collective::Reduce, false, 0},
      {"Reduce in place", Collective::Reduce, true, 1},
      {"AllGather", Collective::AllGather, false},
      {"AllGather in place", Collective::AllGather, true},
      {"ReduceScatter", Collective::ReduceScatter, false},
      {"ReduceScatter in place", Collective::ReduceScatter, true},
      {"AlltoAll", Collective::AlltoAll, false},
      {"AlltoAll in place", Collective::AlltoAll, true},
      {"Gather", Collective::Gather, false, 1},
      {"Scatter", Collective::Scatter, false, 0},
      {"Send/Recv ring", Collective::Send, false},
      {"AllReduce, pinned host buffers", Collective::AllReduce, false, -1, 3},
      {"AllReduce, pinned sendbuff", Collective::AllReduce, false, -1, 1},
      {"AllReduce, pinned recvbuff", Collective::AllReduce, false, -1, 2},
      {"AllReduce in place, pinned", Collective::AllReduce, true, -1, 3},
      {"Broadcast in place, pinned", Collective::Broadcast, true, 1, 3},
      {"AllGather in place, pinned", Collective::AllGather, true, -1, 3},
      {"Send/Recv ring, pinned", Collective::Send, false, -1, 3},
  };
  return cases;
}

}  // namespace braid::testing
