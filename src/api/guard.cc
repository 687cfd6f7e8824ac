#include "api/guard.h"

#include <atomic>
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
  return clientCode(status.code());
}

namespace {
std::atomic<bool> client232{false};
}

void noteClientVersion(unsigned version) {
  if (version >= 23200 && !client232.load(std::memory_order_relaxed))
    client232.store(true, std::memory_order_relaxed);
}

ncclResult_t clientCode(ncclResult_t code) {
  if (code == ncclTimeout && !client232.load(std::memory_order_relaxed)) return ncclSystemError;
  return code;
}

std::string globalLastError() {
  std::lock_guard<std::mutex> lock(lastMu);
  return lastError;
}

}  // namespace braid::api
