#include "core/plan/group.h"
#include "api/guard.h"

using braid::Status;
using braid::api::guard;

BRAID_API(ncclResult_t, ncclGroupStart, void) {
  return guard(nullptr, "ncclGroupStart", [] {
    braid::group::start();
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  return guard(nullptr, "ncclGroupSimulateEnd", [&]() -> Status {
    if (!simInfo) return braid::invalidArgument("simInfo is NULL");
    if (simInfo->magic != 0x74685283u)
      return braid::invalidArgument(
          "simInfo->magic 0x%x is not 0x74685283: initialise it with "
          "NCCL_SIM_INFO_INITIALIZER",
          simInfo->magic);
    float us = 0.0f;
    BRAID_TRY(braid::group::simulateEnd(&us));
    simInfo->estimatedTime = us;
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclGroupEnd, void) {
  return guard(nullptr, "ncclGroupEnd", [] { return braid::group::end(); });
}
