// The operation simulator's input (operation_cost.cc): one operation's schedules compiled into
// the flat records the event loop reads, for every rank or for one block of symmetric ranks
// (OperationOptions::symmetry). Internal to algos: only operation_cost.cc includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "algos/operation_cost.h"
#include "algos/schedule.h"
#include "algos/topology.h"

namespace braid::algos {

// One operation's schedules reduced to what the simulation reads, for the ranks it simulates
// (every rank, or one block of them: OperationOptions::symmetry). Steps are numbered across
// those ranks; a message is a pair's: from a simulated rank to any rank, matched in order.
struct Compiled {
  // A step as the simulation reads and updates it, in 32 bytes: at thousands of ranks the event
  // loop visits millions of steps in no useful order, and a step's fields in one cache line cost
  // one miss where an array per field cost one each (launch's loads were its hot spots).
  struct Step {
    // Messages: their bytes. Copies, reductions and codec steps: their duration in
    // microseconds. Receives: the bytes, which a RecvReduce reduces after arrival.
    double value = 0;
    double readyAt = 0;            // simulation: when its last dependency completed
    uint32_t dependentsBegin = 0;  // its dependents: [dependentsBegin, the next step's)
    // Sends: their pair. Receives: their message (Compiled::messages), or kNoMessage
    // where the pair sends fewer messages than it receives.
    uint32_t link = 0;
    uint32_t unmet = 0;            // simulation: dependencies not met, kReady once it ran
    uint32_t depCountAndKind = 0;  // dependencies in the low 24 bits, the StepKind in the top 8

    uint32_t depCount() const { return depCountAndKind & kMaxDeps; }
    StepKind kind() const { return static_cast<StepKind>(depCountAndKind >> 24); }
    bool ready() const { return unmet == kReady; }
  };
  static constexpr uint32_t kMaxDeps = (1u << 24) - 1;
  static constexpr uint32_t kNoMessage = UINT32_MAX;
  static constexpr uint32_t kReady = UINT32_MAX;

  int n = 0;                     // ranks in the operation
  int period = 0;                // ranks simulated: 0 .. period - 1 (n: all)
  bool xorBlocks = false;        // blocks are related by XOR, not by a shift (BlockMap)
  bool approximate = false;      // the blocks' dependencies differ (approximateSymmetry)
  std::vector<size_t> rankBase;  // rank r's steps are [rankBase[r], rankBase[r + 1])
  // Every simulated step, and one more whose dependentsBegin ends the last step's dependents.
  std::vector<Step> steps;
  std::vector<uint32_t> dependents;
  std::vector<uint32_t> roots;  // steps that wait for nothing
  // A pair's fields and the simulation's state of its connection in one cache line: a launch
  // reads and updates them together, and at thousands of ranks each is a miss.
  struct alignas(64) Pair {
    int from, to, receiver;   // receiver: the simulated rank that stands for `to`
    int level;                // Topology::commonLevel(from, to)
    uint32_t sends = 0;       // its messages: [firstMessage, firstMessage + sends)
    uint32_t recvs = 0;       // the receives matched to them, in order
    size_t firstMessage = 0;  // in `messages`
    // Simulation: when its last message has left, how many it has sent, whether a resume event
    // is queued (OperationSim::launch), and the next message's send and receive steps (copied
    // here from `messages`, whose record would be one more miss per launch).
    double linkFree = 0;
    uint32_t launched = 0;
    uint32_t headSend = 0, headRecv = 0;
    bool resumePending = false;
  };
  std::vector<Pair> pairs;
  // A message: its send step, its receive step (kNoMessage where the pair receives fewer),
  // and (simulation) when it arrives, negative until it is sent.
  struct Message {
    uint32_t send, recv;
    double arrival;
  };
  std::vector<Message> messages;
  // Ports: per level, per group, the port class it shares a timeline with (itself, or its
  // images under the shift) and how many blocks' messages each booking stands for.
  std::vector<std::vector<int>> portClass, classGroup;
  std::vector<std::vector<double>> classWeight;
  std::vector<double> hostTraffic, hostFootprint;  // the memory bound's inputs, per host
  double loneSignatureUs = 0;                      // CPU work of signatures sent alone

  size_t stepCount() const { return steps.size() - 1; }
  int simulated() const { return period; }
  // The simulated rank that stands for `rank`.
  int standIn(int rank) const { return rank % period; }
  // `rank` moved as far as `peer` is from its stand-in, backwards: the message from `peer` to
  // `rank` is the message from peer's stand-in to this rank.
  int backFrom(int rank, int peer) const {
    const int k = peer - peer % period;  // the block map that takes the stand-in to `peer`
    return xorBlocks ? rank ^ k : (rank - k + n) % n;
  }
};

// The compiled schedules of every rank, or of one block when a period is found and checked
// (OperationOptions::symmetry). Null when a schedule is too large to number, or the simulated
// ranks' steps exceed options.maxSteps (then *overBudget is set).
std::unique_ptr<Compiled> compileOperation(int n, const ScheduleSource& source, size_t typeSize,
                                           const Topology& topo, const OperationOptions& options,
                                           bool* overBudget);

}  // namespace braid::algos
