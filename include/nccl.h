/* Braid: the NCCL 2.32.3 C ABI (a superset of 2.28.9's, which clients built against it keep).
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
#define NCCL_MINOR 32
#define NCCL_PATCH 3
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 23203
/* Codes up to 2.8 give the minor number one decimal digit (2804); later ones give it two
 * (22809), so the formula depends on the version it encodes. */
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))

/* Streams are opaque pointers here. When CUDA's driver_types.h came first its typedef is
 * used; if it comes later, its typedef is the same one and C11/C++ accept the repeat. */
#if !defined(__DRIVER_TYPES_H__) && !defined(__CUDA_RUNTIME_H__) && !defined(CUDART_VERSION)
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
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
  ncclTimeout = 8, /* since 2.32: returned only to clients built against 2.32 (see README) */
  ncclNumResults = 9
} ncclResult_t;

/* ---- Communicator configuration ---------------------------------------------------- */

/* What the initializers put in the magic field of every versioned struct below. */
#define NCCL_API_MAGIC 0xcafebeef

/* "Not set by the user": the library picks its default for such fields. */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* winFlags of ncclCommWindowRegister. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096
#define NCCL_WIN_STRICT_ORDERING 0x02
#define NCCL_WIN_GIN_ONLY 0x04     /* register for GPU-initiated networking only */
#define NCCL_WIN_CFT_COUNTED 0x08  /* register counted CFT endpoints only */

/* Values of ncclConfig_t.CTAPolicy. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* shrinkFlags of ncclCommShrink: ABORT stops the parent's pending work before shrinking. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* revokeFlags of ncclCommRevoke; no flag is defined yet, so it must be 0. */
#define NCCL_REVOKE_DEFAULT 0x00

/* Values of ncclConfig_t.hostCftMode. */
typedef enum {
  ncclHostCftDefault = NCCL_CONFIG_UNDEF_INT,
  ncclHostCftEnable = 1,
  ncclHostCftDisable = 2,
  ncclHostCftFallback = 3
} ncclHostCftMode_t;

/* Bits of ncclConfig_t.nvlsHostMode: which host-side NVLS components are off. */
typedef enum {
  ncclNvlsHostModeDefault = NCCL_CONFIG_UNDEF_INT,
  ncclNvlsHostModeEnable = 0,
  ncclNvlsHostModeDisableTransport = 1 << 0,
  ncclNvlsHostModeDisableSymmetricMultimem = 1 << 1,
  ncclNvlsHostModeDisable = INT_MAX
} ncclNvlsHostMode_t;

/* The struct only ever grows at its end: size and version tell the library which fields an
 * older client knew about, so the tag names the layout's version. */
typedef struct ncclConfig_v23100 {
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
  /* Since 2.31. */
  int graphUsageMode;
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
  int launchOrderImplicit;
  int numRmaSig;
  int rmaEagerInit;
  int hostCftMode;  /* ncclHostCftMode_t */
  int nvlsHostMode; /* ncclNvlsHostMode_t bits */
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                         \
  {                                                                                     \
    sizeof(ncclConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE,                            \
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
        NCCL_CONFIG_UNDEF_INT, /* graphUsageMode */                                     \
        NCCL_CONFIG_UNDEF_INT, /* numRmaCtx */                                          \
        NCCL_CONFIG_UNDEF_INT, /* maxP2pPeers */                                        \
        NCCL_CONFIG_UNDEF_INT, /* graphStreamOrdering */                                \
        NCCL_CONFIG_UNDEF_INT, /* launchOrderImplicit */                                \
        NCCL_CONFIG_UNDEF_INT, /* numRmaSig */                                          \
        NCCL_CONFIG_UNDEF_INT, /* rmaEagerInit */                                       \
        NCCL_CONFIG_UNDEF_INT, /* hostCftMode */                                        \
        NCCL_CONFIG_UNDEF_INT, /* nvlsHostMode */                                       \
  }

/* One vendor option of a per-call config: a (vendor, option) key and a value, chained
 * through next. Braid reads none yet; NVIDIA's NCCL ignores them all. */
typedef struct ncclConfigExt {
  struct ncclConfigExt* next;
  struct {
    int vendorId;
    int optionId;
  } key;
  union {
    int i;
    const char* s;
    void* raw;
  } val;
} ncclConfigExt_t;

/* The per-call config the nccl<Collective>Config functions take (since 2.32). Like
 * ncclConfig_t it only grows at its end and is read by size and version. Every rank must
 * pass the same values. */
typedef struct ncclCollConfig_v23200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ncclConfigExt_t* ext;
  int minCTAs;
  int maxCTAs;
  int nvlsCTAs;
  int cgaClusterSize;
  const char* algSelection; /* the algorithms the call may use; NULL or "": the library picks */
  int forceAlgSelection;    /* 1 (the default): a selection that cannot be met is an error */
  int CTAPolicy;
  uint64_t userProfilerTag;          /* opaque, handed to profiling as is */
  cudaEvent_t launchCompletionEvent; /* recorded once the call is on its stream */
} ncclCollConfig_t;

#define NCCL_COLLCONFIG_INITIALIZER                                                     \
  {                                                                                     \
    sizeof(ncclCollConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE,                        \
        NCCL_CONFIG_UNDEF_PTR, /* ext */                                                \
        NCCL_CONFIG_UNDEF_INT, /* minCTAs */                                            \
        NCCL_CONFIG_UNDEF_INT, /* maxCTAs */                                            \
        NCCL_CONFIG_UNDEF_INT, /* nvlsCTAs */                                           \
        NCCL_CONFIG_UNDEF_INT, /* cgaClusterSize */                                     \
        NCCL_CONFIG_UNDEF_PTR, /* algSelection */                                       \
        1, /* forceAlgSelection */                                                      \
        NCCL_CONFIG_UNDEF_INT, /* CTAPolicy */                                          \
        0, /* userProfilerTag */                                                        \
        NCCL_CONFIG_UNDEF_PTR, /* launchCompletionEvent */                              \
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
    sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION_CODE,                                \
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
/* Growing a communicator (since 2.32). One existing rank (the root) makes an id with
 * ncclCommGetUniqueId and hands it to the new ranks; then every existing rank calls
 * ncclCommGrow(comm, nRanks, id, -1, ...), the root with &id and the others with NULL, and
 * each new rank calls ncclCommGrow(NULL, nRanks, &id, rank, ...) with the rank it is given.
 * Existing ranks keep their numbers; an id serves one grow. */
NCCL_DECLARE_API_(ncclResult_t, ncclCommGetUniqueId, (ncclComm_t comm, ncclUniqueId* uniqueId));
NCCL_DECLARE_API_(ncclResult_t, ncclCommGrow,
                  (ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                   ncclComm_t* newcomm, ncclConfig_t* config));

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

/* Suspending a communicator (since 2.32): it releases what it can until ncclCommResume and
 * takes no calls meanwhile. ncclCommMemStats says how much memory that is. */
#define NCCL_SUSPEND_MEM 0x01
NCCL_DECLARE_API_(ncclResult_t, ncclCommSuspend, (ncclComm_t comm, int flags));
NCCL_DECLARE_API_(ncclResult_t, ncclCommResume, (ncclComm_t comm));
typedef enum {
  ncclStatGpuMemSuspend = 0,   /* bytes a suspend would release */
  ncclStatGpuMemSuspended = 1, /* 1 while suspended, else 0 */
  ncclStatGpuMemPersist = 2,   /* bytes held that a suspend keeps */
  ncclStatGpuMemTotal = 3      /* all bytes the communicator holds */
} ncclCommMemStat_t;
NCCL_DECLARE_API_(ncclResult_t, ncclCommMemStats,
                  (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value));

/* Buffer registration. */
NCCL_DECLARE_API_(ncclResult_t, ncclCommRegister,
                  (const ncclComm_t comm, void* buff, size_t size, void** handle));
NCCL_DECLARE_API_(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle));
NCCL_DECLARE_API_(ncclResult_t, ncclCommWindowRegister,
                  (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags));
NCCL_DECLARE_API_(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));
/* The buffer a window was registered with (since 2.32). */
NCCL_DECLARE_API_(ncclResult_t, ncclWinGetUserPtr,
                  (ncclComm_t comm, ncclWindow_t win, void** outUserPtr));

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

/* The same collectives with a per-call config (since 2.32); a NULL config is the plain call. */
NCCL_DECLARE_API_(ncclResult_t, ncclAllReduceConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                   const ncclCollConfig_t* config));
NCCL_DECLARE_API_(ncclResult_t, ncclBroadcastConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));
NCCL_DECLARE_API_(ncclResult_t, ncclReduceConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                   const ncclCollConfig_t* config));
NCCL_DECLARE_API_(ncclResult_t, ncclAllGatherConfig,
                  (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                   ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));
NCCL_DECLARE_API_(ncclResult_t, ncclReduceScatterConfig,
                  (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                   const ncclCollConfig_t* config));
NCCL_DECLARE_API_(ncclResult_t, ncclAlltoAllConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));
NCCL_DECLARE_API_(ncclResult_t, ncclGatherConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));
NCCL_DECLARE_API_(ncclResult_t, ncclScatterConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));

/* Point to point. */
NCCL_DECLARE_API_(ncclResult_t, ncclSend,
                  (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                   ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_API_(ncclResult_t, ncclRecv,
                  (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                   cudaStream_t stream));

/* One-sided signals into a peer's window (since 2.32). */
NCCL_DECLARE_API_(ncclResult_t, ncclPutSignal,
                  (const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                   ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                   unsigned int flags, ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_API_(ncclResult_t, ncclSignal,
                  (int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                   cudaStream_t stream));
/* Wait for opCnt signals from peer on (sigIdx, ctx). */
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;
NCCL_DECLARE_API_(ncclResult_t, ncclWaitSignal,
                  (int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                   cudaStream_t stream));

/* Groups. */
NCCL_DECLARE_API_(ncclResult_t, ncclGroupStart, (void));
NCCL_DECLARE_API_(ncclResult_t, ncclGroupEnd, (void));
NCCL_DECLARE_API_(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo));

/* Encryption of the library's TCP traffic (since 2.32): TLS with a pre-shared key. */
typedef enum { NCCL_ENCRYPTION_MODE_NONE = 0, NCCL_ENCRYPTION_MODE_PSK = 1 } ncclEncryptionMode_t;
typedef struct ncclEncryptionConfig_v23200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int mode;        /* ncclEncryptionMode_t */
  const char* psk; /* the pre-shared key, for NCCL_ENCRYPTION_MODE_PSK */
} ncclEncryptionConfig_t;
#define NCCL_ENCRYPTION_CONFIG_INITIALIZER                                                   \
  {                                                                                          \
    sizeof(ncclEncryptionConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE,                       \
        NCCL_ENCRYPTION_MODE_NONE, NCCL_CONFIG_UNDEF_PTR,                                    \
  }
NCCL_DECLARE_API_(ncclResult_t, ncclSetEncryption, (const ncclEncryptionConfig_t* config));

/* The library's parameters (since 2.32), by key ("NCCL_..."): typed through a handle, or as
 * strings. Returned strings and tables belong to the library and stay valid until the same
 * thread makes the same call again. */
typedef struct ncclParamHandle* ncclParamHandle_t;
NCCL_DECLARE_API_(ncclResult_t, ncclParamBind, (ncclParamHandle_t * out, const char* key));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetI8, (ncclParamHandle_t h, int8_t* out));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetI16, (ncclParamHandle_t h, int16_t* out));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetI32, (ncclParamHandle_t h, int32_t* out));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetI64, (ncclParamHandle_t h, int64_t* out));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetU8, (ncclParamHandle_t h, uint8_t* out));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetU16, (ncclParamHandle_t h, uint16_t* out));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetU32, (ncclParamHandle_t h, uint32_t* out));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetU64, (ncclParamHandle_t h, uint64_t* out));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetStr, (ncclParamHandle_t h, const char** out));
/* The value's bytes into out (at most maxLen); *len is how many there are. */
NCCL_DECLARE_API_(ncclResult_t, ncclParamGet,
                  (ncclParamHandle_t h, void* out, int maxLen, int* len));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetParameter,
                  (const char* key, const char** value, int* valueLen));
NCCL_DECLARE_API_(ncclResult_t, ncclParamGetAllParameterKeys,
                  (const char*** table, int* tableLen));
NCCL_DECLARE_API_(void, ncclParamDumpAll, (void));

/* ---- Device API: the host side --------------------------------------------------------
 * NCCL declares these in its nccl_device headers, next to device code that needs nvcc.
 * Braid refuses all of them (ncclInvalidUsage), so it declares them with C types: the ones
 * passed or returned by value in full (same size and layout), and the device-side structs
 * (the devcomm, its requirements, what a window points at) only by name; code that fills
 * those structs uses NVIDIA's device headers. NVIDIA's nccl_device/core.h defines
 * _NCCL_DEVICE_CORE_H_ before it includes <nccl.h>; this block then steps aside and lets
 * that header declare the same types and functions, so a CUDA client can use NVIDIA's
 * device headers on top of this one (including this header first and those second is
 * not supported: the types would be defined twice). */
#if !defined(_NCCL_DEVICE_CORE_H_)

typedef uint32_t ncclDevResourceHandle;
typedef ncclDevResourceHandle ncclDevResourceHandle_t;
typedef uint32_t ncclGinSignal_t;
typedef uint32_t ncclGinCounter_t;
typedef uint32_t ncclCftLeId; /* a CFT logical endpoint */
typedef ncclCftLeId ncclCftLeId_t;

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
  ncclDevResourceHandle_t unused; /* bufHandle before 2.32 */
} ncclGinBarrierHandle_t;

typedef struct ncclLLA2AHandle {
  ncclDevResourceHandle_t bufHandle;
  uint32_t nSlots;
} ncclLLA2AHandle_t;

typedef enum {
  NCCL_GIN_CONNECTION_NONE,
  NCCL_GIN_CONNECTION_FULL,
  NCCL_GIN_CONNECTION_RAIL,
  NCCL_GIN_CONNECTION_CUSTOM_STRIDE
} ncclGinConnectionType_t;

/* GPU-initiated networking back ends; NONE accepts any. */
typedef enum {
  NCCL_GIN_TYPE_NONE = 0,
  NCCL_GIN_TYPE_PROXY = 2,
  NCCL_GIN_TYPE_GDAKI = 3,
  NCCL_GIN_TYPE_GPI = 4,
  NCCL_GIN_TYPE_EFA_GDA = 5,
  NCCL_GIN_MAX_TYPES = 6
} ncclGinType_t;

typedef enum {
  NCCL_CFT_TEAM_FLAT,
  NCCL_CFT_TEAM_HIER_MULTIMEM,
  NCCL_CFT_TEAM_HIER_LSA
} ncclCftTeamMode_t;

typedef enum { NCCL_CFT_NONE = 0x0, NCCL_CFT = 0x1, NCCL_CFT_MULTIMEM = 0x2 } ncclCftCap_t;

typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclTeamRequirements ncclTeamRequirements_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;

/* What a communicator offers, filled by ncclCommQueryProperties; read by size and version
 * like ncclConfig_t. */
typedef struct ncclCommProperties {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int rank;
  int nRanks;
  int cudaDev;
  int nvmlDev;
  bool deviceApiSupport;
  bool multimemSupport;
  ncclGinType_t ginType;
  int nLsaTeams;
  bool hostRmaSupport;
  ncclGinType_t railedGinType;
  uint64_t commHash;
  int ginMinStride;
  ncclGinConnectionType_t ginConnectionType;
  bool ginSupport[64]; /* indexed by ncclGinType_t */
  size_t devCommRuntimeVersionSize;
  bool cftSupport;
  bool cftMulticastSupport;
  bool cftCountedSupport;
} ncclCommProperties_t;

#define NCCL_COMM_PROPERTIES_INITIALIZER \
  { sizeof(ncclCommProperties_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, }

NCCL_DECLARE_API_(ncclResult_t, ncclCommQueryProperties,
                  (ncclComm_t comm, ncclCommProperties_t* props));
NCCL_DECLARE_API_(ncclResult_t, ncclDevCommCreate,
                  (ncclComm_t comm, ncclDevCommRequirements_t const* reqs,
                   ncclDevComm_t* outDevComm));
NCCL_DECLARE_API_(ncclResult_t, ncclDevCommDestroy,
                  (ncclComm_t comm, ncclDevComm_t const* devComm));

/* Device addresses of a window's memory: multicast, a load/store peer's, any peer's. */
NCCL_DECLARE_API_(ncclResult_t, ncclGetLsaMultimemDevicePointer,
                  (ncclWindow_t window, size_t offset, void** outPtr));
NCCL_DECLARE_API_(ncclResult_t, ncclGetMultimemDevicePointer,
                  (ncclWindow_t window, size_t offset, ncclMultimemHandle_t multimem,
                   void** outPtr));
NCCL_DECLARE_API_(ncclResult_t, ncclGetLsaDevicePointer,
                  (ncclWindow_t window, size_t offset, int lsaRank, void** outPtr));
NCCL_DECLARE_API_(ncclResult_t, ncclGetPeerDevicePointer,
                  (ncclWindow_t window, size_t offset, int peer, void** outPtr));
/* The same as CFT logical endpoints and offsets. */
NCCL_DECLARE_API_(ncclResult_t, ncclGetMultimemDeviceLeInfo,
                  (ncclWindow_t window, size_t offset, ncclCftLeId* leId, size_t* leOffset));
NCCL_DECLARE_API_(ncclResult_t, ncclGetCftDeviceLeInfo,
                  (ncclWindow_t window, size_t offset, int peerCft, ncclTeam_t cftTeam,
                   ncclCftLeId* leId, size_t* leOffset));
NCCL_DECLARE_API_(ncclResult_t, ncclGetPeerDeviceLeInfo,
                  (ncclWindow_t window, size_t offset, int peerWorld, ncclCftLeId* leId,
                   size_t* leOffset));

/* Teams of the communicator: everyone, the ranks reachable by load/store, this rank's rail
 * (the ranks with the same local index on the other load/store domains), and the CFT
 * teams. */
NCCL_DECLARE_API_(ncclTeam_t, ncclTeamWorld, (ncclComm_t comm));
NCCL_DECLARE_API_(ncclTeam_t, ncclTeamLsa, (ncclComm_t comm));
NCCL_DECLARE_API_(ncclTeam_t, ncclTeamRail, (ncclComm_t comm));
#ifdef __cplusplus
ncclTeam_t ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode = NCCL_CFT_TEAM_FLAT);
ncclTeam_t pncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode = NCCL_CFT_TEAM_FLAT);
#else
NCCL_DECLARE_API_(ncclTeam_t, ncclTeamCft, (ncclComm_t comm, ncclCftTeamMode_t mode));
#endif
NCCL_DECLARE_API_(ncclTeam_t, ncclTeamCftMultimem, (ncclComm_t comm));
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
/* NVIDIA's libnccl.so.2 also exports ncclGinOutboxCreateRequirement and
 * ncclGinInboxA2ACreateRequirement, which its Linux headers do not declare; so does Braid's. */

#endif /* !_NCCL_DEVICE_CORE_H_ */

#undef NCCL_DECLARE_API_

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
