// Braid's compression extensions (include/braid/braid.h).
#include "api/guard.h"
#include "braid/braid.h"
#include "core/async/engine.h"
#include "core/comm/comm.h"
#include "core/plan/compression.h"

using braid::Status;
using braid::api::guard;

BRAID_EXT_API(ncclResult_t, braidCompressPolicyInit, braidCompressPolicy_t* policy) {
  return guard(nullptr, "braidCompressPolicyInit", [&]() -> Status {
    if (!policy) return braid::invalidArgument("policy is NULL");
    *policy = braid::defaultCompressPolicy();
    return Status::Ok();
  });
}

BRAID_EXT_API(ncclResult_t, braidCompressPolicyParse, const char* text,
              braidCompressPolicy_t* policy) {
  return guard(nullptr, "braidCompressPolicyParse", [&]() -> Status {
    if (!text) return braid::invalidArgument("text is NULL");
    if (!policy) return braid::invalidArgument("policy is NULL");
    braidCompressPolicy_t p = braid::defaultCompressPolicy();
    BRAID_TRY(braid::parseCompressPolicy(text, "text", &p));
    *policy = p;
    return Status::Ok();
  });
}

BRAID_EXT_API(ncclResult_t, braidCommSetCompression, ncclComm_t comm,
              const braidCompressPolicy_t* policy) {
  return guard(comm, "braidCommSetCompression", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (!policy) return braid::invalidArgument("policy is NULL");
    BRAID_TRY(braid::checkCompressPolicy(*policy, "policy"));
    comm->compression.setDefaultPolicy(*policy);
    for (ncclComm* twin : braid::async::twins(comm)) twin->compression.setDefaultPolicy(*policy);
    return Status::Ok();
  });
}

BRAID_EXT_API(ncclResult_t, braidRedOpCreateCompressed, ncclComm_t comm, ncclRedOp_t base,
              const braidCompressPolicy_t* policy, ncclRedOp_t* op) {
  return guard(comm, "braidRedOpCreateCompressed", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (!policy) return braid::invalidArgument("policy is NULL");
    BRAID_TRY(braid::checkCompressPolicy(*policy, "policy"));
    return comm->redOps.createCompressed(base, *policy, op);
  });
}

BRAID_EXT_API(ncclResult_t, braidCompressReset, ncclComm_t comm, const void* buffer) {
  return guard(comm, "braidCompressReset", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    auto& store = braid::residualStore();
    if (buffer)
      store.resetBuffer(comm->compression.id(), reinterpret_cast<uintptr_t>(buffer));
    else
      store.resetComm(comm->compression.id());
    return Status::Ok();
  });
}

BRAID_EXT_API(ncclResult_t, braidCompressStats, ncclComm_t comm, braidCompressStats_t* stats) {
  return guard(comm, "braidCompressStats", [&]() -> Status {
    BRAID_TRY(braid::api::checkComm(comm));
    if (!stats) return braid::invalidArgument("stats is NULL");
    auto& store = braid::residualStore();
    const braid::compress::ResidualStats all = store.stats();
    const braid::compress::ResidualStats mine = store.statsFor(comm->compression.id());
    *stats = braidCompressStats_t{};
    stats->residualBytes = mine.bytes;
    stats->residualEntries = mine.entries;
    stats->residualCapacity = all.capacity;
    stats->processResidualBytes = all.bytes;
    stats->evictions = all.evictions;
    stats->refused = all.refused;
    stats->compressedCalls = comm->compression.compressedCalls.load();
    stats->exactCalls = comm->compression.exactCalls.load();
    return Status::Ok();
  });
}
