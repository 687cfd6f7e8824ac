/* Braid's extensions to the NCCL API: gradient compression per communicator and per call.
 *
 * These functions are exported by libbraid.so only. libnccl.so.2 exports exactly NCCL's own
 * names (the drop-in promise), so a program that wants them links -lbraid (which also holds the
 * whole NCCL API); a program loaded against libnccl.so.2 uses BRAID_COMPRESS instead.
 *
 * Compression is lossy and off by default. It applies to ncclAllReduce with ncclSum or ncclAvg
 * on float, half and bfloat16 buffers of at least minBytes; every other call stays exact (the
 * first such fallback of a communicator is logged at NCCL_DEBUG=INFO). All ranks must use the
 * same policy for a call: ranks that disagree fail it with ncclInvalidUsage. */
#ifndef BRAID_BRAID_H_
#define BRAID_BRAID_H_

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  braidCompressNone = 0, /* exact */
  braidCompressInt8 = 1, /* INT8 block quantisation, two-shot AllReduce */
  braidCompressTopK = 2, /* top-k sparsification, sparse all-gather */
  /* INT8 where the cost model predicts a net gain (slow links, large calls); never when every
   * rank shares one host's memory. */
  braidCompressAuto = 3
} braidCompressCodec_t;

typedef struct {
  braidCompressCodec_t codec;
  double topkRatio;       /* top-k: fraction of elements sent, (0, 1] */
  int blockSize;          /* int8: elements per scale, 32 to 256 */
  int stochasticRounding; /* int8: 1 stochastic (unbiased), 0 to nearest */
  int errorFeedback;      /* 1: what a call did not send is added to the buffer's next call */
  size_t minBytes;        /* calls smaller than this stay exact */
} braidCompressPolicy_t;

/* Defaults: codec none, ratio 0.01, blockSize BRAID_COMPRESS_BLOCK, nearest rounding, error
 * feedback BRAID_COMPRESS_FEEDBACK, minBytes BRAID_COMPRESS_MIN_BYTES. */
ncclResult_t braidCompressPolicyInit(braidCompressPolicy_t* policy);
/* The defaults above with BRAID_COMPRESS's syntax applied: "none", "int8", "topk",
 * "topk:0.05", "auto". */
ncclResult_t braidCompressPolicyParse(const char* text, braidCompressPolicy_t* policy);

/* The policy of every call on comm that does not use a compressed op (initially
 * BRAID_COMPRESS). Set it on every rank alike. */
ncclResult_t braidCommSetCompression(ncclComm_t comm, const braidCompressPolicy_t* policy);

/* A reduction op that is `base` (ncclSum or ncclAvg) with `policy`, for the calls (gradient
 * buckets) a framework chooses to compress. Free it with ncclRedOpDestroy. */
ncclResult_t braidRedOpCreateCompressed(ncclComm_t comm, ncclRedOp_t base,
                                        const braidCompressPolicy_t* policy, ncclRedOp_t* op);

/* Forget error-feedback residuals of comm: those of one buffer (every count and type used
 * with it), or all of comm's when buffer is NULL. */
ncclResult_t braidCompressReset(ncclComm_t comm, const void* buffer);

typedef struct {
  size_t residualBytes;        /* residual memory held for this communicator */
  size_t residualEntries;      /* tensors (buffer, count, type) with a residual */
  size_t residualCapacity;     /* BRAID_COMPRESS_STATE_BYTES, shared by all communicators */
  size_t processResidualBytes; /* held for all communicators of the process */
  uint64_t evictions;          /* residuals dropped to stay within the bound (process) */
  uint64_t refused;            /* residuals too large for the bound (process) */
  uint64_t compressedCalls;    /* calls of this communicator that ran compressed */
  uint64_t exactCalls;         /* calls that asked for compression and ran exact */
} braidCompressStats_t;

ncclResult_t braidCompressStats(ncclComm_t comm, braidCompressStats_t* stats);

#ifdef __cplusplus
}
#endif

#endif /* BRAID_BRAID_H_ */
