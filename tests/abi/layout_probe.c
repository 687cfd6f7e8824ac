/* Proves that Braid's include/nccl.h is binary-compatible with NVIDIA's nccl.h.
 *
 * This program prints one line per fact of the ABI: size, alignment and offset of every
 * struct field, every enumerator, every macro's value (and size), the contents of both
 * initializers and, in C++, the mangled type of every entry point. It is built once against
 * NVIDIA's headers and twice against Braid's (as C and as C++); the abi_layout test diffs the
 * outputs. In the Braid builds it also checks at compile time that each pncclX has the type
 * of its ncclX.
 *
 * PROBE_LEVEL says which NCCL the facts are those of. At 23203 (the default) every fact of
 * the 2.32.3 ABI Braid implements is printed, to compare with NVIDIA's 2.32.3 headers. At
 * 22809 only what a client built against 2.28.9 relies on is: the facts 2.32 kept, without
 * the version numbers, the total size of the structs that grew at their end, and the
 * values their initializers put in (a 2.28 client's initializer is compiled into it). Both
 * sides of a comparison are built at the same level.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifndef PROBE_LEVEL
#define PROBE_LEVEL 23203
#endif

#ifdef PROBE_NVIDIA
#include <nccl.h>
#include <nccl_device/core.h>
#include <nccl_device/impl/comm__types.h> /* the handle structs */
#if PROBE_LEVEL >= 23200
#include <nccl_device/host.h> /* ncclCommProperties_t and the host functions */
#endif
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
#define FIELD_AS(T, f, label)                                                                \
  printf("field %s.%s offset %zu size %zu\n", #T, #label, (size_t)offsetof(T, f), \
         sizeof(((T*)0)->f))
#define ENUMV(e) printf("enum %s %lld size %zu\n", #e, (long long)(e), sizeof(e))
#define MACRO_INT(m) printf("macro %s %lld size %zu\n", #m, (long long)(m), sizeof(m))

static void probeBytes(const char* what, const void* data, size_t bytes) {
  printf("init %s", what);
  for (size_t i = 0; i < bytes; ++i) printf(" %02x", ((const unsigned char*)data)[i]);
  printf("\n");
}

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
#if PROBE_LEVEL >= 23200
  ENUMV(ncclTimeout);
  ENUMV(ncclNumResults);
#endif
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
#if PROBE_LEVEL >= 23200
  MACRO_INT(NCCL_MINOR);
  MACRO_INT(NCCL_PATCH);
  MACRO_INT(NCCL_VERSION_CODE);
  MACRO_INT(NCCL_API_MAGIC);
  MACRO_INT(NCCL_WIN_STRICT_ORDERING);
  MACRO_INT(NCCL_WIN_GIN_ONLY);
  MACRO_INT(NCCL_WIN_CFT_COUNTED);
  MACRO_INT(NCCL_SUSPEND_MEM);
  ENUMV(ncclHostCftDefault);
  ENUMV(ncclHostCftEnable);
  ENUMV(ncclHostCftDisable);
  ENUMV(ncclHostCftFallback);
  ENUMV(ncclNvlsHostModeDefault);
  ENUMV(ncclNvlsHostModeEnable);
  ENUMV(ncclNvlsHostModeDisableTransport);
  ENUMV(ncclNvlsHostModeDisableSymmetricMultimem);
  ENUMV(ncclNvlsHostModeDisable);
  ENUMV(ncclStatGpuMemSuspend);
  ENUMV(ncclStatGpuMemSuspended);
  ENUMV(ncclStatGpuMemPersist);
  ENUMV(ncclStatGpuMemTotal);
  TYPE(ncclCommMemStat_t);
  ENUMV(NCCL_ENCRYPTION_MODE_NONE);
  ENUMV(NCCL_ENCRYPTION_MODE_PSK);
  TYPE(ncclParamHandle_t);
  TYPE(ncclWaitSignalDesc_t);
  FIELD(ncclWaitSignalDesc_t, opCnt);
  FIELD(ncclWaitSignalDesc_t, peer);
  FIELD(ncclWaitSignalDesc_t, sigIdx);
  FIELD(ncclWaitSignalDesc_t, ctx);
#endif
  printf("macro NCCL_SUFFIX \"%s\" size %zu\n", NCCL_SUFFIX, sizeof(NCCL_SUFFIX));
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
}

static void probeConfig(void) {
#if PROBE_LEVEL >= 23200
  TYPE(ncclConfig_t);
#else
  printf("type ncclConfig_t align %zu\n", (size_t)PROBE_ALIGNOF(ncclConfig_t));
#endif
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
#if PROBE_LEVEL >= 23200
  FIELD(ncclConfig_t, graphUsageMode);
  FIELD(ncclConfig_t, numRmaCtx);
  FIELD(ncclConfig_t, maxP2pPeers);
  FIELD(ncclConfig_t, graphStreamOrdering);
  FIELD(ncclConfig_t, launchOrderImplicit);
  FIELD(ncclConfig_t, numRmaSig);
  FIELD(ncclConfig_t, rmaEagerInit);
  FIELD(ncclConfig_t, hostCftMode);
  FIELD(ncclConfig_t, nvlsHostMode);
  TYPE(struct ncclConfig_v23100);

  /* Byte images of the initializers: catch a field initialised out of order. */
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  probeBytes("NCCL_CONFIG_INITIALIZER", &config, sizeof config);

  TYPE(ncclConfigExt_t);
  FIELD(ncclConfigExt_t, next);
  FIELD(ncclConfigExt_t, key);
  FIELD(ncclConfigExt_t, key.vendorId);
  FIELD(ncclConfigExt_t, key.optionId);
  FIELD(ncclConfigExt_t, val);
  TYPE(ncclCollConfig_t);
  TYPE(struct ncclCollConfig_v23200);
  FIELD(ncclCollConfig_t, size);
  FIELD(ncclCollConfig_t, magic);
  FIELD(ncclCollConfig_t, version);
  FIELD(ncclCollConfig_t, ext);
  FIELD(ncclCollConfig_t, minCTAs);
  FIELD(ncclCollConfig_t, maxCTAs);
  FIELD(ncclCollConfig_t, nvlsCTAs);
  FIELD(ncclCollConfig_t, cgaClusterSize);
  FIELD(ncclCollConfig_t, algSelection);
  FIELD(ncclCollConfig_t, forceAlgSelection);
  FIELD(ncclCollConfig_t, CTAPolicy);
  FIELD(ncclCollConfig_t, userProfilerTag);
  FIELD(ncclCollConfig_t, launchCompletionEvent);
  ncclCollConfig_t coll = NCCL_COLLCONFIG_INITIALIZER;
  probeBytes("NCCL_COLLCONFIG_INITIALIZER", &coll, sizeof coll);

  TYPE(ncclEncryptionConfig_t);
  TYPE(struct ncclEncryptionConfig_v23200);
  FIELD(ncclEncryptionConfig_t, size);
  FIELD(ncclEncryptionConfig_t, magic);
  FIELD(ncclEncryptionConfig_t, version);
  FIELD(ncclEncryptionConfig_t, mode);
  FIELD(ncclEncryptionConfig_t, psk);
  ncclEncryptionConfig_t encryption = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  probeBytes("NCCL_ENCRYPTION_CONFIG_INITIALIZER", &encryption, sizeof encryption);
#else
  /* A 2.28 client's initializer fills the fields it knows; the values are the same. */
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  printf("init NCCL_CONFIG_INITIALIZER size-field %d magic %#x\n",
         config.size == sizeof config, config.magic);
  probeBytes("NCCL_CONFIG_INITIALIZER fields", &config.blocking,
             offsetof(ncclConfig_t, nvlinkCentricSched) + sizeof(int) -
                 offsetof(ncclConfig_t, blocking));
#endif

  TYPE(ncclSimInfo_t);
  TYPE(struct ncclSimInfo_v22200);
  FIELD(ncclSimInfo_t, size);
  FIELD(ncclSimInfo_t, magic);
  FIELD(ncclSimInfo_t, version);
  FIELD(ncclSimInfo_t, estimatedTime);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  printf("init NCCL_SIM_INFO_INITIALIZER size %zu magic %#x time %a\n", sim.size, sim.magic,
         (double)sim.estimatedTime);
#if PROBE_LEVEL >= 23200
  printf("init NCCL_SIM_INFO_INITIALIZER version %u\n", sim.version);
#endif
}

static void probeDeviceTypes(void) {
  TYPE(ncclDevResourceHandle_t);
  TYPE(ncclGinSignal_t);
  TYPE(ncclGinCounter_t);
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
  /* 2.32 renamed its second field (bufHandle) to unused; the layout is the same. */
#if defined(PROBE_NVIDIA) && PROBE_LEVEL < 23200
  FIELD_AS(ncclGinBarrierHandle_t, bufHandle, second);
#else
  FIELD_AS(ncclGinBarrierHandle_t, unused, second);
#endif
  TYPE(ncclLLA2AHandle_t);
  FIELD(ncclLLA2AHandle_t, bufHandle);
  FIELD(ncclLLA2AHandle_t, nSlots);

#if PROBE_LEVEL >= 23200
  TYPE(ncclCftLeId_t);
  ENUMV(NCCL_GIN_CONNECTION_NONE);
  ENUMV(NCCL_GIN_CONNECTION_FULL);
  ENUMV(NCCL_GIN_CONNECTION_RAIL);
  ENUMV(NCCL_GIN_CONNECTION_CUSTOM_STRIDE);
  TYPE(ncclGinConnectionType_t);
  ENUMV(NCCL_GIN_TYPE_NONE);
  ENUMV(NCCL_GIN_TYPE_PROXY);
  ENUMV(NCCL_GIN_TYPE_GDAKI);
  ENUMV(NCCL_GIN_TYPE_GPI);
  ENUMV(NCCL_GIN_TYPE_EFA_GDA);
  ENUMV(NCCL_GIN_MAX_TYPES);
  TYPE(ncclGinType_t);
  ENUMV(NCCL_CFT_TEAM_FLAT);
  ENUMV(NCCL_CFT_TEAM_HIER_MULTIMEM);
  ENUMV(NCCL_CFT_TEAM_HIER_LSA);
  TYPE(ncclCftTeamMode_t);
  ENUMV(NCCL_CFT_NONE);
  ENUMV(NCCL_CFT);
  ENUMV(NCCL_CFT_MULTIMEM);

  TYPE(ncclCommProperties_t);
  FIELD(ncclCommProperties_t, size);
  FIELD(ncclCommProperties_t, magic);
  FIELD(ncclCommProperties_t, version);
  FIELD(ncclCommProperties_t, rank);
  FIELD(ncclCommProperties_t, nRanks);
  FIELD(ncclCommProperties_t, cudaDev);
  FIELD(ncclCommProperties_t, nvmlDev);
  FIELD(ncclCommProperties_t, deviceApiSupport);
  FIELD(ncclCommProperties_t, multimemSupport);
  FIELD(ncclCommProperties_t, ginType);
  FIELD(ncclCommProperties_t, nLsaTeams);
  FIELD(ncclCommProperties_t, hostRmaSupport);
  FIELD(ncclCommProperties_t, railedGinType);
  FIELD(ncclCommProperties_t, commHash);
  FIELD(ncclCommProperties_t, ginMinStride);
  FIELD(ncclCommProperties_t, ginConnectionType);
  FIELD(ncclCommProperties_t, ginSupport);
  FIELD(ncclCommProperties_t, devCommRuntimeVersionSize);
  FIELD(ncclCommProperties_t, cftSupport);
  FIELD(ncclCommProperties_t, cftMulticastSupport);
  FIELD(ncclCommProperties_t, cftCountedSupport);
  /* NCCL's initializer names only the first three fields (the rest are zero). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
#pragma GCC diagnostic pop
  probeBytes("NCCL_COMM_PROPERTIES_INITIALIZER", &props, sizeof props);
#endif
}

/* Every entry point, X(name) for those NVIDIA declares with a pncclX twin. */
#define PROBE_HOST_API(X)                                                                          \
  X(ncclMemAlloc)                                                                                  \
  X(ncclMemFree) X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRankConfig) X(                 \
      ncclCommInitRank) X(ncclCommInitAll) X(ncclCommFinalize) X(ncclCommDestroy) X(ncclCommAbort) \
      X(ncclCommRevoke) X(ncclCommSplit) X(ncclCommShrink) X(ncclCommInitRankScalable)             \
          X(ncclGetErrorString) X(ncclGetLastError) PROBE_RESET_DEBUG_INIT(X) X(ncclCommGetAsyncError) \
              X(ncclCommCount) X(ncclCommCuDevice) X(ncclCommUserRank) X(ncclCommRegister)         \
                  X(ncclCommDeregister) X(ncclCommWindowRegister) X(ncclCommWindowDeregister)      \
                      X(ncclRedOpCreatePreMulSum) X(ncclRedOpDestroy) X(ncclReduce) X(ncclBcast)   \
                          X(ncclBroadcast) X(ncclAllReduce) X(ncclReduceScatter) X(ncclAllGather)  \
                              X(ncclAlltoAll) X(ncclGather) X(ncclScatter) X(ncclSend) X(ncclRecv) \
                                  X(ncclGroupStart) X(ncclGroupEnd) X(ncclGroupSimulateEnd) \
                                      PROBE_HOST_API_2_32(X)
/* 2.32's header declares ncclResetDebugInit only where NCCL_OS_LINUX is defined, which
 * only NCCL's own build defines; Braid's always declares it (and both libraries export it). */
#if PROBE_LEVEL >= 23200
#define PROBE_RESET_DEBUG_INIT(X)
#else
#define PROBE_RESET_DEBUG_INIT(X) X(ncclResetDebugInit)
#endif
#if PROBE_LEVEL >= 23200
#define PROBE_HOST_API_2_32(X)                                                                  \
  X(ncclCommGetUniqueId) X(ncclCommGrow) X(ncclCommSuspend) X(ncclCommResume)                 \
  X(ncclCommMemStats) X(ncclWinGetUserPtr) X(ncclAllReduceConfig) X(ncclBroadcastConfig)       \
  X(ncclReduceConfig) X(ncclAllGatherConfig) X(ncclReduceScatterConfig) X(ncclAlltoAllConfig)  \
  X(ncclGatherConfig) X(ncclScatterConfig) X(ncclPutSignal) X(ncclSignal) X(ncclWaitSignal)    \
  X(ncclSetEncryption) X(ncclParamBind) X(ncclParamGetI8) X(ncclParamGetI16)                   \
  X(ncclParamGetI32) X(ncclParamGetI64) X(ncclParamGetU8) X(ncclParamGetU16)                   \
  X(ncclParamGetU32) X(ncclParamGetU64) X(ncclParamGetStr) X(ncclParamGet)                     \
  X(ncclParamGetParameter) X(ncclParamGetAllParameterKeys) X(ncclParamDumpAll)
#define PROBE_DEVICE_API_2_32(X)                                                                \
  X(ncclCommQueryProperties) X(ncclGetLsaMultimemDevicePointer) X(ncclGetMultimemDevicePointer) \
  X(ncclGetLsaDevicePointer) X(ncclGetPeerDevicePointer) X(ncclGetMultimemDeviceLeInfo)        \
  X(ncclGetCftDeviceLeInfo) X(ncclGetPeerDeviceLeInfo) X(ncclTeamCft) X(ncclTeamCftMultimem)
#else
#define PROBE_HOST_API_2_32(X)
#define PROBE_DEVICE_API_2_32(X)
#endif
/* The device-API host functions that have no C++ overload in NVIDIA's headers. */
#define PROBE_DEVICE_API(X)                                                                   \
  X(ncclDevCommCreate)                                                                        \
  X(ncclDevCommDestroy) X(ncclLsaBarrierCreateRequirement) X(ncclGinBarrierCreateRequirement) \
      X(ncclLLA2ACalcSlots) X(ncclLLA2ACreateRequirement) PROBE_DEVICE_API_2_32(X)

#ifdef __cplusplus
/* The mangled function type spells out the return and every parameter type. */
#define PROBE_SIG(f) printSig(#f, typeid(&f).name());
/* The config struct's tag names its version (ncclConfig_v22800, ncclConfig_v23100), and the
 * mangled types spell it; calls are extern "C", so only the tag's presence matters to a 2.28
 * client, and the compatibility level prints it without the version. */
static void printSig(const char* name, const char* type) {
  printf("sig %s ", name);
  for (const char* p = type; *p; ++p) {
    if (PROBE_LEVEL < 23200 && strncmp(p, "17ncclConfig_v", 14) == 0) {
      printf("ncclConfig");
      p += 18;
      continue;
    }
    putchar(*p);
  }
  putchar('\n');
}
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
