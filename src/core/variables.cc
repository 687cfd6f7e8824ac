#include "core/variables.h"

namespace braid::env {

const Var kNcclAlgo = {"NCCL_ALGO", nullptr,
                       "algorithms allowed: \"ring,tree\", \"^ring\" (all but), per collective "
                       "\"allreduce:tree;allgather:ring\"; Braid's names (BRAID_ALGO lists them); "
                       "the cost model picks among those allowed"};
const Var kNcclCommId = {
    "NCCL_COMM_ID", nullptr,
    "host:port of the bootstrap root; makes the unique id deterministic and rank 0 hosts the root"};
const Var kBraidAdapt = {
    "BRAID_ADAPT", "1",
    "1: a communicator whose racks came from the probe watches its large calls against the cost "
    "model and, when they run persistently off it, re-probes and re-plans at a call all ranks "
    "agree on (docs/adaptation.md); 0: the plan made at init stays"};
const Var kBraidAlgo = {
    "BRAID_ALGO", nullptr,
    "force an algorithm by name (direct, hierdirect, ring, rhd, tree, hier, hierpipe, rackring, "
    "chain, pairwise, p2p, c2shot, c2hier, csparse, csparsehier) for every collective it "
    "implements; the cost model chooses for the others"};
const Var kBraidBootstrapRootTimeoutMs = {
    "BRAID_BOOTSTRAP_ROOT_TIMEOUT_MS", "300000",
    "the bootstrap root gives up after this long without a new rank: the ranks that arrived "
    "fail naming the missing ones, and its thread exits"};
const Var kBraidCheckMismatch = {
    "BRAID_CHECK_MISMATCH", "1",
    "1: ranks exchange a signature of each call and fail mismatched calls (different collective, "
    "type, op, root or count) with ncclInvalidUsage naming both; 0: off"};
const Var kBraidChunkBytes = {"BRAID_CHUNK_BYTES", "524288",
                              "pipeline chunk size in bytes for schedules"};
const Var kBraidCompress = {
    "BRAID_COMPRESS", "none",
    "AllReduce compression of each communicator: none, int8 (INT8 blocks), topk or "
    "topk:<ratio> (top-k, default 0.01), auto (int8 where the cost model predicts a gain, never "
    "inside a host). Lossy; Sum and Avg on float, half and bfloat16 only; per call through "
    "include/braid/braid.h (docs/compression.md)"};
const Var kBraidCompressFeedback = {
    "BRAID_COMPRESS_FEEDBACK", "1",
    "1: error feedback (what a compressed call did not send is added to the same buffer's next "
    "call); 0: dropped"};
const Var kBraidCompressMinBytes = {
    "BRAID_COMPRESS_MIN_BYTES", "1048576",
    "AllReduce calls smaller than this stay exact under compression"};
const Var kBraidCuda = {
    "BRAID_CUDA", "1",
    "0: device-memory support off even where a CUDA driver and device are present (host memory "
    "only, no CUDA call on any collective's path); 1: on wherever the build, a driver and a "
    "device allow it"};
const Var kBraidDeviceIpc = {
    "BRAID_DEVICE_IPC", "0",
    "1: a communicator whose ranks are all on one host runs its collectives on device buffers on "
    "the devices over CUDA IPC (no staging or progress thread; every rank must then call with "
    "device buffers, as with NCCL; not yet run on a GPU); 0: through pinned host staging"};
const Var kBraidDeviceIpcSlotBytes = {
    "BRAID_DEVICE_IPC_SLOT_BYTES", "1048576",
    "BRAID_DEVICE_IPC: the piece a message crosses in (a rank's mailbox holds 4 per peer, so a "
    "sender runs at most 4 pieces ahead of its receiver)"};
const Var kBraidDeviceStreamCopyBytes = {
    "BRAID_DEVICE_STREAM_COPY_BYTES", "1048576",
    "device buffers: a call (or a group's part on one communicator) needing up to this many bytes "
    "of pinned staging is staged on the caller's stream; a larger one by the progress thread on "
    "its own stream, holding staging only while it runs"};
const Var kBraidDevicePieceBytes = {
    "BRAID_DEVICE_PIECE_BYTES", "2097152",
    "device buffers staged by the progress thread: the piece it copies at a time, so a call's "
    "schedule starts on the first pieces of its input and its output goes back piece by piece "
    "(1024 pieces a call at most); 0: whole calls (the input copied before the schedule starts, "
    "the output after it ends)"};
const Var kBraidDirectMaxBytes = {
    "BRAID_DIRECT_MAX_BYTES", "65536",
    "largest AllReduce (bytes per rank) the one-hop direct algorithm may take; the cost model "
    "decides below it"};
const Var kBraidInitTimeoutMs = {
    "BRAID_INIT_TIMEOUT_MS", "600000",
    "the longest init waits (reaching the bootstrap root, the rendezvous, connecting to peers) "
    "before it fails naming what it waited for; twice as long in ncclCommSplit and "
    "ncclCommShrink; 0: no limit. The default is PyTorch's process-group timeout"};
const Var kBraidStatsFile = {
    "BRAID_STATS_FILE", nullptr,
    "write each communicator's telemetry (braidCommStats_t, every peer's and every profiler "
    "tag's) as JSON lines to "
    "this file, every BRAID_STATS_INTERVAL_MS and when it is destroyed; %h host, %p pid as in "
    "NCCL_DEBUG_FILE; tools/braid-stats reads it"};
const Var kBraidStatsIntervalMs = {
    "BRAID_STATS_INTERVAL_MS", "1000",
    "with BRAID_STATS_FILE: milliseconds between lines (0: only when a communicator is "
    "destroyed)"};
const Var kBraidTimeoutMs = {
    "BRAID_TIMEOUT_MS", "0",
    "0: no timeout (NCCL's default); otherwise a collective that makes no progress for this long "
    "fails with ncclRemoteError (peer gone) or a timeout (ncclTimeout for clients of NCCL 2.32, "
    "ncclSystemError for older ones), naming the ranks it awaited; init then waits no longer "
    "than this either"};

List coreVariables() {
  static const Var* const kList[] = {&kNcclAlgo,
                                     &kNcclCommId,
                                     &kBraidAdapt,
                                     &kBraidAlgo,
                                     &kBraidBootstrapRootTimeoutMs,
                                     &kBraidCheckMismatch,
                                     &kBraidChunkBytes,
                                     &kBraidCompress,
                                     &kBraidCompressFeedback,
                                     &kBraidCompressMinBytes,
                                     &kBraidCuda,
                                     &kBraidDeviceIpc,
                                     &kBraidDeviceIpcSlotBytes,
                                     &kBraidDevicePieceBytes,
                                     &kBraidDeviceStreamCopyBytes,
                                     &kBraidDirectMaxBytes,
                                     &kBraidInitTimeoutMs,
                                     &kBraidStatsFile,
                                     &kBraidStatsIntervalMs,
                                     &kBraidTimeoutMs};
  return kList;
}

}  // namespace braid::env
