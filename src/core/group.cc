#include "core/group.h"

#include <vector>

#include "core/comm.h"

namespace braid::group {
namespace {

struct State {
  int depth = 0;
  std::vector<Plan> plans;
  Status error;
};
thread_local State tls;

}  // namespace

void start() { tls.depth++; }

bool active() { return tls.depth > 0; }

void recordError(const Status& status) {
  if (tls.depth > 0 && tls.error.ok()) tls.error = status;
}

Status end() {
  if (tls.depth == 0) return invalidUsage("ncclGroupEnd called without a matching ncclGroupStart");
  if (--tls.depth > 0) return Status::Ok();
  std::vector<Plan> plans = std::move(tls.plans);
  Status error = std::move(tls.error);
  tls = State{};
  if (!error.ok()) return error;
  if (plans.empty()) return Status::Ok();
  return execute(plans);
}

Status submit(Plan plan) {
  if (tls.depth > 0) {
    tls.plans.push_back(std::move(plan));
    return Status::Ok();
  }
  Plan one[1] = {std::move(plan)};
  return execute(one);
}

}  // namespace braid::group
