// Correctness of one AllReduce call as seen by one rank. Inputs are a deterministic function of
// (rank, element), so every rank computes the expected result on its own. Integers must match
// bit for bit (wrapping arithmetic in the type, as NCCL's); floating types are compared with an
// fp64 reference of the rounded inputs, within a bound of (nranks + 1) unit roundoffs of the
// sum of magnitudes (sum, avg) or of the result (prod), which covers any reduction order.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/reduce.h"
#include "kernels/types.h"
#include "nccl.h"

namespace braid::testing {

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

inline bool isFloatType(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 ||
         t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
}

// Unit roundoff and smallest subnormal of each floating type.
inline double unitRoundoff(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return std::ldexp(1.0, -11);
    case ncclFloat32: return std::ldexp(1.0, -24);
    case ncclFloat64: return std::ldexp(1.0, -53);
    case ncclBfloat16: return std::ldexp(1.0, -8);
    case ncclFloat8e4m3: return std::ldexp(1.0, -4);
    case ncclFloat8e5m2: return std::ldexp(1.0, -3);
    default: return 0;
  }
}
inline double tinyStep(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return std::ldexp(1.0, -24);
    case ncclBfloat16: return std::ldexp(1.0, -133);
    case ncclFloat8e4m3: return std::ldexp(1.0, -9);
    case ncclFloat8e5m2: return std::ldexp(1.0, -16);
    default: return 0;
  }
}

// Stores v (already representable or not: it is rounded by the type's conversion) at p[i].
inline void storeFloat(ncclDataType_t t, void* p, size_t i, double v) {
  using namespace braid::kernels;
  switch (t) {
    case ncclFloat16: static_cast<Half*>(p)[i] = floatToHalf(static_cast<float>(v)); break;
    case ncclFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case ncclFloat64: static_cast<double*>(p)[i] = v; break;
    case ncclBfloat16: static_cast<BFloat16*>(p)[i] = floatToBf16(static_cast<float>(v)); break;
    case ncclFloat8e4m3: static_cast<Fp8E4M3*>(p)[i] = floatToE4M3(static_cast<float>(v)); break;
    case ncclFloat8e5m2: static_cast<Fp8E5M2*>(p)[i] = floatToE5M2(static_cast<float>(v)); break;
    default: break;
  }
}
inline double loadFloat(ncclDataType_t t, const void* p, size_t i) {
  using namespace braid::kernels;
  switch (t) {
    case ncclFloat16: return halfToFloat(static_cast<const Half*>(p)[i]);
    case ncclFloat32: return static_cast<const float*>(p)[i];
    case ncclFloat64: return static_cast<const double*>(p)[i];
    case ncclBfloat16: return bf16ToFloat(static_cast<const BFloat16*>(p)[i]);
    case ncclFloat8e4m3: return e4m3ToFloat(static_cast<const Fp8E4M3*>(p)[i]);
    case ncclFloat8e5m2: return e5m2ToFloat(static_cast<const Fp8E5M2*>(p)[i]);
    default: return 0;
  }
}

// The input of `rank` at element i, as the type stores it. Floats are multiples of 1/64 in
// [-4, 4) for sum/avg/max/min, and in [0.5, 2) for prod, so no format saturates at 8 ranks.
inline double floatInput(ncclDataType_t t, ncclRedOp_t op, int rank, size_t i) {
  uint64_t h = mix((static_cast<uint64_t>(rank) << 40) ^ i ^ (static_cast<uint64_t>(t) << 56));
  double v = op == ncclProd ? 0.5 + static_cast<double>(h % 96) / 64.0
                            : (static_cast<double>(h % 512) - 256.0) / 64.0;
  unsigned char tmp[8];
  storeFloat(t, tmp, 0, v);
  return loadFloat(t, tmp, 0);
}
inline uint64_t intInput(ncclDataType_t t, int rank, size_t i) {
  return mix((static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ull) ^ i ^
             (static_cast<uint64_t>(t) << 56));
}

template <typename T>
T wrapReduce(T a, T b, ncclRedOp_t op) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case ncclSum:
    case ncclAvg: return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    case ncclProd: return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    case ncclMax: return a > b ? a : b;
    default: return a < b ? a : b;
  }
}

// Writes the input of `rank` at element i to one element at `dst`.
inline void storeInput(ncclDataType_t t, ncclRedOp_t op, int rank, size_t i, void* dst) {
  if (isFloatType(t)) {
    storeFloat(t, dst, 0, floatInput(t, op, rank, i));
  } else {
    uint64_t v = intInput(t, rank, i);
    std::memcpy(dst, &v, kernels::typeSize(t));
  }
}

inline void fillInput(ncclDataType_t t, ncclRedOp_t op, int rank, void* buf, size_t count) {
  for (size_t i = 0; i < count; ++i)
    storeInput(t, op, rank, i, static_cast<char*>(buf) + i * kernels::typeSize(t));
}

// The checks below compare one element `got` with the reduction of every rank's input i.
template <typename T>
std::string checkInts(ncclRedOp_t op, int nranks, const void* got, size_t i, ncclDataType_t t) {
  T acc{};
  for (int r = 0; r < nranks; ++r) {
    uint64_t raw = intInput(t, r, i);
    T v;
    std::memcpy(&v, &raw, sizeof(T));
    acc = r == 0 ? v : wrapReduce<T>(acc, v, op);
  }
  if (op == ncclAvg) acc = static_cast<T>(acc / static_cast<T>(nranks));
  T value;
  std::memcpy(&value, got, sizeof(T));
  if (value == acc) return "";
  return "element " + std::to_string(i) + ": got " + std::to_string(value) + ", expected " +
         std::to_string(acc);
}

// `scale` (PreMulSum, op Sum) multiplies every input first; the bound grows by |scale| and by
// one rounding of each scaled input.
inline std::string checkFloat(ncclDataType_t t, ncclRedOp_t op, int nranks, const void* got,
                              size_t i, double scale = 1.0) {
  double ref = op == ncclProd ? 1.0 : 0.0, mag = 0.0;
  bool first = true;
  for (int r = 0; r < nranks; ++r) {
    double v = floatInput(t, op, r, i);
    mag += std::fabs(v);
    if (op == ncclSum || op == ncclAvg)
      ref += v;
    else if (op == ncclProd)
      ref *= v;
    else if (first)
      ref = v;
    else
      ref = op == ncclMax ? std::max(ref, v) : std::min(ref, v);
    first = false;
  }
  if (op == ncclAvg) {
    ref /= nranks;
    mag /= nranks;
  }
  const double u = unitRoundoff(t);
  double tol = (op == ncclMax || op == ncclMin) ? 0.0
               : op == ncclProd                 ? 2.0 * (nranks + 1) * u * std::fabs(ref)
                                                : (nranks + 2) * u * mag + nranks * tinyStep(t);
  if (scale != 1.0) {
    ref *= scale;
    tol = std::fabs(scale) * (tol + u * mag) + nranks * tinyStep(t);
  }
  double value = loadFloat(t, got, 0);
  if (std::fabs(value - ref) <= tol) return "";
  return "element " + std::to_string(i) + ": got " + std::to_string(value) + ", expected " +
         std::to_string(ref) + " within " + std::to_string(tol);
}

inline std::string checkReduced(ncclDataType_t t, ncclRedOp_t op, int nranks, const void* got,
                                size_t i) {
  switch (t) {
    case ncclInt8: return checkInts<int8_t>(op, nranks, got, i, t);
    case ncclUint8: return checkInts<uint8_t>(op, nranks, got, i, t);
    case ncclInt32: return checkInts<int32_t>(op, nranks, got, i, t);
    case ncclUint32: return checkInts<uint32_t>(op, nranks, got, i, t);
    case ncclInt64: return checkInts<int64_t>(op, nranks, got, i, t);
    case ncclUint64: return checkInts<uint64_t>(op, nranks, got, i, t);
    default: return checkFloat(t, op, nranks, got, i);
  }
}

// PreMulSum: `got` against scalar * (the sum of every rank's input i). Integers (an integral
// scalar) wrap in the type, bit for bit; floats as checkFloat.
inline std::string checkScaledSum(ncclDataType_t t, int nranks, double scalar, const void* got,
                                  size_t i) {
  if (isFloatType(t)) return checkFloat(t, ncclSum, nranks, got, i, scalar);
  // Wrapping arithmetic modulo 2^64 truncates to the same bits as in the type.
  uint64_t acc = 0;
  for (int r = 0; r < nranks; ++r) acc += intInput(t, r, i);
  acc *= static_cast<uint64_t>(static_cast<int64_t>(scalar));
  if (std::memcmp(&acc, got, kernels::typeSize(t)) == 0) return "";
  return "element " + std::to_string(i) + ": not " + std::to_string(scalar) +
         " times the wrapped sum";
}

// Checks out[0, count) of one rank. Large outputs are checked on a stride plus both ends.
inline std::string checkOutput(ncclDataType_t t, ncclRedOp_t op, int nranks, const void* out,
                               size_t count) {
  const size_t stride = count > 200000 ? 61 : 1;
  const size_t size = kernels::typeSize(t);
  auto one = [&](size_t i) {
    return checkReduced(t, op, nranks, static_cast<const char*>(out) + i * size, i);
  };
  for (size_t i = 0; i < count; i += stride)
    if (std::string e = one(i); !e.empty()) return e;
  for (size_t i = count > 4096 ? count - 4096 : 0; i < count; ++i)
    if (std::string e = one(i); !e.empty()) return e;
  return "";
}

struct AllReduceCase {
  ncclDataType_t type;
  ncclRedOp_t op;
  size_t count;
  bool inPlace;
};

inline std::string describe(const AllReduceCase& c) {
  return std::string(kernels::typeName(c.type)) + "/" + kernels::opName(c.op) +
         " count=" + std::to_string(c.count) + (c.inPlace ? " in-place" : " out-of-place");
}

// Runs one case on this rank's communicator; "" on success.
inline std::string runAllReduce(ncclComm_t comm, int rank, int nranks, const AllReduceCase& c) {
  const size_t bytes = c.count * kernels::typeSize(c.type);
  std::vector<unsigned char> send(bytes + 1), recv(bytes + 1, 0xAB);
  fillInput(c.type, c.op, rank, send.data(), c.count);
  if (c.inPlace) recv = send;
  recv[bytes] = 0x5C;  // guard byte: nothing may be written past the end
  const void* sendbuf = c.inPlace ? recv.data() : send.data();
  ncclResult_t res = ncclAllReduce(sendbuf, recv.data(), c.count, c.type, c.op, comm, nullptr);
  if (res != ncclSuccess)
    return describe(c) + ": " + ncclGetErrorString(res) + ": " + ncclGetLastError(comm);
  if (recv[bytes] != 0x5C) return describe(c) + ": wrote past the end of recvbuff";
  std::string err = checkOutput(c.type, c.op, nranks, recv.data(), c.count);
  return err.empty() ? "" : describe(c) + ": rank " + std::to_string(rank) + ": " + err;
}

// The sweep: every type x op x {0, 1, 7, nranks - 1, 1M + 3} x in/out of place.
inline std::vector<AllReduceCase> sweepCases(int nranks, bool large) {
  std::vector<AllReduceCase> cases;
  std::vector<size_t> counts = {0, 1, 7, static_cast<size_t>(nranks - 1), 1003};
  if (large) counts.push_back((1u << 20) + 3);
  for (int t = 0; t < ncclNumTypes; ++t)
    for (int op = 0; op < ncclNumOps; ++op)
      for (size_t count : counts)
        for (bool inPlace : {false, true})
          cases.push_back(
              {static_cast<ncclDataType_t>(t), static_cast<ncclRedOp_t>(op), count, inPlace});
  return cases;
}

}  // namespace braid::testing
