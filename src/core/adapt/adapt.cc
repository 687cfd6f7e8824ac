#include "core/adapt/adapt.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "base/env.h"
#include "base/log.h"
#include "base/strfmt.h"
#include "core/async/engine.h"
#include "core/comm/comm.h"
#include "core/comm/peer_loss.h"
#include "core/plan/plan.h"
#include "core/variables.h"
#include "kernels/reduce.h"

namespace braid::adapt {
namespace {

// Samples kept between two votes: a window is kWindow calls, but calls on a host stream finish
// when they finish, so a vote may find more (it takes the latest) or none.
constexpr size_t kMaxSamples = 64;

// The lower middle of `v` (not empty).
float median(std::vector<float> v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

size_t callBytes(const Call& call) { return call.count * kernels::typeSize(call.type); }

// "2 racks (0,2,4,6 | 1,3,5,7), 2.00 Gbit/s within a rack, 0.50 between racks".
std::string describeRacks(const algos::Topology& t) {
  if (t.levels() < 2) return "hosts only, no racks";
  const std::vector<int>& rackOf = t.groupOf[1];
  const int racks = t.groups(1);
  std::string out = strfmt("%d rack%s (", racks, racks == 1 ? "" : "s");
  for (int g = 0; g < racks; ++g) {
    if (g) out += " | ";
    bool first = true;
    for (size_t r = 0; r < rackOf.size(); ++r)
      if (rackOf[r] == g) out += strfmt("%s%zu", first ? "" : ",", r), first = false;
  }
  out += ")";
  auto gbits = [](const algos::LinkCost& l) { return 8e-3 / l.betaUsPerByte; };
  if (racks > 1 && t.link.size() > 2)
    out += strfmt(", %.2f Gbit/s within a rack, %.2f between racks", gbits(t.link[1]),
                  gbits(t.link[2]));
  return out;
}

// Adopts `t` on the communicator and its host-stream twins (they price on the same topology):
// every schedule chosen on the old one goes, so the next call is selected afresh.
void adopt(ncclComm* comm, const algos::Topology& t) {
  comm->topology = t;
  comm->releaseCaches();
  for (ncclComm* twin : async::twins(comm)) {
    twin->topology = t;
    twin->releaseCaches();
  }
}

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

constexpr uint64_t kTagVote = 0x61647674;      // "advt"
constexpr uint64_t kTagDecision = 0x61646463;  // "addc"
// The ranks other than 0 wait this much longer than BRAID_TIMEOUT_MS for rank 0's decision, so
// that rank 0's report on a rank it did not hear arrives before they give up on rank 0 (as the
// reports of core/comm/peer_loss.h get a grace).
constexpr int64_t kDecisionGraceMs = 300;

// What rank 0 sends every rank after a vote that all ranks took part in: what the rule decided.
struct Decision {
  int32_t action = 0;  // Rule::Action
  int32_t lateRank = -1;
  int32_t reserved[2] = {};
  double lateUs = 0;
  char why[488] = {};  // the rule's reason, for the log
};
static_assert(sizeof(Decision) == 512);

}  // namespace

// Vote::pathRatio: over the connections between hosts of one rack on the communicator's
// topology (level 1; where the probe found no racks, every connection between hosts) that sent
// kMinBytes or more since the last vote and that the kernel's figures and the cost model have
// both priced. Their price is their link's own rate: nothing the topology knows of is shared on
// the way. Across racks the cost model prices the flows' share of a rack's uplink, which the
// per-connection price (a lone pair's link) does not say, so those connections are left out; and
// so are those the plan no longer uses (their figures are an earlier plan's).
float Adaptation::pathRatio(ncclComm* comm) {
  std::vector<float> ratios;
  sentAtVote_.resize(comm->channels.size(), 0);
  for (size_t peer = 0; peer < comm->channels.size(); ++peer) {
    const LinkStats& stats = comm->channels[peer].stats;
    const uint64_t sent = stats.bytesSent.get();
    const bool moved = sent - sentAtVote_[peer] >= kMinBytes;
    sentAtVote_[peer] = sent;
    const double path = stats.pathUsPerMiB.get(), model = stats.modelUsPerMiB.get();
    if (moved && path > 0 && model > 0 &&
        comm->topology.commonLevel(comm->rank, static_cast<int>(peer)) == 1)
      ratios.push_back(static_cast<float>(path / model));
  }
  return ratios.empty() ? 0 : median(std::move(ratios));
}

Rule::Action Rule::next(const std::vector<Vote>& votes, std::string* why) {
  std::vector<float> ratios, perMiB, callUs, gapUs, paths;
  for (const Vote& v : votes) {
    if (!v.canProbe) return Action::kNone;  // a probe now would cut across a rank's device calls
    if (v.pathRatio > 0) paths.push_back(v.pathRatio);
    if (v.samples) {
      ratios.push_back(v.ratio);
      perMiB.push_back(v.usPerMiB);
      callUs.push_back(v.callUs);
      gapUs.push_back(v.gapUs);
    }
  }
  // Half the ranks or more must have seen a large call end (a host stream's may still run).
  if (ratios.empty() || ratios.size() * 2 < votes.size()) return Action::kNone;
  const double now = median(std::move(ratios));
  lastUsPerMiB_ = median(std::move(perMiB));
  const Action late = watchLate(votes, median(std::move(callUs)), median(std::move(gapUs)), why);
  if (warmup_ > 0) {
    --warmup_;
    return late;
  }
  if (late != Action::kNone) {
    reference_ = 0;  // the others' calls change when a rank starts or stops being late
    off_ = 0;
    return late;
  }
  if (reference_ <= 0) {
    reference_ = now;
    const double against = judgeAgainst_;
    judgeAgainst_ = 0;
    if (against > 0 && lastUsPerMiB_ > against * kWorse) {
      *why = strfmt("the new plan's calls took %.0f us per MiB, the old one's %.0f", lastUsPerMiB_,
                    against);
      return Action::kRevert;
    }
    return Action::kNone;
  }
  if (candidate_.rank >= 0 || named_.rank >= 0) {
    off_ = 0;  // a late rank slows the others' calls; a re-plan would not help
    return Action::kNone;
  }
  const double off = now / reference_;
  off_ = off >= kOff || off <= 1 / kOff ? off_ + 1 : 0;
  if (off_ >= kPersist) {
    *why = strfmt(
        "large calls ran %.2fx the cost model's price over the last %d, against %.2fx "
        "when the plan was new",
        now, kPersist * kWindow, reference_);
    probedUnderLoad_ = false;
    return Action::kReplan;
  }
  const double path = paths.empty() ? 0 : median(std::move(paths));
  pathOff_ = path >= kOff || (path > 0 && path <= 1 / kOff) ? pathOff_ + 1 : 0;
  if (pathOff_ < kPersist || probedUnderLoad_) return Action::kNone;
  probedUnderLoad_ = true;
  *why = strfmt(
      "connections between hosts of one rack moved data at %.2fx the time per MiB "
      "their links are priced at (medians, %d windows): %s",
      path, pathOff_,
      path >= kOff ? "links shared by more flows than the probe measured"
                   : "links faster than the probe measured (on a loaded machine, say)");
  return Action::kProbeUnderLoad;
}

Rule::Action Rule::watchLate(const std::vector<Vote>& votes, double medianCallUs,
                             double medianGapUs, std::string* why) {
  Straggler latest;
  for (size_t r = 0; r < votes.size(); ++r) {
    if (!votes[r].samples) continue;
    const double late = votes[r].gapUs - medianGapUs;
    if (late > latest.lateUs) latest = {static_cast<int>(r), late};
  }
  if (latest.lateUs < std::max(kLateMinUs, kLateShare * (medianCallUs + medianGapUs))) latest = {};
  if (latest.rank >= 0 && latest.rank == candidate_.rank) {
    ++lateWindows_;
  } else {
    lateWindows_ = latest.rank >= 0;
  }
  candidate_ = latest;
  if (named_.rank >= 0) {
    onTimeWindows_ = latest.rank == named_.rank ? 0 : onTimeWindows_ + 1;
    if (latest.rank == named_.rank) named_.lateUs = latest.lateUs;
    if (onTimeWindows_ >= kPersist) {
      *why = strfmt("rank %d's large calls no longer start late (%d windows)", named_.rank,
                    onTimeWindows_);
      named_ = {};
      onTimeWindows_ = 0;
      return Action::kOnTime;
    }
    if (latest.rank == named_.rank || latest.rank < 0 || lateWindows_ < kPersist)
      return Action::kNone;
  }
  if (lateWindows_ < kPersist) return Action::kNone;
  named_ = latest;
  onTimeWindows_ = 0;
  *why = strfmt(
      "before each of the last %d large calls it spent %.1f ms longer outside the "
      "communicator's calls than the median rank (%.1f ms), whose calls took %.1f ms: "
      "the others waited for it",
      lateWindows_ * kWindow, latest.lateUs / 1000, medianGapUs / 1000, medianCallUs / 1000);
  return Action::kLate;
}

void Rule::replanned(bool judge) {
  warmup_ = kWarmupWindows;
  reference_ = 0;
  off_ = 0;
  pathOff_ = 0;
  judgeAgainst_ = judge ? lastUsPerMiB_ : 0;
}

void Adaptation::observe(double us, double priceUs, size_t bytes) {
  const double ratio = us / priceUs, perMiB = us * double(1 << 20) / static_cast<double>(bytes);
  if (!(ratio > 0) || !std::isfinite(ratio) || !std::isfinite(perMiB)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (samples_.size() >= kMaxSamples) samples_.erase(samples_.begin());
  samples_.push_back(
      {static_cast<float>(ratio), static_cast<float>(perMiB), static_cast<float>(us), gapUs_});
}

void Adaptation::probed(ncclComm* comm, const SlowHost& slow, int64_t call) {
  const int before = slowRank();
  slowRank_.store(slow.rank, std::memory_order_relaxed);
  slowGbps_.store(slow.rank >= 0 ? slow.gbps : 0, std::memory_order_relaxed);
  const std::string when =
      call < 0 ? std::string("init") : strfmt("call %lld", static_cast<long long>(call));
  const void* c = static_cast<void*>(comm);
  if (slow.rank >= 0 && slow.rank != before) {
    BRAID_WARN(
        "adapt: comm %p rank %d: %s: %s%s is on a slow host: the probe measured its "
        "host's links to the others at %.2f Gbit/s at most, and %.2f between the others "
        "(a slow link at that host, or a rack of one behind a slow uplink); the others "
        "wait for it in every call that crosses it",
        c, comm->rank, when.c_str(), loss::describeRank(comm, slow.rank).c_str(),
        slow.ranks > 1 ? strfmt(" (and %d more ranks)", slow.ranks - 1).c_str() : "", slow.gbps,
        slow.othersGbps);
  } else if (slow.rank < 0 && before >= 0) {
    BRAID_INFO(kTuning, "adapt: comm %p rank %d: %s: rank %d's host is no longer slow", c,
               comm->rank, when.c_str(), before);
  }
}

Vote Adaptation::takeVote(bool canProbe) {
  Vote v;
  v.canProbe = canProbe;
  std::lock_guard<std::mutex> lock(mu_);
  if (!samples_.empty()) {
    std::vector<float> ratios, perMiB, us, gap;
    for (const Sample& s : samples_) {
      ratios.push_back(s.ratio);
      perMiB.push_back(s.usPerMiB);
      us.push_back(s.us);
      gap.push_back(s.gapUs);
    }
    v.samples = static_cast<uint32_t>(samples_.size());
    v.ratio = median(std::move(ratios));
    v.usPerMiB = median(std::move(perMiB));
    v.callUs = median(std::move(us));
    v.gapUs = median(std::move(gap));
    samples_.clear();
  }
  return v;
}

// The vote before call `index`: every rank sends rank 0 its vote over the bootstrap's
// point-to-point connections, rank 0 runs the rule on all of them and sends every rank what it
// decided, so every rank carries out the same decision before the same call. Rank 0 takes the
// votes in rank order, each within BRAID_TIMEOUT_MS (they come at about the same time, so this is
// one wait, and n - 1 reads, not a scan of every connection per vote).
//
// The vote is part of the call, and fails as a call that waits on data does (core/comm/
// peer_loss.h): a rank that gives up (rank 0 on a vote that does not come, another rank on a
// decision that does not come, or on a connection that broke) tells every rank whom it awaited,
// and a rank still waiting in the vote that hears it gives up too and tells in turn. Each then
// follows the chain of "awaiting" through the reports: a rank that stopped is named silent, and a
// link that stopped between two others (one rank still in the call before the vote, awaiting the
// other, which voted) is named as that link, whichever rank's wait ran out first.
namespace {
// Gives up in the vote on rank `awaited` (why: what failed), or, where another rank's report
// came in meanwhile, after that rank. An abort (ncclCommAbort) ends the vote as it ends a call's
// wait on the data path: no rank is lost, so none is reported or named.
Status gaveUpInVote(ncclComm* comm, const std::string& where, int awaited, const Status& why) {
  if (comm->abortFlag.load()) return invalidUsage("%s: communicator aborted", where.c_str());
  std::vector<int> ranks{awaited};
  Status st(why.code(), where + ": " + why.message());
  std::string diagnosis;
  loss::Report report;
  if (loss::heard(comm, &report)) {
    ranks.push_back(report.from);
    st = remoteError("%s: %s gave up on its peers (%s)", where.c_str(),
                     loss::describeRank(comm, report.from).c_str(), report.text.c_str());
    diagnosis = strfmt("%s: after %s gave up", where.c_str(),
                       loss::describeRank(comm, report.from).c_str());
  }
  st = loss::giveUp(comm, std::move(ranks), loss::progress(comm), st, diagnosis);
  comm->markFailed(st.code());
  return st;
}

Status vote(ncclComm* comm, uint64_t index, const Vote& mine, Rule& rule, Decision* decision) {
  const std::string where = strfmt("adaptation's vote before call %llu", ull(index));
  Bootstrap& boot = *comm->bootstrap;
  bool lost = false;
  if (comm->rank != 0) {
    const std::string rank0 = loss::describeRank(comm, 0);
    if (Status st = boot.send(0, kTagVote, &mine, sizeof mine); !st.ok())
      return gaveUpInVote(comm, where, 0,
                          Status(st.code(), strfmt("sending %s this rank's vote: %s", rank0.c_str(),
                                                   st.message().c_str())));
    const int64_t wait = comm->timeoutMs > 0 ? comm->timeoutMs + kDecisionGraceMs : 0;
    if (Status st =
            loss::recvUnlessLost(comm, 0, kTagDecision, decision, sizeof *decision, wait, &lost);
        !st.ok() || lost)
      return gaveUpInVote(comm, where, 0,
                          Status(st.code(), strfmt("no decision from %s (%s)", rank0.c_str(),
                                                   st.message().c_str())));
    decision->why[sizeof decision->why - 1] = 0;
    if (decision->action < 0 || decision->action > static_cast<int32_t>(Rule::Action::kOnTime) ||
        decision->lateRank < -1 || decision->lateRank >= comm->nranks)
      return internalError("%s: %s sent a decision this rank cannot read (action %d, rank %d)",
                           where.c_str(), rank0.c_str(), decision->action, decision->lateRank);
    return Status::Ok();
  }
  std::vector<Vote> votes(static_cast<size_t>(comm->nranks));
  votes[0] = mine;
  for (int r = 1; r < comm->nranks; ++r) {
    if (Status st = loss::recvUnlessLost(comm, r, kTagVote, &votes[static_cast<size_t>(r)],
                                         sizeof(Vote), comm->timeoutMs, &lost);
        !st.ok() || lost)
      return gaveUpInVote(
          comm, where, r,
          Status(st.code(), strfmt("no vote from %s (%s)", loss::describeRank(comm, r).c_str(),
                                   st.message().c_str())));
  }
  std::string why;
  decision->action = static_cast<int32_t>(rule.next(votes, &why));
  decision->lateRank = rule.straggler().rank;
  decision->lateUs = rule.straggler().lateUs;
  std::snprintf(decision->why, sizeof decision->why, "%s", why.c_str());
  for (int r = 1; r < comm->nranks; ++r)
    if (Status st = boot.send(r, kTagDecision, decision, sizeof *decision); !st.ok())
      return gaveUpInVote(
          comm, where, r,
          Status(st.code(), strfmt("sending %s the decision: %s",
                                   loss::describeRank(comm, r).c_str(), st.message().c_str())));
  return Status::Ok();
}
}  // namespace

Status beforeCall(ncclComm* comm, const Call& call) {
  Adaptation& a = comm->adapt;
  if (!a.enabled_ || call.coll == algos::Collective::Send || call.coll == algos::Collective::Recv)
    return Status::Ok();
  const uint64_t index = a.calls_++;
  // The exchange point is fixed by the calls before this one (their sizes agree on every rank,
  // as their signatures checked), not by this call's arguments: a rank whose call here is wrong
  // still meets the others at the exchange and fails on its signature afterwards.
  const bool due = a.largeCalls_ > a.votedAt_ && a.largeCalls_ % kWindow == 0;
  if (due) a.votedAt_ = a.largeCalls_;
  if (callBytes(call) >= kMinBytes) {
    ++a.largeCalls_;
    // This rank's time outside the communicator's calls before this one (its own work): the
    // sample of this call takes it (observe).
    const int64_t end = a.lastEndNs_.load(std::memory_order_relaxed);
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    std::lock_guard<std::mutex> lock(a.mu_);
    a.gapUs_ = end > 0 && now > end ? static_cast<float>(now - end) * 1e-3f : 0;
  }
  if (!due) return Status::Ok();

  Vote mine = a.takeVote(comm->deviceProxy == nullptr);
  mine.pathRatio = a.pathRatio(comm);
  Decision decision;
  BRAID_TRY(vote(comm, index, mine, a.rule_, &decision));
  const std::string why = decision.why;
  const auto action = static_cast<Rule::Action>(decision.action);
  const Straggler late{decision.lateRank, decision.lateUs};
  a.lateRank_.store(late.rank, std::memory_order_relaxed);
  a.lateUs_.store(late.lateUs, std::memory_order_relaxed);
  if (action == Rule::Action::kNone) return Status::Ok();
  const void* c = static_cast<void*>(comm);
  if (action == Rule::Action::kLate || action == Rule::Action::kOnTime) {
    if (action == Rule::Action::kLate)
      BRAID_WARN("adapt: comm %p rank %d: call %llu: %s is late: %s", c, comm->rank, ull(index),
                 loss::describeRank(comm, late.rank).c_str(), why.c_str());
    else
      BRAID_INFO(kTuning, "adapt: comm %p rank %d: call %llu: on time again: %s", c, comm->rank,
                 ull(index), why.c_str());
    return Status::Ok();
  }
  if (action == Rule::Action::kRevert) {
    BRAID_INFO(kTuning, "adapt: comm %p rank %d: call %llu: plan epoch %u: %s: back to %s", c,
               comm->rank, ull(index), a.epoch() + 1, why.c_str(),
               describeRacks(a.previous_).c_str());
    adopt(comm, a.previous_);
    a.racksUnderLoad_ = false;  // what rounds under load found measured slower
    ++a.epoch_;
    a.rule_.replanned(false);
    return Status::Ok();
  }
  const bool underLoad = action == Rule::Action::kProbeUnderLoad;
  BRAID_INFO(kTuning, "adapt: comm %p rank %d: call %llu: %s: probing the network again%s", c,
             comm->rank, ull(index), why.c_str(), underLoad ? " under load" : "");
  // The probe posts on the connections directly: whatever a host stream queued on them runs
  // first.
  BRAID_TRY(async::drain(comm));
  algos::Topology measured;
  bool probed = false;
  SlowHost slow;
  // Once rounds under load found racks a lone pair does not show, every later probe has them.
  BRAID_TRY(comm->measureTopology(&measured, &probed, &slow, underLoad || a.racksUnderLoad_));
  if (!probed) {
    BRAID_INFO(kTuning, "adapt: comm %p rank %d: call %llu: the probe did not run; plan kept", c,
               comm->rank, ull(index));
    a.rule_.replanned(false);
    return Status::Ok();
  }
  a.probed(comm, slow, static_cast<int64_t>(index));
  const bool sameRacks = measured.groupOf == comm->topology.groupOf;
  BRAID_INFO(kTuning, "adapt: comm %p rank %d: call %llu: plan epoch %u: %s%s%s", c, comm->rank,
             ull(index), a.epoch() + 1, describeRacks(measured).c_str(),
             sameRacks ? " (the same racks, re-priced)" : ", was ",
             sameRacks ? "" : describeRacks(comm->topology).c_str());
  a.racksUnderLoad_ = (underLoad || a.racksUnderLoad_) && measured.levels() > 1;
  a.previous_ = comm->topology;
  adopt(comm, measured);
  ++a.epoch_;
  a.rule_.replanned(true);
  return Status::Ok();
}

Status agreeAtInit(ncclComm* comm, bool probed) {
  comm->adapt.enable(false);
  // Only a communicator whose racks the probe found can re-plan by probing again; the same
  // condition holds on every rank (probeTopology's result is rank 0's, sent to all).
  if (!probed) return Status::Ok();
  std::vector<uint8_t> on(static_cast<size_t>(comm->nranks), 0);
  on[static_cast<size_t>(comm->rank)] = env::getInt(env::kBraidAdapt) != 0;
  BRAID_TRY(
      comm->bootstrap->allGather(on.data(), 1).withContext("adaptation: agreeing on BRAID_ADAPT"));
  const auto off = std::find(on.begin(), on.end(), 0);
  if (off != on.end() && comm->rank == 0 && std::find(on.begin(), on.end(), 1) != on.end())
    BRAID_WARN("%s is 0 on rank %td but not on every rank: no rank adapts", env::kBraidAdapt.name,
               off - on.begin());
  comm->adapt.enable(off == on.end());
  return Status::Ok();
}

}  // namespace braid::adapt
