#include <cstdio>
#include <cstdlib>

#include "device_buffers.h"

namespace braid::perf::device {

std::string unavailable() { return "the perf binaries were built without CUDA"; }

namespace {
[[noreturn]] void none() {
  std::fprintf(stderr, "device buffers: %s\n", unavailable().c_str());
  std::exit(2);
}
}  // namespace

void setDevice(int) { none(); }
void* alloc(size_t, bool) { none(); }
void release(void*) {}
void toDevice(void*, const void*, size_t, cudaStream_t) { none(); }
void toHost(void*, const void*, size_t, cudaStream_t) { none(); }
cudaStream_t newStream() { none(); }
void destroyStream(cudaStream_t) {}
void sync(cudaStream_t) { none(); }

}  // namespace braid::perf::device
