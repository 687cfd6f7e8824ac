// Host streams and the communicator timeout (include/braid/braid.h). The engine behind them is
// core/async/engine.h.
#include "api/guard.h"
#include "braid/braid.h"
#include "core/async/engine.h"
#include "core/comm/comm.h"

using braid::Status;
using braid::api::guard;

BRAID_EXT_API(ncclResult_t, braidHostStreamCreate, braidHostStream_t* stream, int priority) {
  return guard(nullptr, "braidHostStreamCreate", [&]() -> Status {
    if (!stream) return braid::invalidArgument("stream is NULL");
    *stream = nullptr;
    return braid::async::createStream(priority, stream);
  });
}

BRAID_EXT_API(ncclResult_t, braidHostStreamGetPriority, braidHostStream_t stream, int* priority) {
  return guard(nullptr, "braidHostStreamGetPriority", [&]() -> Status {
    BRAID_TRY(braid::async::checkStream(stream, "stream"));
    if (!priority) return braid::invalidArgument("priority is NULL");
    *priority = braid::async::streamPriority(stream);
    return Status::Ok();
  });
}

BRAID_EXT_API(ncclResult_t, braidHostStreamDestroy, braidHostStream_t stream) {
  return guard(nullptr, "braidHostStreamDestroy", [&]() -> Status {
    BRAID_TRY(braid::async::checkStream(stream, "stream"));
    return braid::async::destroyStream(stream);
  });
}

BRAID_EXT_API(ncclResult_t, braidHostStreamQuery, braidHostStream_t stream) {
  return guard(nullptr, "braidHostStreamQuery", [&]() -> Status {
    BRAID_TRY(braid::async::checkStream(stream, "stream"));
    return braid::async::query(stream);
  });
}

BRAID_EXT_API(ncclResult_t, braidHostStreamSynchronize, braidHostStream_t stream) {
  return guard(nullptr, "braidHostStreamSynchronize", [&]() -> Status {
    BRAID_TRY(braid::async::checkStream(stream, "stream"));
    return braid::async::synchronize(stream);
  });
}

BRAID_EXT_API(ncclResult_t, braidHostStreamAddCallback, braidHostStream_t stream,
              braidHostCallback_t callback, void* arg) {
  return guard(nullptr, "braidHostStreamAddCallback", [&]() -> Status {
    BRAID_TRY(braid::async::checkStream(stream, "stream"));
    return braid::async::addCallback(stream, callback, arg);
  });
}

BRAID_EXT_API(ncclResult_t, braidCommSetTimeout, ncclComm_t comm, int64_t timeoutMs) {
  return guard(comm, "braidCommSetTimeout", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (timeoutMs < 0)
      return braid::invalidArgument("timeoutMs %lld is negative (0: no limit)",
                                    static_cast<long long>(timeoutMs));
    comm->timeoutMs = timeoutMs;
    for (ncclComm* twin : braid::async::twins(comm)) twin->timeoutMs = timeoutMs;
    return Status::Ok();
  });
}
