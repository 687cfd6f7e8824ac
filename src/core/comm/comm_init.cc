#include "core/comm/comm_init.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>

#include "base/env.h"
#include "base/log.h"
#include "core/device/device.h"
#include "core/variables.h"

namespace braid {

void logVersionOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    BRAID_INFO(kInit, "Braid %s (NCCL %d.%d.%d ABI)", BRAID_VERSION_STRING, NCCL_MAJOR, NCCL_MINOR,
               NCCL_PATCH);
  });
}

namespace {

// Settings read from the environment once per communicator, so a running communicator never
// changes behaviour under a later setenv.
Status applyEnvironment(ncclComm* comm) {
  comm->timeoutMs = env::getInt(env::kBraidTimeoutMs);
  comm->chunkBytes = static_cast<size_t>(std::max<int64_t>(1, env::getInt(env::kBraidChunkBytes)));
  comm->checkMismatch = env::getInt(env::kBraidCheckMismatch) != 0;
  comm->directMaxBytes =
      static_cast<size_t>(std::max<int64_t>(0, env::getInt(env::kBraidDirectMaxBytes)));
  if (const char* algo = env::get(env::kBraidAlgo)) comm->forcedAlgorithm = algo;
  if (const char* spec = env::get(env::kNcclAlgo))
    BRAID_TRY(algos::AlgoFilter::parse(spec, &comm->algoFilter));
  // A bad value fails init, as a bad NCCL_ALGO does, naming the variable.
  CompressPolicy policy = defaultCompressPolicy();
  if (const char* spec = env::get(env::kBraidCompress))
    BRAID_TRY(parseCompressPolicy(spec, "BRAID_COMPRESS", &policy));
  comm->compression.setDefaultPolicy(policy);
  if (policy.codec != braidCompressNone)
    BRAID_INFO(kInit, "rank %d: compression %s", comm->rank,
               describeCompressPolicy(policy).c_str());
  return Status::Ok();
}

}  // namespace

Status createComm(const InitRequest& request, ncclComm** out) {
  *out = nullptr;
  logVersionOnce();
  auto comm = std::make_unique<ncclComm>();
  comm->rank = request.rank;
  comm->nranks = request.nranks;
  comm->config = request.config;
  comm->twinOf = request.twinOf;
  // The same on every rank of the communicator and different for every other one (its id
  // names a rendezvous that serves once): FNV-1a over the id's bytes.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : request.id.internal) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  comm->commHash = hash;
  BRAID_TRY(applyEnvironment(comm.get()));
  // Init never waits forever by default (BRAID_INIT_TIMEOUT_MS); a collective timeout that is
  // shorter bounds it too.
  int64_t initMs = std::max<int64_t>(0, env::getInt(env::kBraidInitTimeoutMs));
  if (comm->timeoutMs > 0 && (initMs == 0 || comm->timeoutMs < initMs)) initMs = comm->timeoutMs;
  comm->initTimeoutMs = request.staggered ? 2 * initMs : initMs;
  // The device is the caller's, so it is read here on the caller's thread, before a
  // non-blocking init moves to its own.
  device::probe();
  BRAID_TRY(device::bindDevice(request.cudaDev, &comm->cudaDev));

  if (request.config.blocking) {
    BRAID_TRY(comm->init(request.id, request.hostRoot));
    if (request.onReady) request.onReady(comm.get());
    *out = comm.release();
    return Status::Ok();
  }
  // Non-blocking: the rendezvous runs on a thread; callers poll ncclCommGetAsyncError.
  ncclComm* c = comm.release();
  c->asyncError.store(ncclInProgress);
  c->initThread = std::thread([c, request] {
    Status st = c->init(request.id, request.hostRoot);
    if (!st.ok() && request.onAsyncFailure) request.onAsyncFailure(c, st);
    if (st.ok() && request.onReady) request.onReady(c);
    c->asyncError.store(st.code());
  });
  *out = c;
  return {ncclInProgress, ""};
}

}  // namespace braid
