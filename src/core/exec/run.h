// One execution of the executor (executor.h): the plans of a call or group, the queue of
// operations per (communicator, peer), and the loop that posts and retires them. Its members are
// defined by concern, each file readable on its own:
//   run.cc          set-up, replay, the loop, posting and retiring operations;
//   handshake.h/.cc the signatures ranks exchange to catch mismatched calls (and the small data
//                   they carry);
//   group_local.cc  what a group needs before anything moves: sends to self, snapshots of sends a
//                   receive of the same group overwrites, PreMulSum's scaled input;
//   idle.h          the wait policy: spinning, yielding, sleeping and the periodic checks.
// A thread keeps its Run between calls so that the vectors keep their capacity: a small
// collective then allocates nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <chrono>
#include "base/waiter.h"
#include "core/comm/peer_loss.h"

#include "core/exec/executor.h"
#include "core/exec/idle.h"
#include "core/exec/queues.h"
#include "transport/wait.h"

namespace braid::exec {

class Run {
 public:
  Status go(std::span<Plan> plans, const Options& options);

 private:
  struct PlanState {
    std::vector<uint32_t> unmet;
    std::vector<ReduceSink> sinks;
    std::vector<char> scratchOwner;
    std::vector<char> packed;  // compressed messages (Buffer::Packed)
    std::vector<float> accum;  // fp32 sums (Buffer::Accum)
    size_t typeSize = 0;
    bool largeOutput = false;  // the call's own data exceeds kStreamOutputBytes
    char* scratch = nullptr;
    bool done = false;  // finished during set-up (a send to self)
  };

  // run.cc
  Status setUp();
  bool canReplay() const;
  void replay();
  Status loop();
  Status pump(ChannelQueue& q, bool* moved);
  bool postRecvs(ChannelQueue& q, Status* st);
  Status postSend(ChannelQueue& q, StepRef ref, bool* inlined);
  Status postRecv(ChannelQueue& q, StepRef ref);
  bool streamed(StepRef ref) const;
  ChannelQueue* queueFor(ncclComm* comm, int peer);
  void complete(StepRef ref);
  Status runLocal(StepRef ref);
  bool sleep();
  bool onlySignaturesLeft(const ChannelQueue& q) const;
  Status periodicChecks();
  // Timed runs: ns since the run started; the end of a wait in which nothing moved, charged to
  // the connections that had operations in flight; and each connection's figures at the end
  // (core/comm/link_stats.h).
  int64_t sinceStart() const;
  void startStall();
  void endStall();
  void recordLinks(int64_t endNs);
  Status failed(const Plan& plan, const Status& status);
  void abandon(ncclResult_t code);

  // After a timeout: the peers this run waits on, on which host, and for what.
  std::string awaited(const ncclComm* comm, std::vector<int>* ranks) const;
  // Where comm's messages of this run stand, for a loss report (core/comm/peer_loss.h).
  loss::Progress progress(const ncclComm* comm) const;
  // A failure that involves peers: every rank is told whom this rank awaited (with `diagnosis`,
  // or the status's text), and the message is completed with the ranks that went silent
  // (core/comm/peer_loss.h).
  Status lostPeers(const Plan& plan, const Status& status, std::vector<int> awaited,
                   const std::string& diagnosis = {});

  // handshake.h (inline: on every small call's path) and handshake.cc
  Status addSignatures(uint32_t plan);
  Status announceReceives();
  void addSignature(ChannelQueue& q, uint32_t plan, bool sends, bool receives,
                    bool announcement = false);
  bool readyToSend(const ChannelQueue& q, size_t k) const;
  Status checkSignature(const ChannelQueue& q, StepRef ref) const;
  bool inlineCandidate(const std::vector<StepRef>& refs, size_t k) const;
  const SignatureSlot* inlineCarrier(const ChannelQueue& q, size_t k) const;
  bool packSignature(ChannelQueue& q, SignatureSlot& slot);
  Status takeInline(const SignatureSlot& slot, StepRef ref);

  // group_local.cc
  void scaleInput(Plan& plan);
  void snapshotOverlappingSends();
  Status sendToSelf();

  char* address(uint32_t plan, const algos::Region& r) const {
    const Plan& p = plans_[plan];
    const PlanState& s = state_[plan];
    switch (r.buffer) {
      case algos::Buffer::Send:
        return const_cast<char*>(static_cast<const char*>(p.sendbuff)) + r.offset * s.typeSize;
      case algos::Buffer::Recv: return static_cast<char*>(p.recvbuff) + r.offset * s.typeSize;
      case algos::Buffer::Scratch: return s.scratch + r.offset * s.typeSize;
      case algos::Buffer::Packed: return const_cast<char*>(s.packed.data()) + r.offset;
      case algos::Buffer::Accum:
        return reinterpret_cast<char*>(const_cast<float*>(s.accum.data()) + r.offset);
    }
    return nullptr;
  }
  size_t bytesOf(uint32_t plan, const algos::Region& r) const {
    return r.count * algos::unitBytes(r.buffer, state_[plan].typeSize);
  }
  const algos::Step& stepOf(StepRef ref) const {
    return plans_[ref.plan].schedule->steps[ref.step];
  }
  bool ready(StepRef ref) const {
    if (ref.step >= kSignature) return true;
    if (state_[ref.plan].unmet[ref.step] != 0) return false;
    return !gated_ || gateOpen(ref);
  }
  // Plan::gate, in runs that have one (gated_): whether ref's memory is in place; the local steps
  // it held back that now may run; whether some gate may open without any message moving (the
  // run then must not sleep).
  bool gateOpen(StepRef ref) const;
  void releaseGated();
  bool gatesWaiting() const;

  std::span<Plan> plans_;
  std::vector<PlanState> state_;      // [0, plans_.size()) in use
  std::vector<ChannelQueue> queues_;  // [0, nQueues_) in use
  size_t nQueues_ = 0;
  std::vector<StepRef> localReady_;
  std::vector<StepRef> localGated_;  // local steps whose dependencies are met, not their gate
  bool gated_ = false;               // some plan has a gate (Plan::gate)
  std::vector<Waiter> waiters_;
  uint32_t spinRounds_ = 0;
  const std::atomic<uint32_t>* holdWhile_ = nullptr;  // Options::holdWhile
  bool background_ = false;                           // Options::background
  size_t pending_ = 0;
  bool timing_ = false;  // a timed run (see timed() in run.cc)
  struct FirstArrival {  // recordLinks: a communicator's earliest first arrival in this run
    const ncclComm* comm;
    int64_t earliest;
    int receiving;  // its peers that sent
  };
  std::vector<FirstArrival> firsts_;
  std::chrono::steady_clock::time_point start_{}, stallSince_{};
  IdlePolicy idle_;
  transport::WaitSet wakeups_;  // armed for a sleep on doorbells; cleared once anything moves

  // A kept plan (Plan::keptId) that ran alone and succeeded as this Run's last execution: its
  // queues are still set up, and a repeat only resets them (replay()). 0: none.
  uint64_t replayId_ = 0;
  std::vector<uint32_t> replayUnmet_;  // the plan's dependency counts before it starts
  std::vector<StepRef> replayLocal_;   // its local steps ready at the start
  size_t replayPending_ = 0;
};

}  // namespace braid::exec
