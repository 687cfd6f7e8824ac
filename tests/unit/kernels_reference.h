// An independent oracle for the kernels' number formats and ops: formats are decoded and encoded
// with frexp/ldexp/nearbyint in double, not with the kernels' bit tricks, and ops compute in
// double (or 64-bit integers) and round once. Double has at least 2p+2 bits for every p here, so
// computing in double and rounding once equals rounding the exact result once.
#pragma once

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "nccl.h"

namespace braid::kernels::testref {

// Every NCCL data type, and the built-in ops that reduce (Avg is Sum, then a division).
inline constexpr ncclDataType_t kAllTypes[] = {
    ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,   ncclInt64,      ncclUint64,
    ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
inline constexpr ncclRedOp_t kReduceOps[] = {ncclSum, ncclProd, ncclMax, ncclMin};

struct FormatSpec {
  int expBits;
  int manBits;
  int bias;
  bool ieeeSpecials;  // top exponent means Inf/NaN; false for e4m3 (only S.1111.111 is NaN)
  bool saturate;      // overflow and Inf give the largest finite value
};

constexpr FormatSpec kHalf{5, 10, 15, true, false};
constexpr FormatSpec kBf16{8, 7, 127, true, false};
constexpr FormatSpec kE4M3{4, 3, 7, false, true};
constexpr FormatSpec kE5M2{5, 2, 15, true, true};

inline uint32_t signBit(const FormatSpec& f) { return 1u << (f.expBits + f.manBits); }
inline uint32_t expField(const FormatSpec& f, uint32_t bits) {
  return (bits >> f.manBits) & ((1u << f.expBits) - 1);
}
inline uint32_t manField(const FormatSpec& f, uint32_t bits) {
  return bits & ((1u << f.manBits) - 1);
}
inline uint32_t maxExp(const FormatSpec& f) { return (1u << f.expBits) - 1; }

inline bool isNan(const FormatSpec& f, uint32_t bits) {
  if (f.ieeeSpecials) return expField(f, bits) == maxExp(f) && manField(f, bits) != 0;
  return (bits & (signBit(f) - 1)) == signBit(f) - 1;
}

inline uint32_t maxFinite(const FormatSpec& f) {
  if (f.ieeeSpecials) return ((maxExp(f) - 1) << f.manBits) | ((1u << f.manBits) - 1);
  return (signBit(f) - 1) - 1;  // all ones but the last bit
}

inline double decode(const FormatSpec& f, uint32_t bits) {
  double sign = (bits & signBit(f)) ? -1.0 : 1.0;
  uint32_t e = expField(f, bits), m = manField(f, bits);
  if (isNan(f, bits)) return std::copysign(NAN, sign);
  if (f.ieeeSpecials && e == maxExp(f)) return sign * INFINITY;
  if (e == 0) return sign * std::ldexp(double(m), 1 - f.bias - f.manBits);
  return sign * std::ldexp(double(m + (1u << f.manBits)), int(e) - f.bias - f.manBits);
}

// Round to nearest even; NaN gives some NaN of the format (callers compare NaN-ness only).
inline uint32_t encode(const FormatSpec& f, double x) {
  uint32_t sign = std::signbit(x) ? signBit(f) : 0;
  if (std::isnan(x)) return sign | (signBit(f) - 1);
  double a = std::fabs(x);
  double maxValue = decode(f, maxFinite(f));
  uint32_t overflow = f.saturate ? maxFinite(f) : (maxExp(f) << f.manBits);
  if (std::isinf(a)) return sign | overflow;
  if (a == 0) return sign;
  int exp;
  std::frexp(a, &exp);  // a = m * 2^exp, m in [0.5, 1)
  int quantumExp = std::max(exp - 1, 1 - f.bias) - f.manBits;
  double r = std::ldexp(std::nearbyint(std::ldexp(a, -quantumExp)), quantumExp);
  if (r > maxValue) return sign | overflow;
  if (r < std::ldexp(1.0, 1 - f.bias))
    return sign | uint32_t(std::ldexp(r, f.bias - 1 + f.manBits));  // denormal (or zero)
  std::frexp(r, &exp);
  uint32_t e = uint32_t(exp - 1 + f.bias);
  uint32_t m = uint32_t(std::ldexp(r, f.manBits - (exp - 1))) - (1u << f.manBits);
  return sign | (e << f.manBits) | m;
}

inline float floatOf(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
inline uint32_t bitsOf(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}
inline double doubleOf(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
inline uint64_t bitsOf(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// What the oracle expects for one element: exact bits, or "some NaN".
struct Expected {
  uint64_t bits;
  bool nan;
};

enum class Kind { Signed, Unsigned, Float, Double, Small };

inline Kind kindOf(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclInt32:
    case ncclInt64: return Kind::Signed;
    case ncclUint8:
    case ncclUint32:
    case ncclUint64: return Kind::Unsigned;
    case ncclFloat32: return Kind::Float;
    case ncclFloat64: return Kind::Double;
    default: return Kind::Small;
  }
}

inline const FormatSpec& specOf(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return kHalf;
    case ncclBfloat16: return kBf16;
    case ncclFloat8e4m3: return kE4M3;
    default: return kE5M2;
  }
}

inline int bitsOfType(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 8;
    case ncclFloat16:
    case ncclBfloat16: return 16;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 32;
    default: return 64;
  }
}

inline uint64_t truncBits(ncclDataType_t t, uint64_t v) {
  int n = bitsOfType(t);
  return n == 64 ? v : v & ((uint64_t(1) << n) - 1);
}

inline int64_t signExtend(ncclDataType_t t, uint64_t bits) {
  int shift = 64 - bitsOfType(t);
  return int64_t(bits << shift) >> shift;
}

// The element as a real number (for the floating kinds).
inline double valueOf(ncclDataType_t t, uint64_t bits) {
  switch (kindOf(t)) {
    case Kind::Float: return floatOf(uint32_t(bits));
    case Kind::Double: return doubleOf(bits);
    case Kind::Small: return decode(specOf(t), uint32_t(bits));
    case Kind::Signed: return double(signExtend(t, bits));
    case Kind::Unsigned: return double(bits);
  }
  return 0;
}

// Rounds a double once to the type.
inline Expected roundTo(ncclDataType_t t, double v) {
  if (std::isnan(v)) return {0, true};
  switch (kindOf(t)) {
    case Kind::Float: return {bitsOf(float(v)), false};
    case Kind::Double: return {bitsOf(v), false};
    default: return {encode(specOf(t), v), false};
  }
}

// dst = a OP b for op in {Sum, Prod, Max, Min}, by the functors' definition.
inline Expected reduceOne(ncclDataType_t t, ncclRedOp_t op, uint64_t a, uint64_t b) {
  Kind kind = kindOf(t);
  if (kind == Kind::Signed || kind == Kind::Unsigned) {
    int64_t sa = signExtend(t, a), sb = signExtend(t, b);
    bool isSigned = kind == Kind::Signed;
    switch (op) {
      case ncclSum: return {truncBits(t, a + b), false};
      case ncclProd: return {truncBits(t, a * b), false};
      case ncclMax: return {isSigned ? (sa > sb ? a : b) : (a > b ? a : b), false};
      default: return {isSigned ? (sa < sb ? a : b) : (a < b ? a : b), false};
    }
  }
  double x = valueOf(t, a), y = valueOf(t, b);
  switch (op) {
    case ncclSum: return roundTo(t, x + y);
    case ncclProd: return roundTo(t, x * y);
    case ncclMax:
      if (std::isnan(x) || std::isnan(y)) return {0, true};
      return roundTo(t, x > y ? x : y);
    default:
      if (std::isnan(x) || std::isnan(y)) return {0, true};
      return roundTo(t, x < y ? x : y);
  }
}

// finishAvg's definition: floating types multiply by the reciprocal in their compute type
// (float for float and the small formats, double for double); integers divide truncating.
inline Expected avgOne(ncclDataType_t t, uint64_t a, int nranks) {
  switch (kindOf(t)) {
    case Kind::Signed: return {truncBits(t, uint64_t(signExtend(t, a) / nranks)), false};
    case Kind::Unsigned: return {a / uint64_t(nranks), false};
    case Kind::Double: return roundTo(t, doubleOf(a) * (1.0 / nranks));
    default: return roundTo(t, valueOf(t, a) * double(1.0f / float(nranks)));
  }
}

}  // namespace braid::kernels::testref
