// The bodies of the CUDA element-wise kernels, as host/device functions over a span of work that
// one of `stride` workers does. A CUDA kernel calls them with its global thread index; the unit
// tests call them on the CPU with every worker index in turn, so the CPU runs the very code the
// device runs (pack/tail split, fused outputs, every type and op) and compares it with the host
// loops and the oracle.
//
// Work is cut into 16-byte packs (one 128-bit load per operand, one store per output) when every
// pointer is 16-byte aligned; otherwise, and for the tail, element by element. Worker w takes
// packs w, w + stride, ... and then tail elements the same way, so consecutive workers touch
// consecutive memory (coalesced on the device).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/functors.h"

#if defined(__CUDA_ARCH__)  // the device pass only: host compilers do not know the pragma
#define BRAID_UNROLL _Pragma("unroll")
#else
#define BRAID_UNROLL
#endif

namespace braid::kernels {

template <typename T>
struct alignas(16) Pack {
  static constexpr int kCount = 16 / sizeof(T);
  T v[kCount];
};

// Copies and identity maps use this: a "functor" that returns its operand.
template <typename T>
struct FuncCopy {
  BRAID_HOST_DEVICE BRAID_INLINE T operator()(T v) const { return v; }
};

BRAID_HOST_DEVICE BRAID_INLINE bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

// dst[i] = func(a[i], b[i]); dst2[i] too when dst2 is not null (the fused receive-reduce-send:
// the result is stored locally and into the buffer that goes to the next rank). dst may alias a
// or b exactly.
template <typename T, typename Func>
BRAID_HOST_DEVICE BRAID_INLINE void reduceSpan(const Func& func, T* dst, T* dst2, const T* a,
                                               const T* b, size_t count, size_t worker,
                                               size_t stride) {
  constexpr size_t kN = Pack<T>::kCount;
  const bool packed = aligned16(dst) && aligned16(a) && aligned16(b) && (!dst2 || aligned16(dst2));
  const size_t packs = packed ? count / kN : 0;
  for (size_t p = worker; p < packs; p += stride) {
    const Pack<T> x = reinterpret_cast<const Pack<T>*>(a)[p];
    const Pack<T> y = reinterpret_cast<const Pack<T>*>(b)[p];
    Pack<T> out;
    BRAID_UNROLL
    for (size_t j = 0; j < kN; ++j) out.v[j] = func(x.v[j], y.v[j]);
    reinterpret_cast<Pack<T>*>(dst)[p] = out;
    if (dst2) reinterpret_cast<Pack<T>*>(dst2)[p] = out;
  }
  for (size_t i = packs * kN + worker; i < count; i += stride) {
    const T out = func(a[i], b[i]);
    dst[i] = out;
    if (dst2) dst2[i] = out;
  }
}

// dst[i] = func(src[i]): copy (FuncCopy), PreMulSum's scaling, Avg's division. dst may be src.
template <typename T, typename Func>
BRAID_HOST_DEVICE BRAID_INLINE void mapSpan(const Func& func, T* dst, const T* src, size_t count,
                                            size_t worker, size_t stride) {
  constexpr size_t kN = Pack<T>::kCount;
  const size_t packs = aligned16(dst) && aligned16(src) ? count / kN : 0;
  for (size_t p = worker; p < packs; p += stride) {
    const Pack<T> x = reinterpret_cast<const Pack<T>*>(src)[p];
    Pack<T> out;
    BRAID_UNROLL
    for (size_t j = 0; j < kN; ++j) out.v[j] = func(x.v[j]);
    reinterpret_cast<Pack<T>*>(dst)[p] = out;
  }
  for (size_t i = packs * kN + worker; i < count; i += stride) dst[i] = func(src[i]);
}

}  // namespace braid::kernels
