// Custom reduction operators (PreMulSum).
#include "api/guard.h"
#include "core/comm/comm.h"

using braid::Status;
using braid::api::guard;

BRAID_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
          ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  return guard(comm, "ncclRedOpCreatePreMulSum", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    const int type = braid::api::enumValue(datatype), where = braid::api::enumValue(residence);
    if (type < 0 || type >= ncclNumTypes)
      return braid::invalidArgument("datatype %d is not an NCCL data type", type);
    if (where != ncclScalarDevice && where != ncclScalarHostImmediate)
      return braid::invalidArgument(
          "residence %d is neither ncclScalarDevice nor ncclScalarHostImmediate", where);
    return comm->redOps.create(scalar, datatype, residence, op);
  });
}

BRAID_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  return guard(comm, "ncclRedOpDestroy", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    return comm->redOps.destroy(op);
  });
}
