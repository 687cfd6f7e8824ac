// The CUDA kernels' bodies (kernels/pack.h) run on the CPU: for every type and op, every worker of
// a grid-stride split, aligned (16-byte packs) and misaligned (element by element) pointers, the
// fused second output, and in place. They must give the host kernels' bytes exactly; the host
// kernels are checked against the oracle in kernels_test.cc (two NaNs count as equal: see
// common/element_compare.h). So the device arithmetic is tested here, on any machine, through the
// code the device runs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/element_compare.h"
#include "kernels/pack.h"
#include "kernels/reduce.h"

namespace braid::kernels {
namespace {

constexpr auto& kTypes = testref::kAllTypes;
constexpr auto& kOps = testref::kReduceOps;

// Calls f(T{}) with the element type of `type`.
template <typename F>
void withType(ncclDataType_t type, F&& f) {
  switch (type) {
    case ncclInt8: return f(int8_t{});
    case ncclUint8: return f(uint8_t{});
    case ncclInt32: return f(int32_t{});
    case ncclUint32: return f(uint32_t{});
    case ncclInt64: return f(int64_t{});
    case ncclUint64: return f(uint64_t{});
    case ncclFloat16: return f(Half{});
    case ncclFloat32: return f(float{});
    case ncclFloat64: return f(double{});
    case ncclBfloat16: return f(BFloat16{});
    case ncclFloat8e4m3: return f(Fp8E4M3{});
    case ncclFloat8e5m2: return f(Fp8E5M2{});
    default: FAIL() << "type " << int(type);
  }
}

// Runs a span body the way a grid does: every worker index in [0, stride).
template <typename Body>
void asGrid(size_t stride, Body&& body) {
  for (size_t w = 0; w < stride; ++w) body(w, stride);
}

// Random bytes, 64-byte aligned storage plus room to misalign by one element.
struct Bytes {
  explicit Bytes(size_t n, uint64_t seed) : data(n + 128) {
    std::mt19937_64 rng(seed);
    for (auto& b : data) b = static_cast<unsigned char>(rng());
  }
  unsigned char* at(size_t offset) {
    auto p = reinterpret_cast<uintptr_t>(data.data());
    return data.data() + ((64 - p % 64) % 64) + offset;
  }
  std::vector<unsigned char> data;
};

std::string describe(ncclDataType_t type, ncclRedOp_t op, size_t count, size_t misalign,
                     size_t stride) {
  return std::string(typeName(type)) + " " + opName(op) + " count " + std::to_string(count) +
         " misaligned by " + std::to_string(misalign) + " element(s), " + std::to_string(stride) +
         " workers";
}

template <typename T>
void reduceSpanAs(ncclRedOp_t op, void* dst, void* dst2, const void* a, const void* b, size_t count,
                  size_t stride) {
  auto run = [&](auto func) {
    asGrid(stride, [&](size_t w, size_t s) {
      reduceSpan(func, static_cast<T*>(dst), static_cast<T*>(dst2), static_cast<const T*>(a),
                 static_cast<const T*>(b), count, w, s);
    });
  };
  switch (op) {
    case ncclSum: return run(FuncSum<T>{});
    case ncclProd: return run(FuncProd<T>{});
    case ncclMax: return run(FuncMax<T>{});
    case ncclMin: return run(FuncMin<T>{});
    default: FAIL() << "op " << int(op);
  }
}

TEST(KernelPacks, ReduceSpanMatchesHostKernelsForEveryTypeAndOp) {
  for (ncclDataType_t type : kTypes)
    for (ncclRedOp_t op : kOps)
      for (size_t count : {size_t(0), size_t(1), size_t(15), size_t(1003)})
        for (size_t misalign : {size_t(0), size_t(1)})
          for (size_t stride : {size_t(1), size_t(7), size_t(256)}) {
            SCOPED_TRACE(describe(type, op, count, misalign, stride));
            const size_t size = typeSize(type), bytes = count * size, off = misalign * size;
            Bytes a(bytes + off, 1 + type * 8 + op), b(bytes + off, 100 + type * 8 + op);
            Bytes want(bytes, 0), got(bytes + off, 0), got2(bytes + off, 0);
            reduce(want.at(0), a.at(off), b.at(off), count, type, op);
            withType(type, [&](auto t) {
              reduceSpanAs<decltype(t)>(op, got.at(off), got2.at(off), a.at(off), b.at(off), count,
                                        stride);
            });
            EXPECT_EQ(testing::firstDifference(type, got.at(off), want.at(0), count), "") << "dst";
            EXPECT_EQ(testing::firstDifference(type, got2.at(off), want.at(0), count), "")
                << "fused second output";
          }
}

TEST(KernelPacks, ReduceSpanInPlaceWithoutSecondOutput) {
  for (ncclDataType_t type : kTypes)
    for (ncclRedOp_t op : kOps) {
      const size_t count = 517, bytes = count * typeSize(type);
      SCOPED_TRACE(describe(type, op, count, 0, 32));
      Bytes a(bytes, 7 + type), b(bytes, 70 + type), want(bytes, 0);
      reduce(want.at(0), a.at(0), b.at(0), count, type, op);
      withType(type, [&](auto t) {
        reduceSpanAs<decltype(t)>(op, a.at(0), nullptr, a.at(0), b.at(0), count, 32);
      });
      EXPECT_EQ(testing::firstDifference(type, a.at(0), want.at(0), count), "");
    }
}

TEST(KernelPacks, MapSpanScaleAndFinishAvgMatchHostKernels) {
  for (ncclDataType_t type : kTypes)
    for (size_t misalign : {size_t(0), size_t(1)}) {
      const size_t count = 1001, size = typeSize(type), bytes = count * size, off = misalign * size;
      SCOPED_TRACE(describe(type, ncclAvg, count, misalign, 64));
      Bytes src(bytes + off, 31 + type), scalar(size, 32 + type);
      Bytes want(bytes, 0), got(bytes + off, 0);
      scale(want.at(0), src.at(off), count, type, scalar.at(0));
      withType(type, [&](auto t) {
        using T = decltype(t);
        T s;
        std::memcpy(&s, scalar.at(0), sizeof s);
        const FuncScale<T> func{ElemTraits<T>::load(s)};
        asGrid(64, [&](size_t w, size_t n) {
          mapSpan(func, reinterpret_cast<T*>(got.at(off)), reinterpret_cast<const T*>(src.at(off)),
                  count, w, n);
        });
      });
      EXPECT_EQ(testing::firstDifference(type, got.at(off), want.at(0), count), "") << "scale";

      std::memcpy(want.at(0), src.at(off), bytes);
      std::memcpy(got.at(off), src.at(off), bytes);
      finishAvg(want.at(0), count, type, 6);
      withType(type, [&](auto t) {
        using T = decltype(t);
        const auto func = FuncFinishAvg<T>::make(6);
        asGrid(64, [&](size_t w, size_t n) {
          T* data = reinterpret_cast<T*>(got.at(off));
          mapSpan(func, data, data, count, w, n);
        });
      });
      EXPECT_EQ(testing::firstDifference(type, got.at(off), want.at(0), count), "") << "finishAvg";
    }
}

TEST(KernelPacks, CopyMovesEveryByte) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(17), size_t(4099)})
    for (size_t misalign : {size_t(0), size_t(3)}) {
      SCOPED_TRACE("copy of " + std::to_string(bytes) + " bytes, misaligned by " +
                   std::to_string(misalign));
      Bytes src(bytes + misalign, bytes), dst(bytes + misalign, 0);
      asGrid(9, [&](size_t w, size_t n) {
        mapSpan(FuncCopy<uint8_t>{}, dst.at(misalign), src.at(misalign), bytes, w, n);
      });
      EXPECT_EQ(0, std::memcmp(dst.at(misalign), src.at(misalign), bytes));
    }
}

}  // namespace
}  // namespace braid::kernels
