// Host reduction kernels: one entry point per shape of work, dispatched once at run time to the
// best instruction set (AVX-512, AVX2, or portable), over every NCCL data type.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace braid::kernels {

size_t typeSize(ncclDataType_t type);       // 0 for an invalid type
const char* typeName(ncclDataType_t type);  // nccl-tests' names: "float", "half", "bfloat16", ...
const char* opName(ncclRedOp_t op);         // "sum", "prod", "max", "min", "avg"

// dst[i] = a[i] OP b[i] for OP in {Sum, Prod, Max, Min}. dst may alias a or b.
// Avg reduces as Sum; finishAvg() applies the division once at the end.
void reduce(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
            ncclRedOp_t op);

// reduce() for a destination nothing will read soon, of a call too large for the caches: the
// results are written around the cache (KernelTable::streamCopy), which saves reading every
// destination line first. Same bits as reduce().
void reduceStreamed(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
                    ncclRedOp_t op);

// memcpy with non-temporal stores (see reduceStreamed), fenced: visible to other threads once
// it returns, like memcpy.
void streamCopy(void* dst, const void* src, size_t bytes);

// Avg's last step: floating types multiply by 1/nranks (rounded once); integers divide.
void finishAvg(void* data, size_t count, ncclDataType_t type, int nranks);

// dst[i] = src[i] * scalar, computed in the type's compute precision (PreMulSum).
// `scalar` points at one element of `type`.
void scale(void* dst, const void* src, size_t count, ncclDataType_t type, const void* scalar);

// "avx512", "avx2" or "generic": what reduce() dispatches to on this machine.
const char* isaName();

}  // namespace braid::kernels
