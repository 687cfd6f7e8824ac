// The one C-boundary guard. Every extern "C" entry point runs its body through guard(), which
// turns a Status or any exception into an ncclResult_t and records the message that
// ncclGetLastError returns. Nothing thrown inside Braid crosses into the caller.
#pragma once

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <utility>

#include "base/log.h"
#include "base/status.h"
#include "nccl.h"

struct ncclComm;

namespace braid::api {

// Records the failure (per thread, and on the communicator when there is one) and logs it.
// Returns the code the client sees (clientCode).
ncclResult_t fail(ncclComm* comm, const char* function, const Status& status);

// ncclTimeout (NCCL 2.32) as the client knows it: itself for a client built against 2.32 or
// later, ncclSystemError (what timeouts were before) for older ones. A process counts as such a
// client once it has passed a struct whose version field says 2.32 or later, or called a
// function 2.32 added (noteClientVersion); every other code goes through unchanged.
ncclResult_t clientCode(ncclResult_t code);
void noteClientVersion(unsigned version);
inline void noteClient232() { noteClientVersion(23200); }

template <typename Body>
ncclResult_t guard(ncclComm* comm, const char* function, Body&& body) noexcept {
  try {
    Status status = std::forward<Body>(body)();
    if (status.ok() || status.code() == ncclInProgress) return status.code();
    return fail(comm, function, status);
  } catch (const std::bad_alloc&) {
    return fail(comm, function, systemError("out of host memory"));
  } catch (const std::exception& e) {
    return fail(comm, function, internalError("unexpected exception: %s", e.what()));
  } catch (...) {
    return fail(comm, function, internalError("unexpected exception"));
  }
}

}  // namespace braid::api

// Defines ncclX with default visibility and pncclX as its alias (NCCL's profiling names).
#define BRAID_API(ret, name, ...)                                                           \
  extern "C" __attribute__((visibility("default"))) ret name(__VA_ARGS__);                  \
  extern "C" __attribute__((visibility("default"), alias(#name))) ret p##name(__VA_ARGS__); \
  extern "C" ret name(__VA_ARGS__)

// Defines one of Braid's own extensions (include/braid/braid.h): default visibility, no alias.
// libbraid.so exports them; libnccl.so.2's version script hides them.
#define BRAID_EXT_API(ret, name, ...)                                      \
  extern "C" __attribute__((visibility("default"))) ret name(__VA_ARGS__); \
  extern "C" ret name(__VA_ARGS__)

namespace braid::api {
std::string globalLastError();
// The int a C caller passed for an enum parameter. A value outside the enum's range (a mistake
// to report) cannot be read as the C++ enum without undefined behaviour, so checks read the
// parameter's bytes; it is used as the enum only once it checked out.
template <typename E>
int enumValue(const E& value) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &value, sizeof v);
  return v;
}
// A communicator handle the caller passed: null and garbage handles are argument errors, a
// communicator that failed or was aborted is a usage error naming why.
Status checkComm(ncclComm* comm, const char* name = "comm");
// Only that the handle is a live, initialised communicator: what the calls that remain legal
// on a failed or revoked communicator (shrink, split) require.
Status checkCommHandle(ncclComm* comm, const char* name = "comm");
}  // namespace braid::api
