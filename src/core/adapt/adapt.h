// Adaptation: a communicator whose racks came from the topology probe keeps checking that plan
// against what its calls measure, and re-plans when the network changed under the job.
//
// The online model is the ratio of each large call's measured time to the cost model's price
// of it (Plan::estimateUs). The price stays fixed while the plan does, so a ratio that moves
// means the network moved: uplinks filled or slowed (ratio up), or recovered (ratio down).
// A ratio is compared with the one the same plan measured when it was new, not with 1: the cost
// model is a model, and on a shared machine it is off by a steady factor that says nothing.
//
// Every choice that changes messages must be made by every rank at the same call, without a
// clock. Ranks count their collective calls (the same sequence on every rank, as NCCL requires)
// and, after every kWindow-th large one, exchange one small vote each through the bootstrap
// (this rank's median ratio since the last exchange). Every rank then runs the same Rule on the
// same votes, so all decide alike; a decision to re-plan is carried out right there, before the
// call that follows the exchange: the ranks re-run the topology probe together, adopt what it
// found (racks, link costs) and drop every schedule chosen on the old topology, so that call and
// all after it are selected on the new one (docs/adaptation.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "algos/topology.h"
#include "base/status.h"

struct ncclComm;

namespace braid {
struct Call;
}

namespace braid::adapt {

// Calls that move at least this many bytes per rank are watched: their time is mostly the links'
// (an 8-byte call is latency, and scheduling noise on a shared core swamps it).
constexpr size_t kMinBytes = size_t{1} << 20;
// Large calls per exchange: the vote is their median, so one odd call moves nothing.
constexpr int kWindow = 3;
// A window whose ratio is this far from the plan's own (either way), kPersist windows in a row,
// re-plans: 1.5x is past the tens of percent these machines drift by from one run to the next,
// and two windows (six calls) is short next to a degradation that lasts. After a re-plan the
// first window is not used (the new schedules' first runs), the second sets the new reference.
constexpr double kOff = 1.5;
constexpr int kPersist = 2;
constexpr int kWarmupWindows = 1;
// A re-plan is judged by what it measures, not by its price: where the new plan's first
// reference window takes this much longer per byte than the last window of the plan it
// replaced, the ranks go back to that plan. The cost model can be wrong (on the emulated cluster
// it prices a flat ring at a quarter of what it measures when 8 ranks share 2 cores, and
// hierpipe right), and a measured loss is one to undo; 1.25x leaves room for noise.
constexpr double kWorse = 1.25;

// One rank's vote.
struct Vote {
  float ratio = 0;       // median measured / priced over the window (0: no large call finished)
  float usPerMiB = 0;    // median measured time per MiB of the call (this rank's bytes)
  uint32_t samples = 0;  // how many
  uint32_t canProbe = 0;  // 1: this rank can take part in a probe now (no device-memory calls)
};

// The agreed rule: fed the same votes, it decides the same on every rank. Pure (unit-tested).
class Rule {
 public:
  enum class Action { kNone, kReplan, kRevert };
  // What to do now; *why says what was measured (for the log).
  Action next(const std::vector<Vote>& votes, std::string* why);
  // After a re-plan: a new reference is measured, and the new plan judged against the last
  // window of the old one. After a revert (or a probe that changed nothing) only the former.
  void replanned(bool judge);
  double reference() const { return reference_; }

 private:
  int warmup_ = kWarmupWindows;
  double reference_ = 0;  // 0: not yet measured
  int off_ = 0;           // windows in a row off the reference
  double lastUsPerMiB_ = 0;  // the latest window's
  double judgeAgainst_ = 0;  // the replaced plan's last window (0: nothing to judge)
};

// A communicator's share of it (ncclComm::adapt).
class Adaptation {
 public:
  // Init's verdict, the same on every rank: whether this communicator adapts.
  void enable(bool on) { enabled_ = on; }
  bool enabled() const { return enabled_; }

  // The executor, after a call that ran alone: its time, the cost model's price and this
  // rank's bytes. Any thread (a host stream's progress thread runs its calls); large calls only,
  // so the lock costs nothing that matters.
  void observe(double us, double priceUs, size_t bytes);

  // The plan changes so far (braidCommGetStats reads it from any thread).
  uint32_t epoch() const { return epoch_.load(std::memory_order_relaxed); }

 private:
  friend Status beforeCall(ncclComm* comm, const Call& call);
  // This rank's vote from what it observed since the last one, which it forgets.
  Vote takeVote(bool canProbe);

  struct Sample {
    float ratio, usPerMiB;
  };
  bool enabled_ = false;
  uint64_t calls_ = 0;       // collective calls begun (the agreed call index)
  uint64_t largeCalls_ = 0;  // of them, those of kMinBytes or more
  uint64_t votedAt_ = 0;     // largeCalls_ at the last vote
  std::atomic<uint32_t> epoch_{0};  // plan changes adopted (re-plans and reverts)
  Rule rule_;
  std::mutex mu_;
  std::vector<Sample> samples_;  // observed since the last vote (bounded: see observe)
  algos::Topology previous_;     // what the last re-plan replaced (a revert goes back to it)
};

// Every collective call, on the calling thread, before it is planned (api/coll.cc): counts it
// and, at an exchange point, votes and carries out what the ranks decided. Point-to-point calls
// are not counted (their sequence differs between ranks).
Status beforeCall(ncclComm* comm, const Call& call);

// Init, after the topology was built: whether this communicator adapts. Ranks agree (through the
// bootstrap) so that one rank's BRAID_ADAPT=0 turns it off for all, with a warning.
Status agreeAtInit(ncclComm* comm, bool probed);

}  // namespace braid::adapt
