// The host reduction kernels: every type x op against the double/integer oracle in
// kernels_reference.h, aliasing, vector-loop tails, and every ISA this machine has against the
// generic build, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/env.h"
#include "kernels/isa.h"
#include "kernels/reduce.h"
#include "kernels_reference.h"

namespace braid::kernels {
namespace {

constexpr auto& kTypes = testref::kAllTypes;
constexpr auto& kOps = testref::kReduceOps;
// 7 and 1000003 leave a remainder after every vector width; 0 and 1 are the edges.
constexpr size_t kCounts[] = {0, 1, 7, 1000003};

// A buffer of count elements of one type, addressed as raw bit patterns.
class Buffer {
 public:
  Buffer(ncclDataType_t type, size_t count)
      : type_(type), size_(typeSize(type)), bytes_(count * size_ + 64) {}

  void* data() { return bytes_.data(); }
  uint64_t get(size_t i) const {
    uint64_t v = 0;
    std::memcpy(&v, bytes_.data() + i * size_, size_);
    return v;
  }
  void set(size_t i, uint64_t v) { std::memcpy(bytes_.data() + i * size_, &v, size_); }
  bool sameBytes(const Buffer& o, size_t count) const {
    return !std::memcmp(bytes_.data(), o.bytes_.data(), count * size_);
  }

 private:
  ncclDataType_t type_;
  size_t size_;
  std::vector<unsigned char> bytes_;
};

// Random bit patterns cover every class of value (NaN, Inf, denormals, both zeros); floats
// and doubles also get ordinary values half the time, so sums of like magnitudes occur.
// For bfloat16 products, tiny magnitudes are moved up: a product below float's normal range
// is rounded twice by the float computation, which the oracle would not reproduce.
Buffer randomBuffer(ncclDataType_t type, size_t count, uint64_t seed, bool forProduct) {
  Buffer buf(type, count);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> ordinary(-1000, 1000);
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = rng();
    bool plain = (bits >> 63) & 1;
    if (type == ncclFloat32 && plain) bits = testref::bitsOf(float(ordinary(rng)));
    if (type == ncclFloat64 && plain) bits = testref::bitsOf(ordinary(rng));
    if (type == ncclBfloat16 && forProduct) {
      uint64_t exp = (bits >> 7) & 0xff;
      if (exp < 64) bits = (bits & ~uint64_t(0x7f80)) | ((exp + 64) << 7);
    }
    buf.set(i, bits);
  }
  return buf;
}

// Whether element i holds a NaN (any payload).
bool nanAt(const Buffer& buf, ncclDataType_t type, size_t i) {
  const uint64_t bits = buf.get(i);
  switch (type) {
    case ncclFloat16: return testref::isNan(testref::kHalf, uint32_t(bits));
    case ncclBfloat16: return testref::isNan(testref::kBf16, uint32_t(bits));
    case ncclFloat8e4m3: return testref::isNan(testref::kE4M3, uint32_t(bits));
    case ncclFloat8e5m2: return testref::isNan(testref::kE5M2, uint32_t(bits));
    case ncclFloat32: {
      float f;
      const uint32_t b = uint32_t(bits);
      std::memcpy(&f, &b, sizeof f);
      return std::isnan(f);
    }
    case ncclFloat64: {
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return std::isnan(d);
    }
    default: return false;
  }
}

// got[0, count) equals want bit for bit, NaN payloads included, except where both inputs are
// NaN: which operand's payload the result carries IEEE leaves open and the compiler's operand
// order decides (the asan preset's generic and SIMD builds took different ones); there the
// result need only be a NaN. Returns the first element that differs, or count.
size_t firstDifference(const Buffer& got, const Buffer& want, const Buffer& a, const Buffer& b,
                       ncclDataType_t type, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (got.get(i) == want.get(i)) continue;
    if (nanAt(a, type, i) && nanAt(b, type, i) && nanAt(got, type, i)) continue;
    return i;
  }
  return count;
}

std::string describe(ncclDataType_t type, ncclRedOp_t op, size_t count) {
  return std::string(typeName(type)) + " " + opName(op) + " count " + std::to_string(count);
}

// Compares out[0, count) with the oracle; reports the first few mismatches.
template <typename Oracle>
void expectMatches(const Buffer& out, ncclDataType_t type, size_t count, Oracle oracle) {
  int failures = 0;
  for (size_t i = 0; i < count && failures < 5; ++i) {
    testref::Expected want = oracle(i);
    uint64_t got = out.get(i);
    bool ok = want.nan ? std::isnan(testref::valueOf(type, got)) : got == want.bits;
    if (!ok) {
      ++failures;
      ADD_FAILURE() << typeName(type) << " element " << i << ": got 0x" << std::hex << got
                    << (want.nan ? ", expected a NaN" : ", expected 0x") << want.bits;
    }
  }
}

TEST(Kernels, Names) {
  EXPECT_EQ(typeSize(ncclFloat16), 2u);
  EXPECT_EQ(typeSize(ncclFloat8e5m2), 1u);
  EXPECT_EQ(typeSize(ncclUint64), 8u);
  EXPECT_EQ(typeSize(ncclDataType_t(12)), 0u);
  EXPECT_STREQ(typeName(ncclBfloat16), "bfloat16");
  EXPECT_STREQ(typeName(ncclFloat8e4m3), "f8e4m3");
  EXPECT_STREQ(typeName(ncclFloat32), "float");
  EXPECT_STREQ(opName(ncclAvg), "avg");
  EXPECT_STREQ(opName(ncclRedOp_t(9)), "unknown");
  EXPECT_STREQ(isaName(), isaName(activeIsa()));
  EXPECT_TRUE(isaAvailable(Isa::Generic));
}

TEST(Kernels, EveryTypeAndOpMatchesOracle) {
  for (ncclDataType_t type : kTypes)
    for (ncclRedOp_t op : kOps)
      for (size_t count : kCounts) {
        SCOPED_TRACE(describe(type, op, count));
        Buffer a = randomBuffer(type, count, 1 + type * 16 + op, op == ncclProd);
        Buffer b = randomBuffer(type, count, 1000 + type * 16 + op, op == ncclProd);
        Buffer out(type, count);
        reduce(out.data(), a.data(), b.data(), count, type, op);
        expectMatches(out, type, count,
                      [&](size_t i) { return testref::reduceOne(type, op, a.get(i), b.get(i)); });
      }
}

// dst == a and dst == b give the out-of-place answer (including the vector loop's tail).
TEST(Kernels, InPlace) {
  for (ncclDataType_t type : kTypes)
    for (ncclRedOp_t op : kOps)
      for (size_t count : {size_t(7), size_t(100003)}) {
        SCOPED_TRACE(describe(type, op, count));
        Buffer a = randomBuffer(type, count, 7 + type, false);
        Buffer b = randomBuffer(type, count, 70 + type, false);
        Buffer expected(type, count);
        reduce(expected.data(), a.data(), b.data(), count, type, op);
        Buffer intoA = a, intoB = b;
        reduce(intoA.data(), intoA.data(), b.data(), count, type, op);
        reduce(intoB.data(), a.data(), intoB.data(), count, type, op);
        EXPECT_TRUE(intoA.sameBytes(expected, count)) << "dst == a";
        EXPECT_TRUE(intoB.sameBytes(expected, count)) << "dst == b";
      }
}

// A zero count touches nothing, whatever the pointers.
TEST(Kernels, ZeroCountIsANoOp) {
  for (ncclDataType_t type : kTypes) {
    reduce(nullptr, nullptr, nullptr, 0, type, ncclSum);
    scale(nullptr, nullptr, 0, type, nullptr);
    finishAvg(nullptr, 0, type, 4);
  }
}

TEST(Kernels, AvgIsSumThenFinishAvg) {
  for (ncclDataType_t type : kTypes)
    for (int nranks : {3, 7, 200}) {
      const size_t count = 1003;
      SCOPED_TRACE(describe(type, ncclAvg, count) + " nranks " + std::to_string(nranks));
      // Kept above float's denormals like products: finishAvg multiplies.
      Buffer a = randomBuffer(type, count, 11 + type, true);
      Buffer b = randomBuffer(type, count, 12 + type, true);
      Buffer sum(type, count), avg(type, count);
      reduce(sum.data(), a.data(), b.data(), count, type, ncclSum);
      reduce(avg.data(), a.data(), b.data(), count, type, ncclAvg);
      EXPECT_TRUE(avg.sameBytes(sum, count));
      finishAvg(avg.data(), count, type, nranks);
      expectMatches(avg, type, count,
                    [&](size_t i) { return testref::avgOne(type, sum.get(i), nranks); });
    }
}

TEST(Kernels, IntegerAvgTruncatesTowardZero) {
  int32_t v[4] = {-7, 7, -2, 200};
  finishAvg(v, 4, ncclInt32, 3);
  EXPECT_EQ(v[0], -2);
  EXPECT_EQ(v[1], 2);
  EXPECT_EQ(v[2], 0);
  EXPECT_EQ(v[3], 66);
  int8_t w[2] = {-128, 127};
  finishAvg(w, 2, ncclInt8, 200);  // nranks beyond int8's range must not wrap
  EXPECT_EQ(w[0], 0);
  EXPECT_EQ(w[1], 0);
}

TEST(Kernels, ScaleIsProdWithAScalar) {
  for (ncclDataType_t type : kTypes)
    for (size_t count : kCounts) {
      SCOPED_TRACE(describe(type, ncclProd, count) + " scale");
      Buffer src = randomBuffer(type, count, 21 + type, true);
      Buffer scalar = randomBuffer(type, 1, 22 + type, true);
      if (type == ncclFloat32) scalar.set(0, testref::bitsOf(0.3f));
      Buffer out(type, count);
      scale(out.data(), src.data(), count, type, scalar.data());
      expectMatches(out, type, count, [&](size_t i) {
        return testref::reduceOne(type, ncclProd, src.get(i), scalar.get(0));
      });
    }
}

TEST(Kernels, MaxMinPropagateNan) {
  float a[4] = {NAN, 1.0f, NAN, -0.0f};
  float b[4] = {1.0f, NAN, NAN, 0.0f};
  float out[4];
  for (ncclRedOp_t op : {ncclMax, ncclMin}) {
    reduce(out, a, b, 4, ncclFloat32, op);
    EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]) && std::isnan(out[2])) << opName(op);
    EXPECT_EQ(testref::bitsOf(out[3]), 0u) << "equal operands give the second";
  }
  uint16_t h[2] = {0x7e00, 0x3c00}, g[2] = {0x3c00, 0xfe00}, r[2];  // NaN, 1.0 / 1.0, -NaN
  reduce(r, h, g, 2, ncclFloat16, ncclMax);
  EXPECT_EQ(r[0], 0x7e00);
  EXPECT_EQ(r[1], 0xfe00);
}

TEST(Kernels, IntegerSumAndProdWrap) {
  int32_t a[2] = {INT32_MAX, INT32_MIN}, b[2] = {1, -1}, out[2];
  reduce(out, a, b, 2, ncclInt32, ncclSum);
  EXPECT_EQ(out[0], INT32_MIN);
  EXPECT_EQ(out[1], INT32_MAX);
  int64_t c[1] = {INT64_MIN}, d[1] = {-1}, p[1];
  reduce(p, c, d, 1, ncclInt64, ncclProd);
  EXPECT_EQ(p[0], INT64_MIN);
  uint8_t e[1] = {200}, f[1] = {3}, q[1];
  reduce(q, e, f, 1, ncclUint8, ncclProd);
  EXPECT_EQ(q[0], uint8_t(600));
}

// Every ISA built and supported here gives the generic build's bytes, NaN payloads included
// (but for two NaN operands: see firstDifference).
TEST(Kernels, EveryIsaMatchesGenericBitForBit) {
  const KernelTable& generic = kernelTable(Isa::Generic);
  int compared = 0;
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (!isaAvailable(isa)) continue;
    ++compared;
    const KernelTable& table = kernelTable(isa);
    for (ncclDataType_t type : kTypes)
      for (size_t count : {size_t(1), size_t(7), size_t(65), size_t(1000003)}) {
        SCOPED_TRACE(std::string(isaName(isa)) + " " + typeName(type) + " count " +
                     std::to_string(count));
        Buffer a = randomBuffer(type, count, 31 + type, false);
        Buffer b = randomBuffer(type, count, 32 + type, false);
        Buffer want(type, count), got(type, count);
        for (int op = 0; op < kNumBasicOps; ++op) {
          generic.reduce[type][op](want.data(), a.data(), b.data(), count);
          table.reduce[type][op](got.data(), a.data(), b.data(), count);
          EXPECT_EQ(firstDifference(got, want, a, b, type, count), count)
              << opName(ncclRedOp_t(op));
        }
        generic.scale[type](want.data(), a.data(), count, b.data());
        table.scale[type](got.data(), a.data(), count, b.data());
        EXPECT_TRUE(got.sameBytes(want, count)) << "scale";
        Buffer avgWant = a, avgGot = a;
        generic.finishAvg[type](avgWant.data(), count, 6);
        table.finishAvg[type](avgGot.data(), count, 6);
        EXPECT_TRUE(avgGot.sameBytes(avgWant, count)) << "finishAvg";
      }
  }
  if (!compared) GTEST_SKIP() << "only the generic ISA is available on this machine";
}

// Every ISA's streaming copy is memcpy: any size and alignment (the 64-byte lines in between go
// around the cache), and nothing outside [dst, dst + n) is touched.
TEST(Kernels, EveryIsaStreamCopyIsMemcpy) {
  std::vector<unsigned char> src(4 << 10), dst(src.size() + 256);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  for (int i = 0; i < kNumIsas; ++i) {
    if (!isaAvailable(Isa(i))) continue;
    for (size_t dstOff : {0, 1, 8, 63})
      for (size_t srcOff : {0, 3})
        for (size_t n : {0, 1, 63, 64, 65, 127, 200, 4000}) {
          SCOPED_TRACE(std::string(isaName(Isa(i))) + " dst+" + std::to_string(dstOff) + " src+" +
                       std::to_string(srcOff) + " n " + std::to_string(n));
          std::fill(dst.begin(), dst.end(), 0xee);
          // 64 bytes in, so that dst + dstOff lies at every offset within a line.
          unsigned char* d = dst.data() + 64 + dstOff;
          kernelTable(Isa(i)).streamCopy(d, src.data() + srcOff, n);
          EXPECT_EQ(std::memcmp(d, src.data() + srcOff, n), 0);
          for (unsigned char* p = dst.data(); p < d; ++p)
            ASSERT_EQ(*p, 0xee) << "before, at " << d - p;
          for (unsigned char* p = d + n; p < dst.data() + dst.size(); ++p)
            ASSERT_EQ(*p, 0xee) << "after";
        }
  }
}

// reduceStreamed gives reduce()'s bytes for every type and op, across its 4 KiB blocks, at a
// destination off the line boundary, and with the destination one of the operands.
TEST(Kernels, ReduceStreamedIsReduce) {
  for (ncclDataType_t type : kTypes)
    for (ncclRedOp_t op : kOps)
      for (size_t count : {size_t(1), size_t(7), size_t(4096 + 3), size_t(100003)}) {
        SCOPED_TRACE(std::string(typeName(type)) + " " + opName(op) + " count " +
                     std::to_string(count));
        const size_t size = typeSize(type);
        Buffer a = randomBuffer(type, count + 1, 41 + type, op == ncclProd);
        Buffer b = randomBuffer(type, count + 1, 42 + type, op == ncclProd);
        Buffer want(type, count + 1), got(type, count + 1);
        // One element in: the destination starts off a 64-byte boundary.
        char* wantAt = static_cast<char*>(want.data()) + size;
        char* gotAt = static_cast<char*>(got.data()) + size;
        reduce(wantAt, a.data(), b.data(), count, type, op);
        reduceStreamed(gotAt, a.data(), b.data(), count, type, op);
        EXPECT_EQ(std::memcmp(gotAt, wantAt, count * size), 0) << "out of place";
        Buffer alias = a;
        reduceStreamed(alias.data(), alias.data(), b.data(), count, type, op);
        reduce(a.data(), a.data(), b.data(), count, type, op);
        EXPECT_TRUE(alias.sameBytes(a, count)) << "dst == a";
      }
}

// Each ISA's vectorised conversion of all 65536 half and bfloat16 patterns: x + (-0) == x for
// every non-NaN x, and NaN stays NaN with its sign and payload, quieted.
TEST(Kernels, EveryIsaConvertsEverySixteenBitPattern) {
  for (int i = 0; i < kNumIsas; ++i) {
    Isa isa = Isa(i);
    if (!isaAvailable(isa)) continue;
    for (ncclDataType_t type : {ncclFloat16, ncclBfloat16}) {
      SCOPED_TRACE(std::string(isaName(isa)) + " " + typeName(type));
      std::vector<uint16_t> all(65536), negZero(65536, 0x8000), out(65536);
      for (size_t v = 0; v < all.size(); ++v) all[v] = uint16_t(v);
      kernelTable(isa).reduce[type][0](out.data(), all.data(), negZero.data(), all.size());
      const testref::FormatSpec& spec = testref::specOf(type);
      uint16_t quiet = type == ncclFloat16 ? 0x200 : 0x40;
      int failures = 0;
      for (size_t v = 0; v < all.size() && failures < 5; ++v) {
        uint16_t want = testref::isNan(spec, uint32_t(v)) ? uint16_t(v | quiet) : uint16_t(v);
        if (out[v] != want) {
          ++failures;
          ADD_FAILURE() << std::hex << "0x" << v << " gave 0x" << out[v];
        }
      }
    }
  }
}

TEST(Kernels, BraidIsaOnlyLowersTheIsa) {
  EXPECT_EQ(resolveIsaRequest(nullptr, Isa::Avx512), Isa::Avx512);
  EXPECT_EQ(resolveIsaRequest("", Isa::Avx2), Isa::Avx2);
  EXPECT_EQ(resolveIsaRequest("generic", Isa::Avx512), Isa::Generic);
  EXPECT_EQ(resolveIsaRequest("avx2", Isa::Avx512), Isa::Avx2);
  EXPECT_EQ(resolveIsaRequest("avx512", Isa::Avx2), Isa::Avx2);
  EXPECT_EQ(resolveIsaRequest("avx2", Isa::Generic), Isa::Generic);
  EXPECT_EQ(resolveIsaRequest("sse9", Isa::Avx2), Isa::Avx2);
}

// The variable reaches the dispatcher: a fresh process (the threadsafe death-test style
// re-executes the binary, so activeIsa() has not been fixed yet) with BRAID_ISA=generic.
TEST(Kernels, BraidIsaForcesGenericInAFreshProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("BRAID_ISA", "generic", 1);
        std::exit(activeIsa() == Isa::Generic && !std::strcmp(isaName(), "generic") ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace braid::kernels
