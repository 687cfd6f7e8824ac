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
// and, after every kWindow-th large one, send rank 0 one small Vote each through the bootstrap
// (the medians of this rank's measurements since the last vote). Rank 0 runs the Rule on all of
// them and sends every rank the decision, and every rank carries it out right there, before the
// call that follows the vote: re-plan (the ranks re-run the topology probe
// together, adopt what it found and drop every schedule chosen on the old topology, so that call
// and all after it are selected on the new one), re-plan from a probe with rounds under load
// where the connections inside racks run slower than priced (links shared by more flows than
// a lone pair shows), undo a re-plan that measured slower, or name a rank the others wait for
// (docs/adaptation.md).
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
// it prices a flat ring at a quarter of what it measures, where four flows share each rack
// uplink unseen by the probe and 8 ranks share 2 cores, and hierpipe right), and a measured loss
// is one to undo; 1.25x leaves room for noise.
constexpr double kWorse = 1.25;
// A rank that spends longer outside the communicator's calls than the others before each large
// one (its own work between calls), kPersist windows in a row, starts them late, and the others
// wait in their calls for it. Late by a fifth of a round (outside time plus call time, medians)
// and at least kLateMinUs is past what one rank's scheduling on a shared core adds: with 1 ms,
// ranks that were on time were named late by 1.2-1.4 ms in 4 of 50 runs of four processes on
// two cores (tests/mp/adapt_test.cc, run in a loop), and with 5 ms one was named late by 5.0 ms
// in CI, where other tests ran beside it: a scheduler's turn or two (4 ms ticks). Time outside
// calls, not inside: behind a slow link a rank waits inside its calls, and the ranks next to it
// start their calls late because their previous calls ended late, not because they were busy.
// A re-plan cannot help a late rank, so while one is late the rule does not re-plan, and when
// one starts or stops being late the reference is measured again.
constexpr double kLateShare = 0.2;
constexpr double kLateMinUs = 10000;
// The probe measures one pair of hosts at a time, so an uplink that one pair does not fill but a
// rack's flows together do looks like a rack's own links, and the cost model prices the plan on
// links faster than its flows get. The connections' own paths say so once calls run: where the
// ranks' median path ratio (Vote::pathRatio) is kOff or more, kPersist windows in a row, the
// ranks probe again with rounds under load (topo::probeTopology), once per plan the network
// gave (a re-plan because calls moved allows another; a probe under load or a revert does not).
// The same at 1 / kOff or less: the probe measured the links slower than they are (it ran while
// something else loaded the machine), and every price since is too high.
// kOff: a link priced right runs at 0.7-1.6x its price (the netns_link_rate test's bounds), a
// link four flows share at about 4x (docs/adaptation.md).

// One rank's vote.
struct Vote {
  float ratio = 0;       // median measured / priced over the window (0: no large call finished)
  float usPerMiB = 0;    // median measured time per MiB of the call (this rank's bytes)
  float callUs = 0;      // median time of those calls
  float gapUs = 0;       // median time since this rank's previous call on the communicator ended
  uint32_t samples = 0;  // how many
  uint32_t canProbe = 0;  // 1: this rank can take part in a probe now (no device-memory calls)
  // The median over this rank's connections to other hosts of the path's time per MiB under the
  // job's traffic (TCP_INFO: LinkStats::pathUsPerMiB) over what the cost model prices for the
  // pair (0: no connection has both yet).
  float pathRatio = 0;
};

// A host whose links the probe found slower than the others' (topo::RackClustering::slowHost),
// given by the lowest of its ranks: rank -1 when none.
struct SlowHost {
  int rank = -1;
  int ranks = 0;          // how many ranks the host has
  double gbps = 0;        // its fastest measured link
  double othersGbps = 0;  // the median measured link between the other hosts
};

// A rank the others wait for: -1 when none.
struct Straggler {
  int rank = -1;
  double lateUs = 0;  // how much longer it spent outside its calls than the median rank
};

// The agreed rule: fed the same votes, it decides the same on every rank. Pure (unit-tested).
class Rule {
 public:
  enum class Action { kNone, kReplan, kProbeUnderLoad, kRevert, kLate, kOnTime };
  // What to do now (kLate: straggler() was just named; kOnTime: the one named is no longer
  // late; kProbeUnderLoad: re-plan from a probe with rounds under load); *why says what was
  // measured (for the log).
  Action next(const std::vector<Vote>& votes, std::string* why);
  // After a re-plan: a new reference is measured, and the new plan judged against the last
  // window of the old one. After a revert (or a probe that changed nothing) only the former.
  void replanned(bool judge);
  double reference() const { return reference_; }
  const Straggler& straggler() const { return named_; }

 private:
  // Updates the late rank from this window; an Action when one was named or cleared.
  Action watchLate(const std::vector<Vote>& votes, double medianCallUs, double medianGapUs,
                   std::string* why);

  int warmup_ = kWarmupWindows;
  double reference_ = 0;  // 0: not yet measured
  int off_ = 0;           // windows in a row off the reference
  int pathOff_ = 0;       // windows in a row whose paths ran kOff or more below their price
  bool probedUnderLoad_ = false;  // since the last re-plan for calls that moved
  double lastUsPerMiB_ = 0;  // the latest window's
  double judgeAgainst_ = 0;  // the replaced plan's last window (0: nothing to judge)
  Straggler candidate_;      // the latest rank of this window, if late enough
  int lateWindows_ = 0;      // windows in a row candidate_ was late
  int onTimeWindows_ = 0;    // windows in a row the named rank was not
  Straggler named_;
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
  // The executor, after every run of the communicator's calls: when it ended (steady clock).
  void ended(int64_t ns) { lastEndNs_.store(ns, std::memory_order_relaxed); }

  // The rank named late, -1 for none, and by how much (braidCommGetStats; any thread).
  int lateRank() const { return lateRank_.load(std::memory_order_relaxed); }
  double lateUs() const { return lateUs_.load(std::memory_order_relaxed); }
  // The plan changes so far (braidCommGetStats reads it from any thread).
  uint32_t epoch() const { return epoch_.load(std::memory_order_relaxed); }

  // After every probe, at init (call -1) and at a re-plan (its call index), on every rank alike:
  // names the slow host the probe found (NCCL_DEBUG=WARN), or says that the one named before is
  // no longer slow. Whether or not the communicator adapts (the init probe runs either way).
  void probed(ncclComm* comm, const SlowHost& slow, int64_t call);
  // The slow host's lowest rank, -1 for none, and its links' rate (braidCommGetStats).
  int slowRank() const { return slowRank_.load(std::memory_order_relaxed); }
  double slowGbps() const { return slowGbps_.load(std::memory_order_relaxed); }

 private:
  friend Status beforeCall(ncclComm* comm, const Call& call);
  // This rank's vote from what it observed since the last one, which it forgets.
  Vote takeVote(bool canProbe);
  float pathRatio(ncclComm* comm);  // Vote::pathRatio (on the calling thread, at a vote)

  struct Sample {
    float ratio, usPerMiB, us, gapUs;
  };
  bool enabled_ = false;
  uint64_t calls_ = 0;       // collective calls begun (the agreed call index)
  uint64_t largeCalls_ = 0;  // of them, those of kMinBytes or more
  uint64_t votedAt_ = 0;     // largeCalls_ at the last vote
  std::atomic<uint32_t> epoch_{0};  // plan changes adopted (re-plans and reverts)
  std::atomic<int> lateRank_{-1};
  std::atomic<int> slowRank_{-1};
  std::atomic<double> slowGbps_{0};
  std::atomic<int64_t> lastEndNs_{0};  // 0: no call ended yet
  float gapUs_ = 0;                    // before the large call begun last (under mu_)
  std::atomic<double> lateUs_{0};
  Rule rule_;
  std::mutex mu_;
  std::vector<Sample> samples_;  // observed since the last vote (bounded: see observe)
  algos::Topology previous_;     // what the last re-plan replaced (a revert goes back to it)
  // The plan's racks came from a probe with rounds under load: later probes run them too (a lone
  // pair does not show those racks), until a revert undoes that plan.
  bool racksUnderLoad_ = false;
  std::vector<uint64_t> sentAtVote_;  // per peer: its connection's bytesSent at the last vote
};

// Every collective call, on the calling thread, before it is planned (api/coll.cc): counts it
// and, at an exchange point, votes and carries out what the ranks decided. Point-to-point calls
// are not counted (their sequence differs between ranks).
Status beforeCall(ncclComm* comm, const Call& call);

// Init, after the topology was built: whether this communicator adapts. Ranks agree (through the
// bootstrap) so that one rank's BRAID_ADAPT=0 turns it off for all, with a warning.
Status agreeAtInit(ncclComm* comm, bool probed);

}  // namespace braid::adapt
