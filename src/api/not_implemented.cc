// Entry points Braid exports (so that a drop-in never leaves a symbol unresolved) but does not
// implement yet. Each returns ncclInvalidUsage with a message naming itself; the README's
// feature table lists them as "not yet".
#include "api/guard.h"

using braid::Status;

namespace {

ncclResult_t notImplemented(const char* function) {
  return braid::api::guard(nullptr, function, [&] {
    return braid::invalidUsage("not implemented in Braid %s yet (see the README's feature table)",
                               BRAID_VERSION_STRING);
  });
}

}  // namespace

#define BRAID_NOT_IMPLEMENTED(name, ...) \
  BRAID_API(ncclResult_t, name, __VA_ARGS__) { return notImplemented(#name); }

// The device API (NCCL 2.28's GPU-initiated communication) needs device memory; the host
// functions that set it up are exported and refuse clearly.
BRAID_NOT_IMPLEMENTED(ncclDevCommCreate, ncclComm_t, ncclDevCommRequirements_t const*,
                      ncclDevComm_t*)
BRAID_NOT_IMPLEMENTED(ncclDevCommDestroy, ncclComm_t, ncclDevComm_t const*)
BRAID_NOT_IMPLEMENTED(ncclLsaBarrierCreateRequirement, ncclTeam_t, int, ncclLsaBarrierHandle_t*,
                      ncclDevResourceRequirements_t*)
BRAID_NOT_IMPLEMENTED(ncclGinBarrierCreateRequirement, ncclComm_t, ncclTeam_t, int,
                      ncclGinBarrierHandle_t*, ncclDevResourceRequirements_t*)
BRAID_NOT_IMPLEMENTED(ncclLLA2ACreateRequirement, int, int, ncclLLA2AHandle_t*,
                      ncclDevResourceRequirements_t*)

// These return values, not status codes: an empty team and -1 say "none", and the reason is
// left for ncclGetLastError.
BRAID_API(ncclTeam_t, ncclTeamWorld, ncclComm_t) {
  notImplemented("ncclTeamWorld");
  return {0, 0, 0};
}
BRAID_API(ncclTeam_t, ncclTeamLsa, ncclComm_t) {
  notImplemented("ncclTeamLsa");
  return {0, 0, 0};
}
BRAID_API(ncclTeam_t, ncclTeamRail, ncclComm_t) {
  notImplemented("ncclTeamRail");
  return {0, 0, 0};
}
BRAID_API(int, ncclTeamRankToWorld, ncclComm_t, ncclTeam_t, int) {
  notImplemented("ncclTeamRankToWorld");
  return -1;
}
BRAID_API(int, ncclTeamRankToLsa, ncclComm_t, ncclTeam_t, int) {
  notImplemented("ncclTeamRankToLsa");
  return -1;
}
BRAID_API(int, ncclLLA2ACalcSlots, int, int) {
  notImplemented("ncclLLA2ACalcSlots");
  return -1;
}

// NCCL 2.32's one-sided signals into a peer's window: Braid's windows are not mapped by peers
// yet (api/mem.cc), so these refuse.
BRAID_NOT_IMPLEMENTED(ncclPutSignal, const void*, size_t, ncclDataType_t, int, ncclWindow_t,
                      size_t, int, int, unsigned int, ncclComm_t, cudaStream_t)
BRAID_NOT_IMPLEMENTED(ncclSignal, int, int, int, unsigned int, ncclComm_t, cudaStream_t)
BRAID_NOT_IMPLEMENTED(ncclWaitSignal, int, ncclWaitSignalDesc_t*, ncclComm_t, cudaStream_t)

// NCCL 2.32's device-API additions: device addresses of window memory, CFT endpoints and
// teams, GIN mailboxes. NVIDIA's Linux headers do not declare the two GIN functions; their
// arguments are taken as opaque here.
BRAID_NOT_IMPLEMENTED(ncclGetLsaMultimemDevicePointer, ncclWindow_t, size_t, void**)
BRAID_NOT_IMPLEMENTED(ncclGetMultimemDevicePointer, ncclWindow_t, size_t, ncclMultimemHandle_t,
                      void**)
BRAID_NOT_IMPLEMENTED(ncclGetLsaDevicePointer, ncclWindow_t, size_t, int, void**)
BRAID_NOT_IMPLEMENTED(ncclGetPeerDevicePointer, ncclWindow_t, size_t, int, void**)
BRAID_NOT_IMPLEMENTED(ncclGetMultimemDeviceLeInfo, ncclWindow_t, size_t, ncclCftLeId*, size_t*)
BRAID_NOT_IMPLEMENTED(ncclGetCftDeviceLeInfo, ncclWindow_t, size_t, int, ncclTeam_t,
                      ncclCftLeId*, size_t*)
BRAID_NOT_IMPLEMENTED(ncclGetPeerDeviceLeInfo, ncclWindow_t, size_t, int, ncclCftLeId*, size_t*)
BRAID_NOT_IMPLEMENTED(ncclGinOutboxCreateRequirement, int, int, void*, void*)
BRAID_NOT_IMPLEMENTED(ncclGinInboxA2ACreateRequirement, ncclTeam_t, int, int, void*, void*)

BRAID_API(ncclTeam_t, ncclTeamCft, ncclComm_t, ncclCftTeamMode_t) {
  notImplemented("ncclTeamCft");
  return {0, 0, 0};
}
BRAID_API(ncclTeam_t, ncclTeamCftMultimem, ncclComm_t) {
  notImplemented("ncclTeamCftMultimem");
  return {0, 0, 0};
}
