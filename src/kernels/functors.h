// One functor per reduction op, templated on the element type. The host loops, the CUDA kernels
// and the unit tests' oracle all call these, so their definitions are the library's semantics:
//   - half, bfloat16 and fp8 compute in float and round once (float has more than twice their
//     precision plus two bits, so this equals rounding the exact result once);
//   - integer Sum and Prod wrap modulo 2^bits (computed unsigned: no signed-overflow UB);
//   - floating Max and Min propagate NaN: a NaN operand gives a NaN result (the first one's);
//     between equal operands (+0 and -0) they return the second.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/types.h"

namespace braid::kernels {

// How an element type computes: Compute is the arithmetic type, load/store convert.
template <typename T>
struct ElemTraits {
  using Compute = T;
  static BRAID_HOST_DEVICE BRAID_INLINE Compute load(T v) { return v; }
  static BRAID_HOST_DEVICE BRAID_INLINE T store(Compute v) { return v; }
};

#define BRAID_FLOAT_TRAITS(Type, toFloat, fromFloat)                                   \
  template <>                                                                          \
  struct ElemTraits<Type> {                                                            \
    using Compute = float;                                                             \
    static BRAID_HOST_DEVICE BRAID_INLINE float load(Type v) { return toFloat(v); }    \
    static BRAID_HOST_DEVICE BRAID_INLINE Type store(float v) { return fromFloat(v); } \
  };
BRAID_FLOAT_TRAITS(Half, halfToFloat, floatToHalf)
BRAID_FLOAT_TRAITS(BFloat16, bf16ToFloat, floatToBf16)
BRAID_FLOAT_TRAITS(Fp8E4M3, e4m3ToFloat, floatToE4M3)
BRAID_FLOAT_TRAITS(Fp8E5M2, e5m2ToFloat, floatToE5M2)
#undef BRAID_FLOAT_TRAITS

template <typename T>
using ComputeOf = typename ElemTraits<T>::Compute;

namespace detail {

// Integer Sum/Prod go through the unsigned type of the same width. uint8/int8 promote to int
// on the way, which is harmless (255 * 255 fits).
template <typename C>
BRAID_HOST_DEVICE BRAID_INLINE C wrapAdd(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return C(U(U(a) + U(b)));
  } else {
    return a + b;
  }
}

template <typename C>
BRAID_HOST_DEVICE BRAID_INLINE C wrapMul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    // uint32 * uint32 would promote to int for narrower types only; force unsigned maths.
    using Wide = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return C(U(Wide(U(a)) * Wide(U(b))));
  } else {
    return a * b;
  }
}

// a != a is the NaN test that vectorises (a compare), unlike a library call.
template <typename C>
BRAID_HOST_DEVICE BRAID_INLINE bool isNan(C a) {
  if constexpr (std::is_floating_point_v<C>) {
    return a != a;
  } else {
    return false;
  }
}

template <typename C>
BRAID_HOST_DEVICE BRAID_INLINE C maxOf(C a, C b) {
  return (a > b || isNan(a)) ? a : b;
}

template <typename C>
BRAID_HOST_DEVICE BRAID_INLINE C minOf(C a, C b) {
  return (a < b || isNan(a)) ? a : b;
}

}  // namespace detail

#define BRAID_DEFINE_FUNCTOR(Name, expr)                                                       \
  template <typename T>                                                                        \
  struct Name {                                                                                \
    using Compute = ComputeOf<T>;                                                              \
    static BRAID_HOST_DEVICE BRAID_INLINE Compute apply(Compute a, Compute b) { return expr; } \
    BRAID_HOST_DEVICE BRAID_INLINE T operator()(T a, T b) const {                              \
      return ElemTraits<T>::store(apply(ElemTraits<T>::load(a), ElemTraits<T>::load(b)));      \
    }                                                                                          \
  };
BRAID_DEFINE_FUNCTOR(FuncSum, detail::wrapAdd(a, b))
BRAID_DEFINE_FUNCTOR(FuncProd, detail::wrapMul(a, b))
BRAID_DEFINE_FUNCTOR(FuncMax, detail::maxOf(a, b))
BRAID_DEFINE_FUNCTOR(FuncMin, detail::minOf(a, b))
#undef BRAID_DEFINE_FUNCTOR

// PreMulSum's input scaling: v * scalar in the compute type, rounded once.
template <typename T>
struct FuncScale {
  ComputeOf<T> scalar;
  BRAID_HOST_DEVICE BRAID_INLINE T operator()(T v) const {
    return ElemTraits<T>::store(FuncProd<T>::apply(ElemTraits<T>::load(v), scalar));
  }
};

// Avg's last step: floating types multiply by 1/nranks computed once in the compute type (one
// rounding per element); integers divide, truncating, in a type wide enough for any nranks
// (int8 / 200 must not wrap).
template <typename T>
struct FuncFinishAvg {
  using C = ComputeOf<T>;
  using Wide = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
  int nranks;
  C inv;  // floating types only

  static BRAID_HOST_DEVICE BRAID_INLINE FuncFinishAvg make(int nranks) {
    if constexpr (std::is_floating_point_v<C>)
      return {nranks, C(1) / C(nranks)};
    else
      return {nranks, C(0)};
  }
  BRAID_HOST_DEVICE BRAID_INLINE T operator()(T v) const {
    if constexpr (std::is_floating_point_v<C>)
      return ElemTraits<T>::store(ElemTraits<T>::load(v) * inv);
    else
      return C(Wide(v) / Wide(nranks));
  }
};

}  // namespace braid::kernels
