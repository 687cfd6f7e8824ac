#include "api/guard.h"
#include "core/group.h"

using braid::Status;
using braid::api::guard;

BRAID_API(ncclResult_t, ncclGroupStart, void) {
  return guard(nullptr, "ncclGroupStart", [] {
    braid::group::start();
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclGroupEnd, void) {
  return guard(nullptr, "ncclGroupEnd", [] { return braid::group::end(); });
}
