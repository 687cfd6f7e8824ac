// CUDA element-wise kernels: reduction for every type and op, the fused receive-reduce-send
// (result stored locally and into the outgoing buffer in one pass), copy, PreMulSum's scaling and
// Avg's division. Their bodies are kernels/pack.h over the functors of kernels/functors.h, the
// same code the host loops and the CPU tests run. One dispatch table (kernels.cu), built for the
// types and ops BRAID_CUDA_TYPES / BRAID_CUDA_OPS select; asking for one left out is
// ncclInvalidUsage naming the option. Every call is asynchronous on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "nccl.h"

namespace braid::cuda {

// A CUDA error as a Status ("cudaMemcpyAsync: invalid argument").
Status cudaStatus(cudaError_t err, const char* what);

// Threads per block of every kernel here and in the CUDA codecs.
constexpr unsigned kThreadsPerBlock = 256;
// Blocks of kThreadsPerBlock for `workers` grid-stride workers on the current device: enough to
// fill it (8 resident blocks per SM) and no more than the work needs.
unsigned gridBlocks(size_t workers);

// Whether this build has kernels for (type, op); Avg counts as Sum.
bool built(ncclDataType_t type, ncclRedOp_t op);

// dst[i] = a[i] OP b[i]. dst may be a or b.
Status reduce(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
              ncclRedOp_t op, cudaStream_t stream);
// dst[i] = dst2[i] = a[i] OP b[i]: a ring step that reduces what it received and forwards it.
Status reduceCopy(void* dst, void* dst2, const void* a, const void* b, size_t count,
                  ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream);
Status copy(void* dst, const void* src, size_t bytes, cudaStream_t stream);
// dst[i] = src[i] * *scalar; `scalar` is one element of `type` in host memory, read now.
Status scale(void* dst, const void* src, size_t count, ncclDataType_t type, const void* scalar,
             cudaStream_t stream);
Status finishAvg(void* data, size_t count, ncclDataType_t type, int nranks, cudaStream_t stream);

// Holds `stream` until (int32_t)(*flag - value) >= 0, reading host-mapped memory from a kernel:
// the fallback where cuStreamWaitValue32 is not supported.
Status waitFlagKernel(const volatile uint32_t* flag, uint32_t value, cudaStream_t stream);
// Writes `value` to `word` once what `stream` wrote before is visible system-wide (a fence): the
// fallback where cuStreamWriteValue32 is not supported.
Status writeWordKernel(volatile uint32_t* word, uint32_t value, cudaStream_t stream);

}  // namespace braid::cuda
