// Host reduction throughput per ISA, next to memcpy of the same buffer size.
//
// Bytes/s counts every stream the loop touches: a reduction reads a and b and writes dst, so
// 3 x buffer bytes per call; memcpy reads src and writes dst, 2 x buffer bytes. (Write-allocate
// traffic, the read of dst's lines before they are written, is not counted.) At 1 MiB the
// three buffers fit in L2 on most machines; 64 MiB measures memory bandwidth.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "benchmark_main.h"
#include "kernels/isa.h"
#include "kernels/reduce.h"

namespace braid::kernels {
namespace {

constexpr size_t kSizes[] = {size_t(1) << 20, size_t(64) << 20};
constexpr ncclDataType_t kTypes[] = {ncclFloat32, ncclFloat16, ncclBfloat16, ncclInt32};

// Buffers filled with ordinary values: 1.0 in every format (0x3c00 half, 0x3f80 bf16, 1.0f),
// and small integers, so no lane runs into NaN or denormal slow paths.
std::vector<unsigned char> filled(ncclDataType_t type, size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  uint32_t one32 = type == ncclFloat32 ? 0x3f800000u : 1u;
  uint16_t one16 = type == ncclFloat16 ? 0x3c00 : 0x3f80;
  for (size_t i = 0; i < bytes; i += typeSize(type)) {
    if (typeSize(type) == 4)
      std::memcpy(&buf[i], &one32, 4);
    else
      std::memcpy(&buf[i], &one16, 2);
  }
  return buf;
}

void reduceSum(benchmark::State& state, Isa isa, ncclDataType_t type, size_t bytes) {
  auto a = filled(type, bytes), b = filled(type, bytes), dst = filled(type, bytes);
  auto fn = kernelTable(isa).reduce[type][ncclSum];
  size_t count = bytes / typeSize(type);
  for (auto _ : state) {
    fn(dst.data(), a.data(), b.data(), count);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(3 * bytes));
}

void copy(benchmark::State& state, size_t bytes) {
  std::vector<unsigned char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(2 * bytes));
}

std::string sizeName(size_t bytes) { return std::to_string(bytes >> 20) + "MiB"; }

void registerAll() {
  for (size_t bytes : kSizes) {
    benchmark::RegisterBenchmark(("memcpy/" + sizeName(bytes)).c_str(), copy, bytes);
    for (int i = 0; i < kNumIsas; ++i) {
      Isa isa = Isa(i);
      if (!isaAvailable(isa)) continue;
      for (ncclDataType_t type : kTypes) {
        std::string name =
            std::string("sum/") + typeName(type) + "/" + isaName(isa) + "/" + sizeName(bytes);
        benchmark::RegisterBenchmark(name.c_str(), reduceSum, isa, type, bytes);
      }
    }
  }
}

}  // namespace
}  // namespace braid::kernels

int main(int argc, char** argv) {
  return braid::bench::benchmarkMain(argc, argv, braid::kernels::registerAll);
}
