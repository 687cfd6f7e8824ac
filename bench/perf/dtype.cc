#include "dtype.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace braid::perf {
namespace {

// A small binary float format; half, bfloat16 and both fp8 kinds are instances. e4m3 (the
// "fn" variant NCCL uses) has no infinities and a single NaN mantissa, which is why its
// largest exponent still holds finite values.
struct MiniFloat {
  int expBits, manBits;
  bool hasInf;
};
constexpr MiniFloat kHalf{5, 10, true}, kBf16{8, 7, true}, kE4m3{4, 3, false}, kE5m2{5, 2, true};

double decode(uint32_t bits, MiniFloat f) {
  const int bias = (1 << (f.expBits - 1)) - 1;
  const uint32_t manMask = (1u << f.manBits) - 1, expMax = (1u << f.expBits) - 1;
  const bool neg = bits >> (f.expBits + f.manBits) & 1;
  const uint32_t e = bits >> f.manBits & expMax, m = bits & manMask;
  double v;
  if (e == 0)
    v = std::ldexp(static_cast<double>(m), 1 - bias - f.manBits);
  else if (f.hasInf && e == expMax)
    v = m ? NAN : INFINITY;
  else if (!f.hasInf && e == expMax && m == manMask)
    v = NAN;
  else
    v = std::ldexp(static_cast<double>(m | (1u << f.manBits)),
                   static_cast<int>(e) - bias - f.manBits);
  return neg ? -v : v;
}

// Round to nearest even; values past the largest finite one become infinity (or e4m3's NaN).
uint32_t encode(double v, MiniFloat f) {
  const int bias = (1 << (f.expBits - 1)) - 1;
  const uint32_t sign = std::signbit(v) ? 1u << (f.expBits + f.manBits) : 0;
  const uint32_t expMax = (1u << f.expBits) - 1, manMask = (1u << f.manBits) - 1;
  const uint32_t nan = sign | expMax << f.manBits | manMask;
  if (std::isnan(v)) return nan;
  double a = std::fabs(v);
  if (a == 0) return sign;
  int e2;
  std::frexp(a, &e2);
  int ex = std::max(e2 - 1, 1 - bias);  // subnormals share the smallest exponent
  // q counts units in the last place; a carry out of the mantissa lands in the exponent field.
  auto q = static_cast<uint64_t>(std::nearbyint(std::ldexp(a, f.manBits - ex)));
  uint64_t bits = q < (1ull << f.manBits)
                      ? q  // subnormal
                      : (static_cast<uint64_t>(ex + bias) << f.manBits) + (q - (1ull << f.manBits));
  uint64_t maxFinite = f.hasInf ? (static_cast<uint64_t>(expMax) << f.manBits) - 1
                                : (static_cast<uint64_t>(expMax) << f.manBits | manMask) - 1;
  if (bits > maxFinite) return f.hasInf ? sign | expMax << f.manBits : nan;
  return sign | static_cast<uint32_t>(bits);
}

const TypeInfo kTypes[] = {
    {ncclInt8, "int8", 1, false, true, 127, 0},
    {ncclUint8, "uint8", 1, false, false, 255, 0},
    {ncclInt32, "int32", 4, false, true, 2147483647.0, 0},
    {ncclUint32, "uint32", 4, false, false, 4294967295.0, 0},
    {ncclInt64, "int64", 8, false, true, 9007199254740992.0, 0},  // capped by double
    {ncclUint64, "uint64", 8, false, false, 9007199254740992.0, 0},
    {ncclFloat16, "half", 2, true, true, 2048, 10},
    {ncclFloat32, "float", 4, true, true, 16777216.0, 23},
    {ncclFloat64, "double", 8, true, true, 9007199254740992.0, 52},
    {ncclBfloat16, "bfloat16", 2, true, true, 256, 7},
    {ncclFloat8e4m3, "f8e4m3", 1, true, true, 16, 3},
    {ncclFloat8e5m2, "f8e5m2", 1, true, true, 8, 2},
};

struct Alias {
  const char* name;
  ncclDataType_t type;
};
const Alias kAliases[] = {
    {"char", ncclInt8},
    {"int", ncclInt32},
    {"float16", ncclFloat16},
    {"fp16", ncclFloat16},
    {"float32", ncclFloat32},
    {"fp32", ncclFloat32},
    {"float64", ncclFloat64},
    {"fp64", ncclFloat64},
    {"bf16", ncclBfloat16},
    {"fp8_e4m3", ncclFloat8e4m3},
    {"float8e4m3", ncclFloat8e4m3},
    {"e4m3", ncclFloat8e4m3},
    {"fp8_e5m2", ncclFloat8e5m2},
    {"float8e5m2", ncclFloat8e5m2},
    {"e5m2", ncclFloat8e5m2},
};

const OpInfo kOps[] = {
    {ncclSum, "sum"}, {ncclProd, "prod"}, {ncclMax, "max"}, {ncclMin, "min"}, {ncclAvg, "avg"}};

template <typename T>
struct Plain {
  static T put(double v) { return static_cast<T>(v); }
  static double get(T v) { return static_cast<double>(v); }
};
template <MiniFloat F, typename Bits>
struct Mini {
  static Bits put(double v) { return static_cast<Bits>(encode(v, F)); }
  static double get(Bits v) { return decode(v, F); }
};

// Calls fn with the element codec of type t.
template <typename Fn>
auto withCodec(ncclDataType_t t, Fn&& fn) {
  switch (t) {
    case ncclInt8: return fn(Plain<int8_t>{}, int8_t{});
    case ncclUint8: return fn(Plain<uint8_t>{}, uint8_t{});
    case ncclInt32: return fn(Plain<int32_t>{}, int32_t{});
    case ncclUint32: return fn(Plain<uint32_t>{}, uint32_t{});
    case ncclInt64: return fn(Plain<int64_t>{}, int64_t{});
    case ncclUint64: return fn(Plain<uint64_t>{}, uint64_t{});
    case ncclFloat16: return fn(Mini<kHalf, uint16_t>{}, uint16_t{});
    case ncclFloat32: return fn(Plain<float>{}, float{});
    case ncclFloat64: return fn(Plain<double>{}, double{});
    case ncclBfloat16: return fn(Mini<kBf16, uint16_t>{}, uint16_t{});
    case ncclFloat8e4m3: return fn(Mini<kE4m3, uint8_t>{}, uint8_t{});
    case ncclFloat8e5m2: return fn(Mini<kE5m2, uint8_t>{}, uint8_t{});
    default: return fn(Plain<uint8_t>{}, uint8_t{});
  }
}

}  // namespace

std::span<const TypeInfo> allTypes() { return kTypes; }

const TypeInfo& typeInfo(ncclDataType_t t) {
  for (const auto& ti : kTypes)
    if (ti.type == t) return ti;
  return kTypes[7];
}

const TypeInfo* findType(std::string_view name) {
  for (const auto& ti : kTypes)
    if (name == ti.name) return &ti;
  for (const auto& a : kAliases)
    if (name == a.name) return &typeInfo(a.type);
  return nullptr;
}

std::span<const OpInfo> allOps() { return kOps; }

const OpInfo* findOp(std::string_view name) {
  for (const auto& o : kOps)
    if (name == o.name) return &o;
  return nullptr;
}

const char* opName(ncclRedOp_t op) {
  for (const auto& o : kOps)
    if (o.op == op) return o.name;
  return "?";
}

void fillValues(void* buf, size_t n, ncclDataType_t t, ValueFn f, const void* ctx) {
  withCodec(t, [&](auto codec, auto zero) {
    auto* p = static_cast<decltype(zero)*>(buf);
    for (size_t i = 0; i < n; ++i) p[i] = codec.put(f(ctx, i));
  });
}

double loadValue(const void* buf, size_t i, ncclDataType_t t) {
  return withCodec(t, [&](auto codec, auto zero) {
    return codec.get(static_cast<const decltype(zero)*>(buf)[i]);
  });
}

size_t countWrong(const void* buf, size_t n, ncclDataType_t t, ValueFn want, const void* ctx,
                  double relTol) {
  return withCodec(t, [&](auto codec, auto zero) {
    const auto* p = static_cast<const decltype(zero)*>(buf);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) {
      double w = want(ctx, i), got = codec.get(p[i]);
      if (relTol == 0 ? got != w : !(std::fabs(got - w) <= relTol * std::fabs(w))) ++wrong;
    }
    return wrong;
  });
}

}  // namespace braid::perf
