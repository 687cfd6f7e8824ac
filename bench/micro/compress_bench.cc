// Codec throughput per ISA, next to memcpy of the same tensor.
//
// Every row counts the bytes of the dense fp32 tensor it processes (count x 4) per second, so
// the codecs and memcpy read on one scale: "quantise at 20 GB/s" means 5 G elements/s
// whatever the message size. memcpy moves that tensor once (it reads and writes it, like the
// codecs read it and write the smaller message or the accumulator). 1 MiB fits in L2 on most
// machines; 64 MiB measures memory bandwidth.
//
// Rows: int8 quantise (nearest, stochastic, nearest with error feedback), dequantise-accumulate,
// the top-k threshold pass (countAtLeast over the whole tensor), and the whole top-k encode at
// 1% (active ISA only: its ISA-specific part is that pass).
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "benchmark_main.h"
#include "compress/codec_kernels.h"
#include "compress/topk.h"
#include "kernels/isa.h"
#include "kernels/types.h"

namespace braid::compress {
namespace {

using kernels::Isa;

constexpr size_t kSizes[] = {size_t(1) << 20, size_t(64) << 20};

std::vector<float> gradient(size_t count) {
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1e-3f);
  std::vector<float> v(count);
  for (float& x : v) x = d(rng);
  return v;
}

void setBytes(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}

void copy(benchmark::State& state, size_t bytes) {
  std::vector<unsigned char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, bytes);
}

constexpr uint32_t kBlock = 64;

struct Message {
  explicit Message(size_t count) : scales((count + kBlock - 1) / kBlock * 4), codes(count) {}
  std::vector<unsigned char> scales;
  std::vector<int8_t> codes;
};

void quantize(benchmark::State& state, Isa isa, size_t bytes, bool stochastic, bool feedback) {
  const size_t count = bytes / 4;
  auto x = gradient(count);
  std::vector<float> residual(feedback ? count : 0, 0.0f);
  Message m(count);
  auto fn = codecKernels(isa).quantize[int(FloatKind::Fp32)][feedback][stochastic];
  QuantParams p{kBlock, false, 7};
  for (auto _ : state) {
    fn(x.data(), feedback ? residual.data() : nullptr, count, p, {m.scales.data(), m.codes.data()});
    benchmark::DoNotOptimize(m.codes.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, bytes);
}

void dequantizeAccumulate(benchmark::State& state, Isa isa, size_t bytes) {
  const size_t count = bytes / 4;
  auto x = gradient(count);
  Message m(count);
  QuantParams p{kBlock, false, 7};
  const CodecKernelTable& t = codecKernels(isa);
  t.quantize[0][0][0](x.data(), nullptr, count, p, {m.scales.data(), m.codes.data()});
  std::vector<float> acc(count, 0.0f);
  for (auto _ : state) {
    t.dequantizeAccumulate({m.scales.data(), m.codes.data()}, count, p, acc.data());
    benchmark::DoNotOptimize(acc.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, bytes);
}

void thresholdPass(benchmark::State& state, Isa isa, size_t bytes) {
  const size_t count = bytes / 4;
  auto x = gradient(count);
  auto fn = codecKernels(isa).countAtLeast;
  const uint32_t key = kernels::floatBits(2.5e-3f);
  for (auto _ : state) benchmark::DoNotOptimize(fn(x.data(), count, key));
  setBytes(state, bytes);
}

void topkEncode(benchmark::State& state, size_t bytes, bool feedback) {
  const size_t count = bytes / 4;
  auto x = gradient(count);
  std::vector<float> residual(feedback ? count : 0, 0.0f);
  std::unique_ptr<TopKCodec> codec;
  if (!TopKCodec::create({0.01}, &codec).ok()) return state.SkipWithError("topk create");
  std::vector<std::byte> out(codec->maxEncodedBytes(count, ncclFloat32));
  size_t written = 0;
  for (auto _ : state) {
    Status s = codec->encode(x.data(), count, ncclFloat32, feedback ? residual.data() : nullptr, 0,
                             out, &written);
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  setBytes(state, bytes);
}

std::string sizeName(size_t bytes) { return std::to_string(bytes >> 20) + "MiB"; }

// "op/isa/size". Appending (rather than "literal" + string) also keeps GCC 12's -Wrestrict
// false positive out of the build.
std::string rowName(const char* op, const char* isa, const std::string& size) {
  std::string name = op;
  if (isa) name.append("/").append(isa);
  return name.append("/").append(size);
}

void registerAll() {
  for (size_t bytes : kSizes) {
    const std::string size = sizeName(bytes);
    benchmark::RegisterBenchmark(rowName("memcpy", nullptr, size).c_str(), copy, bytes);
    for (int i = 0; i < kernels::kNumIsas; ++i) {
      const Isa isa = Isa(i);
      if (!kernels::isaAvailable(isa)) continue;
      const char* name = kernels::isaName(isa);
      benchmark::RegisterBenchmark(rowName("int8_quantise/nearest", name, size).c_str(), quantize,
                                   isa, bytes, false, false);
      benchmark::RegisterBenchmark(rowName("int8_quantise/stochastic", name, size).c_str(),
                                   quantize, isa, bytes, true, false);
      benchmark::RegisterBenchmark(rowName("int8_quantise/nearest_feedback", name, size).c_str(),
                                   quantize, isa, bytes, false, true);
      benchmark::RegisterBenchmark(rowName("int8_dequantise_acc", name, size).c_str(),
                                   dequantizeAccumulate, isa, bytes);
      benchmark::RegisterBenchmark(rowName("topk_threshold_pass", name, size).c_str(),
                                   thresholdPass, isa, bytes);
    }
    const char* active = kernels::isaName(kernels::activeIsa());
    benchmark::RegisterBenchmark(rowName("topk_encode_1pct", active, size).c_str(), topkEncode,
                                 bytes, false);
    benchmark::RegisterBenchmark(rowName("topk_encode_1pct_feedback", active, size).c_str(),
                                 topkEncode, bytes, true);
  }
}

}  // namespace
}  // namespace braid::compress

int main(int argc, char** argv) {
  return braid::bench::benchmarkMain(argc, argv, braid::compress::registerAll);
}
