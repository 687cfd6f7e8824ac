// The cost model: prices a schedule before it runs. Each message costs alpha plus bytes x beta
// of the link level it crosses (the topology's level of the lowest group both ranks share),
// each reduction bytes x gamma. Steps wait for their dependencies, and messages in one
// direction at one level queue behind each other (a rank's port at that level is busy while
// it sends), so a chunked pipeline costs its bandwidth term once, not once per chunk. The
// schedule costs its last step's finish time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "algos/schedule.h"
#include "transport/link_cost.h"

namespace braid::algos {

using transport::LinkCost;

struct CostParams {
  LinkCost link;
  double gammaUsPerByte = 1e-4;  // reduction (10 GB/s)
  double copyUsPerByte = 1e-4;   // local copies
};

// A host's memory system, all cores together: about 40 GB/s of reads and writes on the
// benchmark machine (two threads streaming: 43 GB/s reading, 41 GB/s writing around the cache;
// one thread's memcpy moves 19-21 GB/s each way). Topology::memoryUsPerByte.
constexpr double kHostMemoryUsPerByte = 1.0 / 40e3;
// The last-level cache assumed where the host does not say (Topology::cacheBytes).
constexpr double kDefaultCacheBytes = 32.0 * 1024 * 1024;

struct Topology;

// The time of one Encode, Decode or DecodeAccumulate step.
double codecStepUs(const Step& step, double gammaUsPerByte);

// One rank's schedule on a uniform network.
double estimateMicroseconds(const Schedule& schedule, size_t typeSize, const CostParams& params);
// One rank's schedule on `topology` (links priced by level).
double estimateMicroseconds(const Schedule& schedule, size_t typeSize, const Topology& topology,
                            int rank);

// How many messages share the port of `rank`'s group at `level` (the way out of it for a send,
// into it for a receive) at its step `step`, its own included (>= 1). A message that leaves the
// groups of levels 0..L-1 (its ranks' lowest common group is at level L) takes as long as its
// most crowded port: flows x bytes x beta of the level above that group, as the whole-operation
// model (operation_cost.h) books ports. Null: every port carries the message alone.
using FlowCount = double (*)(const void* context, size_t step, int level, bool out);
// A receive at `step`: how long the hop takes, latency and transfer, as the ranks that play the
// rank's part see it on average (the walk's wait for the sender, cost_model.cc). Null: the
// rank's own hop.
using HopUs = double (*)(const void* context, size_t step);
class SenderCone;
struct Flows {
  FlowCount count = nullptr;
  const void* context = nullptr;
  HopUs hop = nullptr;
  // Where the mirror rule (cost_model.cc) does not place a receive's sender, the cone evaluates
  // the sender's schedule to find when it sent. Null: such a receive is taken to answer the
  // rank's own message to the sender (an exchange), or waits for its port only.
  SenderCone* cone = nullptr;
};
double estimateMicroseconds(const Schedule& schedule, size_t typeSize, const Topology& topology,
                            int rank, Flows flows);

// The ranks a walked rank waits on, evaluated on demand: a receive whose sender the mirror rule
// does not place (a tree's parent receiving from its children, whose sends follow their own
// subtrees) asks when the sender started that message, and the cone evaluates the sender's
// schedule as far as that message depends (its dependencies, and the messages they receive,
// placed the same way; memoized per step). Cone ranks price their messages on their own links,
// without other flows and without queuing at their ports. A message that waits, directly or
// through others, on itself (a cycle), a sender taken on past `maxSteps` steps of schedules in
// all, or one deeper than kMaxDepth senders leaves the receive unplaced.
class SenderCone {
 public:
  using ScheduleOf = const Schedule& (*)(const void* context, int rank);
  SenderCone(const Topology& topology, size_t typeSize, ScheduleOf scheduleOf, const void* context,
             size_t maxSteps);
  ~SenderCone();
  SenderCone(const SenderCone&) = delete;
  SenderCone& operator=(const SenderCone&) = delete;
  // When `from` started its m-th message to `to` (0-based); -1 where the cone cannot say.
  double sendStart(int from, int to, size_t m);
  size_t steps() const { return steps_; }  // the steps of the ranks it has taken on

 private:
  struct Rank;
  Rank* rankState(int r);                 // null past the budget
  bool evaluate(Rank& q, uint32_t step);  // false: the step waits on itself (a cycle)
  const Topology& topo_;
  size_t typeSize_;
  ScheduleOf scheduleOf_;
  const void* context_;
  size_t maxSteps_;
  size_t steps_ = 0;
  // Senders asked for while walking another sender: a chain of ranks each waiting on the next
  // (a chain Reduce at thousands of ranks) is followed this deep, then left unplaced, so the
  // walk's recursion stays within a thread's stack.
  static constexpr int kMaxDepth = 256;
  int depth_ = 0;
  std::map<int, std::unique_ptr<Rank>> ranks_;
};

}  // namespace braid::algos
