// Half loops over hardware conversions (F16C, AVX-512F), for the SIMD translation units: the
// portable bit-trick conversions vectorise, but at about a third of memory bandwidth. Included
// after reduce_loops.h, inside the same per-ISA namespace and with the same reason for no
// include guard. The including unit supplies a vector policy V:
//   using F = a GCC vector of kWidth floats;  static F load(const Half*);
//   static void store(Half*, F);  (round to nearest even, as floatToHalf)
// The hardware conversions agree with halfToFloat/floatToHalf bit for bit, NaN payloads
// included (the unit tests compare every ISA with the generic one), and the tail uses those.
#ifndef BRAID_ISA_NAMESPACE
#error "define BRAID_ISA_NAMESPACE before including half_simd.h"
#endif

namespace braid::kernels::BRAID_ISA_NAMESPACE {
namespace {

// The functors' arithmetic on whole vectors: the same comparisons, lane by lane.
template <template <typename> class Func>
struct VecOp;
template <>
struct VecOp<FuncSum> {
  template <typename F>
  static BRAID_INLINE F apply(F a, F b) { return a + b; }
};
template <>
struct VecOp<FuncProd> {
  template <typename F>
  static BRAID_INLINE F apply(F a, F b) { return a * b; }
};
template <>
struct VecOp<FuncMax> {
  template <typename F>
  static BRAID_INLINE F apply(F a, F b) { return ((a > b) | (a != a)) ? a : b; }
};
template <>
struct VecOp<FuncMin> {
  template <typename F>
  static BRAID_INLINE F apply(F a, F b) { return ((a < b) | (a != a)) ? a : b; }
};

template <typename V, template <typename> class Func>
void halfReduceLoop(void* dstv, const void* av, const void* bv, size_t count) {
  Half* dst = static_cast<Half*>(dstv);
  const Half* a = static_cast<const Half*>(av);
  const Half* b = static_cast<const Half*>(bv);
  size_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth)
    V::store(dst + i, VecOp<Func>::apply(V::load(a + i), V::load(b + i)));
  const Func<Half> func;
  for (; i < count; ++i) dst[i] = func(a[i], b[i]);
}

// dst = src * factor, rounded once: scale() with the scalar, and finishAvg() with 1/nranks.
template <typename V>
void halfMultiply(Half* dst, const Half* src, size_t count, float factor) {
  using F = typename V::F;
  const F f = F{} + factor;
  size_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) V::store(dst + i, V::load(src + i) * f);
  for (; i < count; ++i) dst[i] = floatToHalf(halfToFloat(src[i]) * factor);
}

template <typename V>
void halfScale(void* dst, const void* src, size_t count, const void* scalar) {
  halfMultiply<V>(static_cast<Half*>(dst), static_cast<const Half*>(src), count,
                  halfToFloat(*static_cast<const Half*>(scalar)));
}

template <typename V>
void halfFinishAvg(void* data, size_t count, int nranks) {
  halfMultiply<V>(static_cast<Half*>(data), static_cast<const Half*>(data), count,
                  1.0f / float(nranks));
}

template <typename V>
KernelTable withHalfSimd(KernelTable t) {
  constexpr int kHalf = 6;  // ncclFloat16
  t.reduce[kHalf][0] = &halfReduceLoop<V, FuncSum>;
  t.reduce[kHalf][1] = &halfReduceLoop<V, FuncProd>;
  t.reduce[kHalf][2] = &halfReduceLoop<V, FuncMax>;
  t.reduce[kHalf][3] = &halfReduceLoop<V, FuncMin>;
  t.scale[kHalf] = &halfScale<V>;
  t.finishAvg[kHalf] = &halfFinishAvg<V>;
  return t;
}

}  // namespace
}  // namespace braid::kernels::BRAID_ISA_NAMESPACE
