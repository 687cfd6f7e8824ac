// Host-only builds: no device support, ever. Nothing here is reached on a call's path except
// probe() at init and drain()/shutdown(), which have nothing to do.
#include "core/device/device.h"

#include <mutex>

#include "base/log.h"

namespace braid::device {

void probe() {
  static std::once_flag once;
  std::call_once(once, [] {
    BRAID_INFO(kInit, "built without CUDA: device-memory support off, host memory only");
  });
}

Status deviceCount(int* count) {
  *count = 0;
  return Status::Ok();
}

Status bindDevice(int, int* device) {
  *device = -1;
  return Status::Ok();
}

bool offersIpc(const ncclComm*) { return false; }

Status joinIpc(ncclComm*) { return Status::Ok(); }

Status classify(const ncclComm*, const Buffers&, bool, Placement* where) {
  *where = {};
  return Status::Ok();
}

Status checkStream(cudaStream_t) { return Status::Ok(); }

Status submit(std::span<Plan>) { return internalError("device plans in a build without CUDA"); }

Status drain(ncclComm*) { return Status::Ok(); }

Status suspend(ncclComm*, size_t* pinnedBytes) {
  *pinnedBytes = 0;
  return Status::Ok();
}
void shutdown(ncclComm*) {}

Status memAlloc(size_t, void**, bool* handled) {
  *handled = false;
  return Status::Ok();
}

Status recordEvent(cudaEvent_t event, cudaStream_t) {
  return invalidArgument(
      "launchCompletionEvent %p: this Braid runs without CUDA (host memory only), so it has no "
      "event to record",
      static_cast<void*>(event));
}

Status memFree(void*, bool* handled) {
  *handled = false;
  return Status::Ok();
}

}  // namespace braid::device
