#include "core/plan/group.h"

#include <algorithm>
#include <vector>

#include "base/thread_local.h"
#include "core/async/engine.h"
#include "core/comm/comm.h"
#include "core/device/device.h"

namespace braid::group {
namespace {

struct State {
  int depth = 0;
  std::vector<Plan> plans;
  Status error;
  std::vector<std::pair<cudaEvent_t, cudaStream_t>> events;  // recordAfterLaunch's
};
State& state() { return perThread<State>(); }

// Waits for the device work and host-stream calls still queued on a communicator: they use the
// same connections as a blocking call.
Status drainQueued(ncclComm* comm) {
  if (comm->deviceProxy) BRAID_TRY(device::drain(comm));
  if (comm->async) BRAID_TRY(async::drain(comm));
  return Status::Ok();
}

// Host plans run here and now, after any device work or host-stream calls still queued on their
// communicators; device plans go to their communicators' progress threads, host-stream plans to
// theirs (core/async/engine.h), queued first. A group with device and host plans runs its host
// plans first, so every rank must mix kinds the same way (each rank's operations on a pair of
// ranks are matched in the order they run).
Status run(std::span<Plan> plans) {
  size_t device = 0, queued = 0;
  for (const Plan& p : plans) device += p.onDevice, queued += p.hostStream != nullptr;
  if (queued > 0) {
    if (queued == plans.size())
      return async::submit(
          {std::make_move_iterator(plans.begin()), std::make_move_iterator(plans.end())});
    std::vector<Plan> streamed, rest;
    for (Plan& p : plans) (p.hostStream ? streamed : rest).push_back(std::move(p));
    BRAID_TRY(async::submit(std::move(streamed)));
    return run(rest);
  }
  if (device == 0) {
    for (const Plan& p : plans) BRAID_TRY(drainQueued(p.comm));
    return execute(plans);
  }
  if (device == plans.size()) return device::submit(plans);
  std::vector<Plan> host, dev;
  for (Plan& p : plans) (p.onDevice ? dev : host).push_back(std::move(p));
  for (const Plan& p : host) BRAID_TRY(drainQueued(p.comm));
  BRAID_TRY(execute(host));
  return device::submit(dev);
}

}  // namespace

void start() { state().depth++; }

bool active() { return state().depth > 0; }

void recordError(const Status& status) {
  State& tls = state();
  if (tls.depth > 0 && tls.error.ok()) tls.error = status;
}

Status end() {
  State& tls = state();
  if (tls.depth == 0) return invalidUsage("ncclGroupEnd called without a matching ncclGroupStart");
  if (--tls.depth > 0) return Status::Ok();
  std::vector<Plan> plans = std::move(tls.plans);
  Status error = std::move(tls.error);
  auto events = std::move(tls.events);
  tls = State{};
  if (!error.ok()) return error;
  if (!plans.empty()) BRAID_TRY(run(plans));
  for (auto [event, stream] : events) BRAID_TRY(device::recordEvent(event, stream));
  return Status::Ok();
}

Status recordAfterLaunch(cudaEvent_t event, cudaStream_t stream) {
  State& tls = state();
  if (tls.depth == 0) return device::recordEvent(event, stream);
  tls.events.emplace_back(event, stream);
  return Status::Ok();
}

Status simulateEnd(float* estimatedUs) {
  State& tls = state();
  if (tls.depth == 0)
    return invalidUsage("ncclGroupSimulateEnd called without a matching ncclGroupStart");
  if (--tls.depth > 0) return Status::Ok();
  std::vector<Plan> plans = std::move(tls.plans);
  Status error = std::move(tls.error);
  tls = State{};
  if (!error.ok()) return error;
  // Plans of one communicator share its links; plans of different ones run side by side.
  std::vector<std::pair<const ncclComm*, double>> perComm;
  for (const Plan& p : plans) {
    const double us = p.estimateUs;  // priced on the communicator's topology when planned
    auto it =
        std::find_if(perComm.begin(), perComm.end(), [&](auto& e) { return e.first == p.comm; });
    if (it == perComm.end())
      perComm.emplace_back(p.comm, us);
    else
      it->second += us;
  }
  double total = 0.0;
  for (auto& [comm, us] : perComm) total = std::max(total, us);
  *estimatedUs = static_cast<float>(total);
  return Status::Ok();
}

Status submit(Plan&& plan) {
  State& tls = state();
  if (tls.depth > 0) {
    tls.plans.push_back(std::move(plan));
    return Status::Ok();
  }
  return runNow(plan);
}

Status runNow(Plan& plan) { return run({&plan, 1}); }

}  // namespace braid::group
