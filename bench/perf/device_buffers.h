// -G 1: the perf binaries' buffers in CUDA device memory and their calls on a stream, as
// nccl-tests does; -G 2: pinned host memory (cudaMallocHost) on a stream, which Braid serves in
// stream order without staging. device_buffers_cuda.cc implements it with the CUDA runtime where Braid is built
// with CUDA; device_buffers_none.cc says it cannot. Any failure ends the process with a message.
#pragma once

#include <cstddef>
#include <string>

#include "nccl.h"

namespace braid::perf::device {

// "" when device buffers can be used here, else why not.
std::string unavailable();
void setDevice(int device);
void* alloc(size_t bytes, bool pinnedHost);  // zeroed
void release(void* ptr);                     // either kind
// On `stream`, then waits for it: a plain cudaMemcpy runs on the legacy stream, which a
// non-blocking stream does not wait for (and from pageable memory it may return before the copy
// lands); a device-wide wait could stall behind another rank's stream waiting on this one.
void toDevice(void* dst, const void* src, size_t bytes, cudaStream_t stream);
void toHost(void* dst, const void* src, size_t bytes, cudaStream_t stream);
cudaStream_t newStream();
void destroyStream(cudaStream_t stream);
void sync(cudaStream_t stream);

}  // namespace braid::perf::device
