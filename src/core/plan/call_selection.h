// Per-call algorithm selection: ncclCollConfig_t's algSelection and forceAlgSelection (NCCL 2.32's
// nccl<Collective>Config calls). A selection restricts the algorithms one call may use, in
// NCCL_ALGO's syntax ("ring,tree", "^ring", "allreduce:tree"), with Braid's names or NCCL's; the
// cost model then picks among what it allows. When it allows nothing that implements the call,
// forceAlgSelection makes that an error, else the communicator chooses as without a selection.
// Like NCCL, Braid trusts every rank to pass the same selection (it is not in the call signature).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "algos/selector.h"
#include "base/status.h"
#include "core/plan/schedule_cache.h"

namespace braid {

struct CallSelection {
  std::string spec;  // as the caller wrote it
  bool force = true;
  algos::AlgoFilter filter;
  // This selection's own choices and schedules: the same call may choose differently under it.
  ScheduleCache schedules{64, ScheduleCache::kMaxSteps / 16};
};

// A communicator's selections, kept for its lifetime so that a call names one by pointer (a
// training loop passes the same few configs again and again). At most kMax distinct ones.
class CallSelections {
 public:
  static constexpr size_t kMax = 64;
  // The selection for (spec, force), parsed the first time: ncclInvalidArgument naming an
  // unknown algorithm, or the limit.
  Status intern(std::string_view spec, bool force, CallSelection** out);

  // Their schedule caches: steps held, and emptied.
  size_t steps() const;
  void clearSchedules();

 private:
  std::vector<std::unique_ptr<CallSelection>> all_;
};

// The algorithm for `args` under `selection`: *chosen false (and Ok) when the selection allows
// nothing that implements the call and does not force, so that the caller chooses as usual.
Status chooseSelected(const algos::CollArgs& args, const CallSelection& selection,
                      algos::Choice* out, bool* chosen);

}  // namespace braid
