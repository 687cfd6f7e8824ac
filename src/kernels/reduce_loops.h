// The host reduction loops, compiled once per ISA: each including translation unit defines
// BRAID_ISA_NAMESPACE and gets its own copy, built with its own target flags, from which it
// builds its table() (makeTable(), with rows replaced where it has something faster). Deliberately
// no include guard, and everything lives in an unnamed namespace inside the ISA's namespace, so no
// AVX-512 instantiation can be merged by the linker into the generic path (the shared helpers of
// types.h and functors.h are always inlined, for the same reason).
//
// The loops are plain element-wise loops over the shared functors; the compiler vectorises them
// (the functors and conversions are branch-free for that reason). dst may be a or b exactly, so
// there is no loop-carried dependence and the ivdep pragma is true; partial overlap is not
// supported.
#ifndef BRAID_ISA_NAMESPACE
#error "define BRAID_ISA_NAMESPACE before including reduce_loops.h"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "kernels/functors.h"
#include "kernels/isa.h"
#include "nccl.h"

#if defined(__clang__)
#define BRAID_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#else
#define BRAID_IVDEP _Pragma("GCC ivdep")
#endif

namespace braid::kernels::BRAID_ISA_NAMESPACE {
namespace {

template <typename T, template <typename> class Func>
void reduceLoop(void* dstv, const void* av, const void* bv, size_t count) {
  T* dst = static_cast<T*>(dstv);
  const T* a = static_cast<const T*>(av);
  const T* b = static_cast<const T*>(bv);
  const Func<T> func;
  BRAID_IVDEP
  for (size_t i = 0; i < count; ++i) dst[i] = func(a[i], b[i]);
}

template <typename T>
void scaleLoop(void* dstv, const void* srcv, size_t count, const void* scalarv) {
  T* dst = static_cast<T*>(dstv);
  const T* src = static_cast<const T*>(srcv);
  const FuncScale<T> func{ElemTraits<T>::load(*static_cast<const T*>(scalarv))};
  BRAID_IVDEP
  for (size_t i = 0; i < count; ++i) dst[i] = func(src[i]);
}

template <typename T>
void finishAvgLoop(void* datav, size_t count, int nranks) {
  T* data = static_cast<T*>(datav);
  const FuncFinishAvg<T> func = FuncFinishAvg<T>::make(nranks);
  for (size_t i = 0; i < count; ++i) data[i] = func(data[i]);
}

// Non-temporal stores of whole 64-byte lines: the destination's lines are written without
// first being read into the cache (no read-for-ownership), and do not push other data out of
// it. The unaligned head and tail go through memcpy. No fence: the caller's streamFence().
void streamCopyLoop(void* dstv, const void* srcv, size_t n) {
  char* dst = static_cast<char*>(dstv);
  const char* src = static_cast<const char*>(srcv);
#if defined(__SSE2__)
  const size_t head = (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64;
  if (n < head + 64) {
    std::memcpy(dst, src, n);
    return;
  }
  std::memcpy(dst, src, head);
  dst += head, src += head, n -= head;
  for (; n >= 64; n -= 64, dst += 64, src += 64) {
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_loadu_si512(src));
#elif defined(__AVX2__)
    __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), x0);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32), x1);
#else
    __m128i x[4];
    for (int k = 0; k < 4; ++k)
      x[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * k));
    for (int k = 0; k < 4; ++k) _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16 * k), x[k]);
#endif
  }
#endif
  std::memcpy(dst, src, n);
}

template <typename T>
constexpr void fillRow(KernelTable& t, ncclDataType_t type) {
  t.reduce[type][0] = &reduceLoop<T, FuncSum>;
  t.reduce[type][1] = &reduceLoop<T, FuncProd>;
  t.reduce[type][2] = &reduceLoop<T, FuncMax>;
  t.reduce[type][3] = &reduceLoop<T, FuncMin>;
  t.scale[type] = &scaleLoop<T>;
  t.finishAvg[type] = &finishAvgLoop<T>;
}

constexpr KernelTable makeTable() {
  KernelTable t{};
  fillRow<int8_t>(t, ncclInt8);
  fillRow<uint8_t>(t, ncclUint8);
  fillRow<int32_t>(t, ncclInt32);
  fillRow<uint32_t>(t, ncclUint32);
  fillRow<int64_t>(t, ncclInt64);
  fillRow<uint64_t>(t, ncclUint64);
  fillRow<Half>(t, ncclFloat16);
  fillRow<float>(t, ncclFloat32);
  fillRow<double>(t, ncclFloat64);
  fillRow<BFloat16>(t, ncclBfloat16);
  fillRow<Fp8E4M3>(t, ncclFloat8e4m3);
  fillRow<Fp8E5M2>(t, ncclFloat8e5m2);
  t.streamCopy = &streamCopyLoop;
  return t;
}

}  // namespace
}  // namespace braid::kernels::BRAID_ISA_NAMESPACE

#undef BRAID_IVDEP
