/* Braid's extensions to the NCCL API: gradient compression per communicator and per call,
 * asynchronous collectives on host memory (host streams), and a communicator's timeout.
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

/* ---- Host streams: asynchronous collectives on host memory ------------------------------------
 *
 * A host stream is Braid's stand-in for a CUDA stream when the buffers are host memory. Pass it,
 * cast to cudaStream_t, as the stream argument of any collective or ncclSend/ncclRecv on host
 * buffers: the call is checked and planned, queued, and returns at once; a progress thread runs
 * it. Without a host stream (any other stream value) host calls complete before they return, as
 * before. Passing a host stream with device buffers is ncclInvalidArgument.
 *
 * Order: calls on one stream run in the order they were made; calls on one communicator run in
 * the order they were made whatever their streams (NCCL's rule that every rank makes a
 * communicator's calls in the same order is what matches their messages), except that calls of
 * a higher priority class run beside lower ones (below). Communicators progress concurrently.
 * ncclGroupStart/ncclGroupEnd keep their meaning: the group's calls are queued together at the
 * outermost ncclGroupEnd and run together, after what each of their streams queued before.
 * A blocking call (no host stream) on a communicator first waits for what is queued on it.
 *
 * Buffers belong to Braid from the call until its completion is reported (query, synchronize or
 * callback); Braid never touches them after that, whether the call succeeded or failed.
 *
 * Errors: a call that fails while queued marks its communicator failed (ncclCommGetAsyncError),
 * and the stream keeps its first error (sticky, as CUDA's are): later calls queued on it fail
 * without running, and Query, Synchronize and callbacks report it. ncclCommAbort fails what is
 * queued on the communicator and stops what runs; ncclCommDestroy and ncclCommFinalize wait for
 * it. */
typedef struct braidHostStream* braidHostStream_t;

/* Priority, as CUDA's stream priorities: lower numbers are more urgent. 0 is the normal class;
 * -1, -2 and -3 are higher classes (values above 0 act as 0, below -3 as -3). When calls of a
 * higher class are queued on a communicator while a lower one runs, the lower one pauses
 * between chunks until they are done, so a small urgent call does not wait behind a large one. Each class of a communicator has its own connections, made at
 * its first call: every rank must give a call the same class. */
ncclResult_t braidHostStreamCreate(braidHostStream_t* stream, int priority);
ncclResult_t braidHostStreamGetPriority(braidHostStream_t stream, int* priority);
/* Waits for the stream's work, then frees it. */
ncclResult_t braidHostStreamDestroy(braidHostStream_t stream);
/* ncclSuccess when everything queued on the stream so far is complete, ncclInProgress while
 * some is not, else the stream's error. */
ncclResult_t braidHostStreamQuery(braidHostStream_t stream);
/* Waits until everything queued on the stream so far is complete; returns the stream's error
 * (ncclGetLastError has its text). */
ncclResult_t braidHostStreamSynchronize(braidHostStream_t stream);

/* Called once everything queued on the stream before it is complete, with ncclSuccess or the
 * stream's error and its text (NULL on success). It runs on a Braid progress thread, or at once
 * on the calling thread when the stream is idle; a stream's callbacks run one at a time, in the
 * order they were added. It must be short and must not wait for Braid work. */
typedef void (*braidHostCallback_t)(ncclResult_t result, const char* message, void* arg);
ncclResult_t braidHostStreamAddCallback(braidHostStream_t stream, braidHostCallback_t callback,
                                        void* arg);

/* ---- Telemetry --------------------------------------------------------------------------------
 *
 * What a communicator's connections carried and what its operations took, counted since init on
 * every transport alike: the bytes and messages Braid handed each connection to move (its call
 * signatures, the small messages ranks compare to catch mismatched calls, included; a
 * transport's own framing and encryption not), so that on two ranks one's bytesSent to the
 * other equals the other's bytesReceived from it once their calls are done. The connections of
 * its priority classes (host streams) are included. Readable from any thread at any time; a
 * call in flight may be partly counted. */
typedef struct {
  uint64_t bytesSent;
  uint64_t bytesReceived;
  uint64_t messagesSent;
  uint64_t messagesReceived;
  uint64_t errors; /* operations on the connection that failed (transport error, peer lost) */
  /* Timed calls only (braidCommStats_t::timedCalls), in nanoseconds summed over them: from a
   * call's start until its last operation on this connection was done (busy); of that, the
   * waits in which nothing moved on any connection while this one had operations in flight
   * (stall, timed from where a wait first sleeps or has gone 256 rounds idle, so waits of a
   * few microseconds are not in it); and how much later this peer's first
   * message of a call came than the earliest first message from any peer (arrival skew, over
   * skewCalls calls: those in which two peers or more sent to this rank). */
  uint64_t busyNs;
  uint64_t stallNs;
  uint64_t arrivalSkewNs;
  uint64_t skewCalls;
  /* The online link model: the time per MiB this connection took while it moved data (busy
   * less stall, over the larger direction's bytes), a decaying average over timed calls that
   * moved 256 KiB or more on it (each weighs 1/8; 0: none yet); what the cost model prices for
   * the pair (its link's 1/bandwidth at the pair's level); and that level (0: one host, 1: one
   * rack, 2: across racks, ...; all three 0 until a timed call ran on it). A flat ring's measured time includes its waits for the other
   * hops, so compare connections with each other and over time, not with the price alone. */
  double measuredUsPerMiB;
  double modelUsPerMiB;
  /* TCP: the kernel's TCP_INFO (segments sent again since the connection opened, smoothed
   * round-trip time of the slowest socket, congestion windows summed), read at the end of a
   * timed call at most every 100 ms; 0 on other transports. */
  uint64_t tcpRetransmits;
  uint32_t tcpRttUs;
  uint32_t tcpCwnd;
  int level;
  /* TCP: the path's own time per MiB, from TCP_INFO: the time the kernel had this side's data
   * to send with the receiver's window open, over the bytes the peer acknowledged meanwhile,
   * between two reads that saw 256 KiB or more acknowledged, decaying as measuredUsPerMiB. It
   * leaves out the algorithm's waits (nothing queued on the socket), so it is the link's rate
   * under the traffic it carried, comparable with modelUsPerMiB; 0 until measured and on other
   * transports. The kernel times this in scheduler ticks (1-4 ms), so it is good over many
   * calls, not one. */
  double tcpPathUsPerMiB;
} braidPeerStats_t;

typedef struct {
  uint64_t calls;       /* operations run: each collective, ncclSend and ncclRecv */
  uint64_t failedCalls; /* of those, the ones that failed */
  uint64_t callNs;      /* the time of the timed ones (timedCalls) from start to end, summed (a
                           group's calls run together: each counts the group's time) */
  uint64_t timedCalls;  /* the calls callNs covers: those of 64 KiB or more per rank (or in a
                           group with one), and every call of a communicator that adapts
                           (docs/adaptation.md); timing costs two clock reads, which would be a
                           tenth of an 8-byte call on shared memory */
  /* The sums of every peer's braidPeerStats_t: */
  uint64_t bytesSent;
  uint64_t bytesReceived;
  uint64_t messagesSent;
  uint64_t messagesReceived;
  uint64_t errors;
  /* Plan changes so far: re-plans after the network changed, and undoing one that measured
   * slower (BRAID_ADAPT; docs/adaptation.md). The same on every rank after the same calls. */
  uint64_t planChanges;
  /* The rank the others wait for: one whose large calls persistently start late (named at
   * NCCL_DEBUG=WARN when found), and by how much, in microseconds; -1 and 0 when none. Measured
   * where adaptation runs (docs/adaptation.md). */
  int64_t lateRank;
  uint64_t lateUs;
  /* A host the topology probe (at init, or run again when the communicator re-planned) found
   * slower than the others, by its lowest rank, and the fastest of its links the probe
   * measured, in Gbit/s; -1 and 0 when none (docs/adaptation.md). */
  int64_t slowRank;
  double slowGbps;
} braidCommStats_t;

ncclResult_t braidCommGetStats(ncclComm_t comm, braidCommStats_t* stats);
/* The connection to rank `peer` of comm (not its own rank). */
ncclResult_t braidCommGetPeerStats(ncclComm_t comm, int peer, braidPeerStats_t* stats);

/* The calls made with a per-call config's userProfilerTag (ncclCollConfig_t, NCCL 2.32), per
 * nonzero tag, counted as braidCommStats_t counts calls (these calls are in it too), plus their
 * data: count x type size on this rank, summed. */
typedef struct {
  uint64_t tag;
  uint64_t calls;
  uint64_t failedCalls;
  uint64_t timedCalls;
  uint64_t callNs;
  uint64_t bytes;
} braidTagStats_t;
/* A communicator keeps the first 64 distinct tags it sees; calls under later tags are counted in
 * *untracked alone (may be NULL). *count: in, the room in `stats` (which may be NULL when it is
 * 0); out, how many tags there are (entries past the room are not written). In the order the
 * tags were first seen. */
ncclResult_t braidCommGetTagStats(ncclComm_t comm, braidTagStats_t* stats, int* count,
                                  uint64_t* untracked);

/* Time a collective of comm may wait without progress before it fails (BRAID_TIMEOUT_MS for
 * this communicator; 0: no limit). Set it on every rank alike. */
ncclResult_t braidCommSetTimeout(ncclComm_t comm, int64_t timeoutMs);

#ifdef __cplusplus
}
#endif

#endif /* BRAID_BRAID_H_ */
