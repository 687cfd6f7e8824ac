// Loops for half and bfloat16 over explicit vector conversions, for the SIMD translation units:
// the portable bit-trick conversions vectorise, but well below memory bandwidth (the 16 <-> 32
// bit widening and narrowing is where the compiler loses). Included after reduce_loops.h,
// inside the same per-ISA namespace and for the same reason without an include guard.
//
// The including unit supplies a policy V per element type:
//   using Elem = Half or BFloat16;  kType = its ncclDataType_t;  kWidth elements per block;
//   using F, U, I = GCC vectors of float, uint32_t, int32_t of the same width;
//   template <class Op> static void block(Elem* dst, const Elem* a, const Elem* b, Op op):
//     dst[0, kWidth) = op(a, b), with op applied to F vectors (possibly several of them) and
//     the results rounded as types.h does.
// The vector conversions agree with types.h bit for bit, NaN payloads included (the unit tests
// compare every ISA with the generic one); tails use the scalar functors.
#ifndef BRAID_ISA_NAMESPACE
#error "define BRAID_ISA_NAMESPACE before including simd_loops.h"
#endif

namespace braid::kernels::BRAID_ISA_NAMESPACE {
namespace {

// The functors' arithmetic on whole vectors: the same comparisons, lane by lane.
template <template <typename> class Func>
struct VecOp;
template <>
struct VecOp<FuncSum> {
  template <typename F>
  static BRAID_INLINE F apply(F a, F b) {
    return a + b;
  }
};
template <>
struct VecOp<FuncProd> {
  template <typename F>
  static BRAID_INLINE F apply(F a, F b) {
    return a * b;
  }
};
template <>
struct VecOp<FuncMax> {
  template <typename F>
  static BRAID_INLINE F apply(F a, F b) {
    return ((a > b) | (a != a)) ? a : b;
  }
};
template <>
struct VecOp<FuncMin> {
  template <typename F>
  static BRAID_INLINE F apply(F a, F b) {
    return ((a < b) | (a != a)) ? a : b;
  }
};

// floatToBf16 on every lane; the 16-bit results sit in the low half of 32-bit lanes. The NaN
// test compares as signed: the operand is below 2^31, and signed compares are native.
template <typename V>
BRAID_INLINE typename V::U bf16LanesOf(typename V::F v) {
  using U = typename V::U;
  using I = typename V::I;
  U x = reinterpret_cast<U>(v);
  U rounded = (x + 0x7fff + ((x >> 16) & 1)) >> 16;
  U nan = (x >> 16) | 0x40;
  I isNan = reinterpret_cast<I>(x & 0x7fffffff) > 0x7f800000;
  return isNan ? nan : rounded;
}

template <typename V, template <typename> class Func>
void simdReduceLoop(void* dstv, const void* av, const void* bv, size_t count) {
  using T = typename V::Elem;
  T* dst = static_cast<T*>(dstv);
  const T* a = static_cast<const T*>(av);
  const T* b = static_cast<const T*>(bv);
  const auto op = [](auto x, auto y) { return VecOp<Func>::apply(x, y); };
  size_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) V::block(dst + i, a + i, b + i, op);
  const Func<T> func;
  for (; i < count; ++i) dst[i] = func(a[i], b[i]);
}

// dst = src * factor, rounded once: scale() with the scalar, finishAvg() with 1/nranks.
template <typename V>
void simdMultiply(typename V::Elem* dst, const typename V::Elem* src, size_t count, float factor) {
  using Traits = ElemTraits<typename V::Elem>;
  using F = typename V::F;
  const F f = F{} + factor;
  const auto op = [f](F x, F) { return x * f; };
  size_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) V::block(dst + i, src + i, src + i, op);
  for (; i < count; ++i) dst[i] = Traits::store(Traits::load(src[i]) * factor);
}

template <typename V>
void simdScale(void* dst, const void* src, size_t count, const void* scalar) {
  using T = typename V::Elem;
  simdMultiply<V>(static_cast<T*>(dst), static_cast<const T*>(src), count,
                  ElemTraits<T>::load(*static_cast<const T*>(scalar)));
}

template <typename V>
void simdFinishAvg(void* data, size_t count, int nranks) {
  using T = typename V::Elem;
  simdMultiply<V>(static_cast<T*>(data), static_cast<const T*>(data), count, 1.0f / float(nranks));
}

// The table with V's element type served by the loops above.
template <typename V>
KernelTable withSimd(KernelTable t) {
  constexpr int row = V::kType;
  t.reduce[row][0] = &simdReduceLoop<V, FuncSum>;
  t.reduce[row][1] = &simdReduceLoop<V, FuncProd>;
  t.reduce[row][2] = &simdReduceLoop<V, FuncMax>;
  t.reduce[row][3] = &simdReduceLoop<V, FuncMin>;
  t.scale[row] = &simdScale<V>;
  t.finishAvg[row] = &simdFinishAvg<V>;
  return t;
}

}  // namespace
}  // namespace braid::kernels::BRAID_ISA_NAMESPACE
