/* Proves that Braid's include/nccl.h is binary-compatible with NVIDIA's nccl.h.
 *
 * This program prints one line per fact of the ABI: size, alignment and offset of every
 * struct field, every enumerator, every macro's value (and size), the contents of both
 * initializers and, in C++, the mangled type of every entry point. It is built once against
 * NVIDIA's headers and twice against Braid's (as C and as C++); the abi_layout test diffs the
 * outputs. In the Braid builds it also checks at compile time that each pncclX has the type
 * of its ncclX.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef PROBE_NVIDIA
#include <nccl.h>
#include <nccl_device/core.h>
#include <nccl_device/impl/comm__types.h> /* the full ncclDevComm and handle structs */
#else
#include "nccl.h"
#endif

#ifdef __cplusplus
#include <typeinfo>
#define PROBE_ALIGNOF(T) alignof(T)
#else
#define PROBE_ALIGNOF(T) _Alignof(T)
#endif

#define TYPE(T) printf("type %s size %zu align %zu\n", #T, sizeof(T), (size_t)PROBE_ALIGNOF(T))
#define FIELD(T, f) \
  printf("field %s.%s offset %zu size %zu\n", #T, #f, (size_t)offsetof(T, f), sizeof(((T*)0)->f))
#define ENUMV(e) printf("enum %s %lld size %zu\n", #e, (long long)(e), sizeof(e))
#define MACRO_INT(m) printf("macro %s %lld size %zu\n", #m, (long long)(m), sizeof(m))

static void probeScalars(void) {
  TYPE(ncclComm_t);
  TYPE(ncclWindow_t);
  TYPE(cudaStream_t);
  TYPE(ncclUniqueId);
  FIELD(ncclUniqueId, internal);
  TYPE(ncclResult_t);
  TYPE(ncclRedOp_dummy_t);
  TYPE(ncclRedOp_t);
  TYPE(ncclDataType_t);
  TYPE(ncclScalarResidence_t);

  ENUMV(ncclSuccess);
  ENUMV(ncclUnhandledCudaError);
  ENUMV(ncclSystemError);
  ENUMV(ncclInternalError);
  ENUMV(ncclInvalidArgument);
  ENUMV(ncclInvalidUsage);
  ENUMV(ncclRemoteError);
  ENUMV(ncclInProgress);
  ENUMV(ncclNumResults);
  ENUMV(ncclNumOps_dummy);
  ENUMV(ncclSum);
  ENUMV(ncclProd);
  ENUMV(ncclMax);
  ENUMV(ncclMin);
  ENUMV(ncclAvg);
  ENUMV(ncclNumOps);
  ENUMV(ncclMaxRedOp);
  ENUMV(ncclInt8);
  ENUMV(ncclChar);
  ENUMV(ncclUint8);
  ENUMV(ncclInt32);
  ENUMV(ncclInt);
  ENUMV(ncclUint32);
  ENUMV(ncclInt64);
  ENUMV(ncclUint64);
  ENUMV(ncclFloat16);
  ENUMV(ncclHalf);
  ENUMV(ncclFloat32);
  ENUMV(ncclFloat);
  ENUMV(ncclFloat64);
  ENUMV(ncclDouble);
  ENUMV(ncclBfloat16);
  ENUMV(ncclFloat8e4m3);
  ENUMV(ncclFloat8e5m2);
  ENUMV(ncclNumTypes);
  ENUMV(ncclScalarDevice);
  ENUMV(ncclScalarHostImmediate);
}

static void probeMacros(void) {
  MACRO_INT(NCCL_MAJOR);
  MACRO_INT(NCCL_MINOR);
  MACRO_INT(NCCL_PATCH);
  printf("macro NCCL_SUFFIX \"%s\" size %zu\n", NCCL_SUFFIX, sizeof(NCCL_SUFFIX));
  MACRO_INT(NCCL_VERSION_CODE);
  MACRO_INT(NCCL_VERSION(2, 8, 4));
  MACRO_INT(NCCL_VERSION(2, 9, 6));
  MACRO_INT(NCCL_VERSION(2, 28, 9));
  MACRO_INT(NCCL_VERSION(3, 0, 0));
  MACRO_INT(NCCL_VERSION(1, 8, 0));
  printf("macro NCCL_COMM_NULL null %d\n", (ncclComm_t)NCCL_COMM_NULL == (ncclComm_t)0);
  MACRO_INT(NCCL_UNIQUE_ID_BYTES);
  MACRO_INT(NCCL_CONFIG_UNDEF_INT);
  printf("macro NCCL_CONFIG_UNDEF_PTR null %d\n",
         (const char*)NCCL_CONFIG_UNDEF_PTR == (const char*)0);
  MACRO_INT(NCCL_SPLIT_NOCOLOR);
  printf("macro NCCL_UNDEF_FLOAT %a size %zu\n", (double)NCCL_UNDEF_FLOAT,
         sizeof(NCCL_UNDEF_FLOAT));
  MACRO_INT(NCCL_WIN_DEFAULT);
  MACRO_INT(NCCL_WIN_COLL_SYMMETRIC);
  MACRO_INT(NCCL_WIN_REQUIRED_ALIGNMENT);
  MACRO_INT(NCCL_CTA_POLICY_DEFAULT);
  MACRO_INT(NCCL_CTA_POLICY_EFFICIENCY);
  MACRO_INT(NCCL_CTA_POLICY_ZERO);
  MACRO_INT(NCCL_SHRINK_DEFAULT);
  MACRO_INT(NCCL_SHRINK_ABORT);
  MACRO_INT(NCCL_REVOKE_DEFAULT);
  MACRO_INT(NCCL_GIN_MAX_CONTEXTS);
}

static void probeConfig(void) {
  TYPE(ncclConfig_t);
  FIELD(ncclConfig_t, size);
  FIELD(ncclConfig_t, magic);
  FIELD(ncclConfig_t, version);
  FIELD(ncclConfig_t, blocking);
  FIELD(ncclConfig_t, cgaClusterSize);
  FIELD(ncclConfig_t, minCTAs);
  FIELD(ncclConfig_t, maxCTAs);
  FIELD(ncclConfig_t, netName);
  FIELD(ncclConfig_t, splitShare);
  FIELD(ncclConfig_t, trafficClass);
  FIELD(ncclConfig_t, commName);
  FIELD(ncclConfig_t, collnetEnable);
  FIELD(ncclConfig_t, CTAPolicy);
  FIELD(ncclConfig_t, shrinkShare);
  FIELD(ncclConfig_t, nvlsCTAs);
  FIELD(ncclConfig_t, nChannelsPerNetPeer);
  FIELD(ncclConfig_t, nvlinkCentricSched);
  TYPE(struct ncclConfig_v22800);

  /* Byte image of the initializer: catches a field initialised out of order. */
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  const unsigned char* bytes = (const unsigned char*)&config;
  printf("init NCCL_CONFIG_INITIALIZER");
  for (size_t i = 0; i < sizeof config; ++i) printf(" %02x", bytes[i]);
  printf("\n");

  TYPE(ncclSimInfo_t);
  TYPE(struct ncclSimInfo_v22200);
  FIELD(ncclSimInfo_t, size);
  FIELD(ncclSimInfo_t, magic);
  FIELD(ncclSimInfo_t, version);
  FIELD(ncclSimInfo_t, estimatedTime);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  printf("init NCCL_SIM_INFO_INITIALIZER size %zu magic %#x version %u time %a\n", sim.size,
         sim.magic, sim.version, (double)sim.estimatedTime);
}

static void probeDeviceTypes(void) {
  TYPE(ncclDevResourceHandle_t);
  TYPE(ncclGinSignal_t);
  TYPE(ncclGinCounter_t);
  TYPE(ncclGinWindow_t);
  TYPE(ncclTeam_t);
  FIELD(ncclTeam_t, nRanks);
  FIELD(ncclTeam_t, rank);
  FIELD(ncclTeam_t, stride);
  TYPE(ncclMultimemHandle_t);
  FIELD(ncclMultimemHandle_t, mcBasePtr);
  TYPE(ncclLsaBarrierHandle_t);
  FIELD(ncclLsaBarrierHandle_t, bufHandle);
  FIELD(ncclLsaBarrierHandle_t, nBarriers);
  TYPE(ncclGinBarrierHandle_t);
  FIELD(ncclGinBarrierHandle_t, signal0);
  FIELD(ncclGinBarrierHandle_t, bufHandle);
  TYPE(ncclLLA2AHandle_t);
  FIELD(ncclLLA2AHandle_t, bufHandle);
  FIELD(ncclLLA2AHandle_t, nSlots);

  TYPE(struct ncclWindow_vidmem);
  FIELD(struct ncclWindow_vidmem, winHost);
  FIELD(struct ncclWindow_vidmem, lsaFlatBase);
  FIELD(struct ncclWindow_vidmem, lsaRank);
  FIELD(struct ncclWindow_vidmem, worldRank);
  FIELD(struct ncclWindow_vidmem, stride4G);
  FIELD(struct ncclWindow_vidmem, mcOffset4K);
  FIELD(struct ncclWindow_vidmem, ginOffset4K);
  FIELD(struct ncclWindow_vidmem, ginWins);

  TYPE(ncclDevResourceRequirements_t);
  FIELD(ncclDevResourceRequirements_t, next);
  FIELD(ncclDevResourceRequirements_t, bufferSize);
  FIELD(ncclDevResourceRequirements_t, bufferAlign);
  FIELD(ncclDevResourceRequirements_t, outBufferHandle);
  FIELD(ncclDevResourceRequirements_t, ginSignalCount);
  FIELD(ncclDevResourceRequirements_t, ginCounterCount);
  FIELD(ncclDevResourceRequirements_t, outGinSignalStart);
  FIELD(ncclDevResourceRequirements_t, outGinCounterStart);

  TYPE(ncclTeamRequirements_t);
  FIELD(ncclTeamRequirements_t, next);
  FIELD(ncclTeamRequirements_t, team);
  FIELD(ncclTeamRequirements_t, multimem);
  FIELD(ncclTeamRequirements_t, outMultimemHandle);

  TYPE(ncclDevCommRequirements_t);
  FIELD(ncclDevCommRequirements_t, resourceRequirementsList);
  FIELD(ncclDevCommRequirements_t, teamRequirementsList);
  FIELD(ncclDevCommRequirements_t, lsaMultimem);
  FIELD(ncclDevCommRequirements_t, barrierCount);
  FIELD(ncclDevCommRequirements_t, lsaBarrierCount);
  FIELD(ncclDevCommRequirements_t, railGinBarrierCount);
  FIELD(ncclDevCommRequirements_t, lsaLLA2ABlockCount);
  FIELD(ncclDevCommRequirements_t, lsaLLA2ASlotCount);
  FIELD(ncclDevCommRequirements_t, ginForceEnable);
  FIELD(ncclDevCommRequirements_t, ginContextCount);
  FIELD(ncclDevCommRequirements_t, ginSignalCount);
  FIELD(ncclDevCommRequirements_t, ginCounterCount);

  TYPE(ncclDevComm_t);
  FIELD(ncclDevComm_t, rank);
  FIELD(ncclDevComm_t, nRanks);
  FIELD(ncclDevComm_t, nRanks_rcp32);
  FIELD(ncclDevComm_t, lsaRank);
  FIELD(ncclDevComm_t, lsaSize);
  FIELD(ncclDevComm_t, lsaSize_rcp32);
  FIELD(ncclDevComm_t, windowTable);
  FIELD(ncclDevComm_t, resourceWindow);
  FIELD(ncclDevComm_t, resourceWindow_inlined);
  FIELD(ncclDevComm_t, lsaMultimem);
  FIELD(ncclDevComm_t, lsaBarrier);
  FIELD(ncclDevComm_t, railGinBarrier);
  FIELD(ncclDevComm_t, ginContextCount);
  FIELD(ncclDevComm_t, ginTypes);
  FIELD(ncclDevComm_t, ginHandles);
  FIELD(ncclDevComm_t, ginSignalBase);
  FIELD(ncclDevComm_t, ginSignalCount);
  FIELD(ncclDevComm_t, ginCounterBase);
  FIELD(ncclDevComm_t, ginCounterCount);
  FIELD(ncclDevComm_t, ginSignalShadows);
}

/* Every entry point, X(name) for those NVIDIA declares with a pncclX twin. */
#define PROBE_HOST_API(X)                                                                          \
  X(ncclMemAlloc)                                                                                  \
  X(ncclMemFree) X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRankConfig) X(                 \
      ncclCommInitRank) X(ncclCommInitAll) X(ncclCommFinalize) X(ncclCommDestroy) X(ncclCommAbort) \
      X(ncclCommRevoke) X(ncclCommSplit) X(ncclCommShrink) X(ncclCommInitRankScalable)             \
          X(ncclGetErrorString) X(ncclGetLastError) X(ncclResetDebugInit) X(ncclCommGetAsyncError) \
              X(ncclCommCount) X(ncclCommCuDevice) X(ncclCommUserRank) X(ncclCommRegister)         \
                  X(ncclCommDeregister) X(ncclCommWindowRegister) X(ncclCommWindowDeregister)      \
                      X(ncclRedOpCreatePreMulSum) X(ncclRedOpDestroy) X(ncclReduce) X(ncclBcast)   \
                          X(ncclBroadcast) X(ncclAllReduce) X(ncclReduceScatter) X(ncclAllGather)  \
                              X(ncclAlltoAll) X(ncclGather) X(ncclScatter) X(ncclSend) X(ncclRecv) \
                                  X(ncclGroupStart) X(ncclGroupEnd) X(ncclGroupSimulateEnd)
/* The device-API host functions that have no C++ overload in NVIDIA's headers. */
#define PROBE_DEVICE_API(X)                                                                   \
  X(ncclDevCommCreate)                                                                        \
  X(ncclDevCommDestroy) X(ncclLsaBarrierCreateRequirement) X(ncclGinBarrierCreateRequirement) \
      X(ncclLLA2ACalcSlots) X(ncclLLA2ACreateRequirement)

#ifdef __cplusplus
/* The mangled function type spells out the return and every parameter type. */
#define PROBE_SIG(f) printf("sig %s %s\n", #f, typeid(&f).name());
#define PROBE_SIG_P(f) PROBE_SIG(f) PROBE_SIG(p##f)
static void probeSignatures(void) {
  PROBE_HOST_API(PROBE_SIG_P)
  PROBE_DEVICE_API(PROBE_SIG)
  /* NVIDIA overloads these in C++ with inline device-side versions, so &f is ambiguous there.
   * Selecting the exact C signature fails to compile if no declaration has it; sizeof keeps
   * the check unevaluated, so the probe links without any NCCL library. */
  typedef ncclTeam_t (*TeamOf)(ncclComm_t);
  typedef int (*RankIn)(ncclComm_t, ncclTeam_t, int);
  static_assert(sizeof(static_cast<TeamOf>(&ncclTeamWorld)) != 0, "");
  static_assert(sizeof(static_cast<TeamOf>(&ncclTeamLsa)) != 0, "");
  static_assert(sizeof(static_cast<TeamOf>(&ncclTeamRail)) != 0, "");
  static_assert(sizeof(static_cast<RankIn>(&ncclTeamRankToWorld)) != 0, "");
  static_assert(sizeof(static_cast<RankIn>(&ncclTeamRankToLsa)) != 0, "");
}
#else
static void probeSignatures(void) {}
#endif

#if !defined(PROBE_NVIDIA) && !defined(__cplusplus)
/* Braid declares a pncclX for every ncclX, device API included; each must match. */
#define PROBE_SAME_TYPE(f) \
  _Static_assert(__builtin_types_compatible_p(__typeof__(f), __typeof__(p##f)), #f);
PROBE_HOST_API(PROBE_SAME_TYPE)
PROBE_DEVICE_API(PROBE_SAME_TYPE)
PROBE_SAME_TYPE(ncclTeamWorld)
PROBE_SAME_TYPE(ncclTeamLsa) PROBE_SAME_TYPE(ncclTeamRail) PROBE_SAME_TYPE(ncclTeamRankToWorld)
    PROBE_SAME_TYPE(ncclTeamRankToLsa)
#endif

        int main(void) {
  probeScalars();
  probeMacros();
  probeConfig();
  probeDeviceTypes();
  probeSignatures();
  return 0;
}
