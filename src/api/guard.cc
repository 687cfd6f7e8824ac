#include "api/guard.h"

#include <mutex>
#include <string>

#include "core/comm/comm.h"

namespace braid::api {
namespace {

// ncclGetLastError(NULL) answers with the most recent failure of any call in the process.
std::mutex lastMu;
std::string lastError;

}  // namespace

ncclResult_t fail(ncclComm* comm, const char* function, const Status& status) {
  std::string text = std::string(function) + ": " + status.message();
  BRAID_WARN("%s", text.c_str());
  {
    std::lock_guard<std::mutex> lock(lastMu);
    lastError = text;
  }
  if (comm && comm->magic == ncclComm::kMagic) comm->setLastError(text);
  return status.code();
}

std::string globalLastError() {
  std::lock_guard<std::mutex> lock(lastMu);
  return lastError;
}

}  // namespace braid::api
