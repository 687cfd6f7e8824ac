/* Braid: the NCCL 2.28.9 C ABI.
 *
 * Braid's own text for NCCL's public interface: every type, enumerator, macro and struct
 * layout a client compiled against NVIDIA's nccl.h relies on, so that the same binary runs
 * on Braid's libnccl.so.2. tests/abi/ compares this header with NVIDIA's field by field.
 *
 * It compiles as C and as C++ without the CUDA toolkit: CUDA types appear only as opaque
 * pointers. Nothing Braid-specific lives here (see include/braid/).
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#if !defined(__cplusplus)
#include <stdbool.h> /* the device-API structs carry bool fields */
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 22809
/* Codes up to 2.8 give the minor number one decimal digit (2804); later ones give it two
 * (22809), so the formula depends on the version it encodes. */
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))

/* Streams are opaque pointers here. When CUDA's driver_types.h came first its typedef is
 * used; if it comes later, its typedef is the same one and C11/C++ accept the repeat. */
#if !defined(__DRIVER_TYPES_H__) && !defined(__CUDA_RUNTIME_H__) && !defined(CUDART_VERSION)
typedef struct CUstream_st* cudaStream_t;
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Handles and identifiers ------------------------------------------------------- */

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

/* ---- Communicator configuration ---------------------------------------------------- */

/* "Not set by the user": the library picks its default for such fields. */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* winFlags of ncclCommWindowRegister. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* Values of ncclConfig_t.CTAPolicy. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* shrinkFlags of ncclCommShrink: ABORT stops the parent's pending work before shrinking. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* revokeFlags of ncclCommRevoke; no flag is defined yet, so it must be 0. */
#define NCCL_REVOKE_DEFAULT 0x00

/* The struct only ever grows at its end: size and version tell the library which fields an
 * older client knew about, so the tag names the layout's version. */
typedef struct ncclConfig_v22800 {
  size_t size;          /* sizeof(ncclConfig_t) as the client saw it */
  unsigned int magic;   /* 0xcafebeef: proves the struct went through the initializer */
  unsigned int version; /* NCCL_VERSION_CODE the client was built with */
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                         \
  {                                                                                     \
    sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
        NCCL_CONFIG_UNDEF_INT, /* blocking */                                           \
        NCCL_CONFIG_UNDEF_INT, /* cgaClusterSize */                                     \
        NCCL_CONFIG_UNDEF_INT, /* minCTAs */                                            \
        NCCL_CONFIG_UNDEF_INT, /* maxCTAs */                                            \
        NCCL_CONFIG_UNDEF_PTR, /* netName */                                            \
        NCCL_CONFIG_UNDEF_INT, /* splitShare */                                         \
        NCCL_CONFIG_UNDEF_INT, /* trafficClass */                                       \
        NCCL_CONFIG_UNDEF_PTR, /* commName */                                           \
        NCCL_CONFIG_UNDEF_INT, /* collnetEnable */                                      \
        NCCL_CONFIG_UNDEF_INT, /* CTAPolicy */                                          \
        NCCL_CONFIG_UNDEF_INT, /* shrinkShare */                                        \
        NCCL_CONFIG_UNDEF_INT, /* nvlsCTAs */                                           \
        NCCL_CONFIG_UNDEF_INT, /* nChannelsPerNetPeer */                                \
        NCCL_CONFIG_UNDEF_INT, /* nvlinkCentricSched */                                 \
  }

/* Output of ncclGroupSimulateEnd. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic; /* 0x74685283 */
  unsigned int version;
  float estimatedTime; /* microseconds; NCCL_UNDEF_FLOAT until simulated */
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER                                                        \
  {                                                                                      \
    sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
        NCCL_UNDEF_FLOAT                                                                 \
  }

/* ---- Reduction operators and data types -------------------------------------------- */

/* Exists only so that ncclMaxRedOp can be written in terms of the size an enum has. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;

/* Values from ncclNumOps up to ncclMaxRedOp are handles made by ncclRedOpCreatePreMulSum.
 * ncclMaxRedOp is the largest positive value that keeps the enum at the size it always had. */
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where the scalar of ncclRedOpCreatePreMulSum lives: Device means it is read when the
 * collective runs; HostImmediate means it is copied at creation. */
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* ---- Functions --------------------------------------------------------------------- */

/* Every entry point has a p-prefixed twin (the profiling interface) with the same
 * signature; declaring both keeps the pair from drifting apart. */
#define NCCL_DECLARE_API_(ret, name, params) \
  ret name params;                           \
  ret p##name params

NCCL_DECLARE_API_(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size));
NCCL_DECLARE_API_(ncclResult_t, ncclMemFree, (void* ptr));

NCCL_DECLARE_API_(ncclResult_t, ncclGetVersion, (int* version));
NCCL_DECLARE_API_(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId));

/* Communicator lifetime. */
NCCL_DECLARE_API_(ncclResult_t, ncclCommInitRankConfig,
                  (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank,
                   ncclConfig_t* config));
NCCL_DECLARE_API_(ncclResult_t, ncclCommInitRank,
                  (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank));
NCCL_DECLARE_API_(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist));
NCCL_DECLARE_API_(ncclResult_t, ncclCommFinalize, (ncclComm_t comm));
NCCL_DECLARE_API_(ncclResult_t, ncclCommDestroy, (ncclComm_t comm));
NCCL_DECLARE_API_(ncclResult_t, ncclCommAbort, (ncclComm_t comm));
NCCL_DECLARE_API_(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags));
NCCL_DECLARE_API_(ncclResult_t, ncclCommSplit,
                  (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config));
NCCL_DECLARE_API_(ncclResult_t, ncclCommShrink,
                  (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                   ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags));
/* Several ids spread the rendezvous of a very large job over several roots. */
NCCL_DECLARE_API_(ncclResult_t, ncclCommInitRankScalable,
                  (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                   ncclConfig_t* config));

/* Errors and state. */
NCCL_DECLARE_API_(const char*, ncclGetErrorString, (ncclResult_t result));
NCCL_DECLARE_API_(const char*, ncclGetLastError, (ncclComm_t comm));
/* Kept for old binaries only; new code should not call it. */
#if defined(__GNUC__)
__attribute__((deprecated("ncclResetDebugInit is kept for binary compatibility only")))
#endif
void ncclResetDebugInit(void);
#if defined(__GNUC__)
__attribute__((deprecated("pncclResetDebugInit is kept for binary compatibility only")))
#endif
void pncclResetDebugInit(void);
NCCL_DECLARE_API_(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError));
NCCL_DECLARE_API_(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count));
NCCL_DECLARE_API_(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device));
NCCL_DECLARE_API_(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank));

/* Buffer registration. */
NCCL_DECLARE_API_(ncclResult_t, ncclCommRegister,
                  (const ncclComm_t comm, void* buff, size_t size, void** handle));
NCCL_DECLARE_API_(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle));
NCCL_DECLARE_API_(ncclResult_t, ncclCommWindowRegister,
                  (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags));
NCCL_DECLARE_API_(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));

/* Custom reduction operators. */
NCCL_DECLARE_API_(ncclResult_t, ncclRedOpCreatePreMulSum,
                  (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype,
                   ncclScalarResidence_t residence, ncclComm_t comm));
NCCL_DECLARE_API_(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm));

/* Collectives. */
NCCL_DECLARE_API_(ncclResult_t, ncclReduce,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream));
/* In-place broadcast, older than ncclBroadcast. */
NCCL_DECLARE_API_(ncclResult_t, ncclBcast,
                  (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                   cudaStream_t stream));
NCCL_DECLARE_API_(ncclResult_t, ncclBroadcast,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_API_(ncclResult_t, ncclAllReduce,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_API_(ncclResult_t, ncclReduceScatter,
                  (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_API_(ncclResult_t, ncclAllGather,
                  (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                   ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_API_(ncclResult_t, ncclAlltoAll,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_API_(ncclResult_t, ncclGather,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_API_(ncclResult_t, ncclScatter,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream));

/* Point to point. */
NCCL_DECLARE_API_(ncclResult_t, ncclSend,
                  (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                   ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_API_(ncclResult_t, ncclRecv,
                  (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                   cudaStream_t stream));

/* Groups. */
NCCL_DECLARE_API_(ncclResult_t, ncclGroupStart, (void));
NCCL_DECLARE_API_(ncclResult_t, ncclGroupEnd, (void));
NCCL_DECLARE_API_(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo));

/* ---- Device API: the host side --------------------------------------------------------
 * NCCL declares these in its nccl_device headers, next to device code that needs nvcc.
 * Here they are declared with C types of the same size and layout: clients pass ncclTeam_t
 * by value and get it back by value. NVIDIA's nccl_device/core.h defines
 * _NCCL_DEVICE_CORE_H_ before it includes <nccl.h>; this block then steps aside and lets
 * that header declare the same types and functions, so a CUDA client can use NVIDIA's
 * device headers on top of this one (including this header first and those second is
 * not supported: the structs would be defined twice). */
#if !defined(_NCCL_DEVICE_CORE_H_)

typedef uint32_t ncclDevResourceHandle;
typedef ncclDevResourceHandle ncclDevResourceHandle_t;
typedef uint32_t ncclGinSignal_t;
typedef uint32_t ncclGinCounter_t;

#define NCCL_GIN_MAX_CONTEXTS 4
typedef void* ncclGinWindow_t;

/* A strided subset of the ranks: its size, this rank's index in it, and the distance in
 * world ranks between consecutive members. */
typedef struct ncclTeam {
  int nRanks, rank, stride;
} ncclTeam_t;

typedef struct ncclMultimemHandle {
  void* mcBasePtr;
} ncclMultimemHandle_t;

typedef struct ncclLsaBarrierHandle {
  ncclDevResourceHandle_t bufHandle;
  int nBarriers;
} ncclLsaBarrierHandle_t;

typedef struct ncclGinBarrierHandle {
  ncclGinSignal_t signal0;
  ncclDevResourceHandle_t bufHandle;
} ncclGinBarrierHandle_t;

typedef struct ncclLLA2AHandle {
  ncclDevResourceHandle_t bufHandle;
  uint32_t nSlots;
} ncclLLA2AHandle_t;

/* What ncclWindow_t points to. Device code reads it directly, so its layout is ABI;
 * the library's own bookkeeping hangs off winHost. */
struct ncclWindow_vidmem {
  void* winHost;
  char* lsaFlatBase;
  int lsaRank;
  int worldRank;
  uint32_t stride4G;
  uint32_t mcOffset4K;
  uint32_t ginOffset4K;
  ncclGinWindow_t ginWins[NCCL_GIN_MAX_CONTEXTS];
};

typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclTeamRequirements ncclTeamRequirements_t;

/* A resource request, chained through next; the out* targets are filled in by
 * ncclDevCommCreate. */
struct ncclDevResourceRequirements {
  ncclDevResourceRequirements_t* next;
  size_t bufferSize, bufferAlign;
  ncclDevResourceHandle_t* outBufferHandle;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinSignal_t* outGinSignalStart;
  ncclGinCounter_t* outGinCounterStart;
};

struct ncclTeamRequirements {
  ncclTeamRequirements_t* next;
  ncclTeam_t team;
  bool multimem;
  ncclMultimemHandle_t* outMultimemHandle;
};

typedef struct ncclDevCommRequirements {
  ncclDevResourceRequirements_t* resourceRequirementsList;
  ncclTeamRequirements_t* teamRequirementsList;
  bool lsaMultimem;
  int barrierCount;
  int lsaBarrierCount;
  int railGinBarrierCount;
  int lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  bool ginForceEnable;
  int ginContextCount; /* a hint: the created devcomm may hold a different number */
  int ginSignalCount;  /* signals and counters are numbered from 0 */
  int ginCounterCount;
} ncclDevCommRequirements_t;

struct ncclDevCommWindowTable; /* device-side lookup table; only ever used by pointer */

/* Filled in by ncclDevCommCreate and passed by value to kernels. */
typedef struct ncclDevComm {
  int rank, nRanks;
  uint32_t nRanks_rcp32; /* reciprocals let device code divide by multiplying */
  int lsaRank, lsaSize;
  uint32_t lsaSize_rcp32;
  struct ncclDevCommWindowTable* windowTable;
  ncclWindow_t resourceWindow;
  struct ncclWindow_vidmem resourceWindow_inlined;
  ncclMultimemHandle_t lsaMultimem;
  ncclLsaBarrierHandle_t lsaBarrier;
  ncclGinBarrierHandle_t railGinBarrier;
  uint8_t ginContextCount;
  uint8_t ginTypes[4];
  void* ginHandles[4];
  uint32_t ginSignalBase;
  int ginSignalCount;
  uint32_t ginCounterBase;
  int ginCounterCount;
  uint64_t* ginSignalShadows;
} ncclDevComm_t;

NCCL_DECLARE_API_(ncclResult_t, ncclDevCommCreate,
                  (ncclComm_t comm, ncclDevCommRequirements_t const* reqs,
                   ncclDevComm_t* outDevComm));
NCCL_DECLARE_API_(ncclResult_t, ncclDevCommDestroy,
                  (ncclComm_t comm, ncclDevComm_t const* devComm));

/* Teams of the communicator: everyone, the ranks reachable by load/store, and this rank's
 * rail (the ranks with the same local index on the other load/store domains). */
NCCL_DECLARE_API_(ncclTeam_t, ncclTeamWorld, (ncclComm_t comm));
NCCL_DECLARE_API_(ncclTeam_t, ncclTeamLsa, (ncclComm_t comm));
NCCL_DECLARE_API_(ncclTeam_t, ncclTeamRail, (ncclComm_t comm));
NCCL_DECLARE_API_(int, ncclTeamRankToWorld, (ncclComm_t comm, ncclTeam_t team, int rank));
NCCL_DECLARE_API_(int, ncclTeamRankToLsa, (ncclComm_t comm, ncclTeam_t team, int rank));

NCCL_DECLARE_API_(ncclResult_t, ncclLsaBarrierCreateRequirement,
                  (ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t* outHandle,
                   ncclDevResourceRequirements_t* outReq));
NCCL_DECLARE_API_(ncclResult_t, ncclGinBarrierCreateRequirement,
                  (ncclComm_t comm, ncclTeam_t team, int nBarriers,
                   ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq));
NCCL_DECLARE_API_(int, ncclLLA2ACalcSlots, (int maxElts, int maxEltSize));
NCCL_DECLARE_API_(ncclResult_t, ncclLLA2ACreateRequirement,
                  (int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                   ncclDevResourceRequirements_t* outReq));

#endif /* !_NCCL_DEVICE_CORE_H_ */

#undef NCCL_DECLARE_API_

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
