// The CUDA codecs: kernels around compress/codec_spans.h, and top-k's stable compaction by CUB.
// Nothing here computes a value the CPU tests do not compute through the same functions.
#include "compress/cuda/codec_cuda.h"

#include <thrust/iterator/counting_iterator.h>
#include <cub/device/device_select.cuh>

#include "compress/codec_spans.h"
#include "compress/int8_block.h"
#include "compress/topk.h"
#include "kernels/cuda/kernels.h"

namespace braid::compress::cuda {
namespace {

using braid::cuda::cudaStatus;
using braid::cuda::gridBlocks;
using kernels::BFloat16;
using kernels::Half;

constexpr unsigned kThreads = braid::cuda::kThreadsPerBlock;
constexpr unsigned kWarp = 32;

__device__ size_t workerIndex() { return size_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ size_t workerCount() { return size_t(gridDim.x) * blockDim.x; }

// The first threads of block 0 write a message's header.
__device__ void writeHeaderBytes(unsigned char* out, const Header& h) {
  if (blockIdx.x == 0 && threadIdx.x < sizeof(Header))
    out[threadIdx.x] = reinterpret_cast<const unsigned char*>(&h)[threadIdx.x];
}

__device__ Header readHeaderBytes(const unsigned char* in) {
  Header h;
  auto* bytes = reinterpret_cast<unsigned char*>(&h);
  for (unsigned j = 0; j < sizeof(Header); ++j) bytes[j] = in[j];
  return h;
}

// Calls f(T{}) with the element type of a compressible `type`.
template <typename F>
cudaError_t withFloatType(ncclDataType_t type, F&& f) {
  switch (floatKind(type)) {
    case FloatKind::Fp16: return f(Half{});
    case FloatKind::Bf16: return f(BFloat16{});
    default: return f(float{});
  }
}

// ---- INT8 block ----

// A warp codes one block at a time (codec_spans.h's lanes).
template <typename T, bool kResidual, bool kStochastic>
__global__ void __launch_bounds__(kThreads)
    int8EncodeKernel(const T* x, float* r, size_t count, QuantParams p, Header h,
                     unsigned char* out) {
  writeHeaderBytes(out, h);
  unsigned char* scales = out + sizeof(Header);
  const size_t blocks = int8BlockCount(count, p.blockSize);
  int8_t* codes = reinterpret_cast<int8_t*>(scales + blocks * (p.bf16Scales ? 2 : 4));
  const unsigned lane = threadIdx.x % kWarp;
  const quant::RandomKey key = quant::randomKey(p.seed);
  // The loop bound is the same for every lane of a warp, so the shuffles see all 32.
  for (size_t b = workerIndex() / kWarp; b < blocks; b += workerCount() / kWarp) {
    const size_t base = b * p.blockSize;
    const size_t n = count - base < p.blockSize ? count - base : p.blockSize;
    float* rb = kResidual ? r + base : nullptr;
    spans::BlockMax m = spans::laneMax<T, kResidual>(x + base, rb, n, lane, kWarp);
    m.all = __reduce_max_sync(0xffffffffu, m.all);
    m.finite = __reduce_max_sync(0xffffffffu, m.finite);
    const spans::BlockCoding c = spans::blockCoding(m, p.bf16Scales);
    if (lane == 0) quant::storeScale(scales, b, c.scale.scale, c.special, p.bf16Scales);
    spans::codeLane<T, kResidual, kStochastic>(x + base, rb, n, c, key, uint32_t(base),
                                               codes + base, lane, kWarp);
  }
}

template <typename T, bool kResidual, bool kStochastic>
cudaError_t launchInt8Encode(const void* x, float* r, size_t count, const QuantParams& p,
                             const Header& h, void* out, cudaStream_t stream) {
  const size_t warps = int8BlockCount(count, p.blockSize);
  int8EncodeKernel<T, kResidual, kStochastic><<<gridBlocks(warps * kWarp), kThreads, 0, stream>>>(
      static_cast<const T*>(x), r, count, p, h, static_cast<unsigned char*>(out));
  return cudaGetLastError();
}

using Int8EncodeFn = cudaError_t (*)(const void*, float*, size_t, const QuantParams&, const Header&,
                                     void*, cudaStream_t);

template <typename T>
Int8EncodeFn int8EncodeFn(bool residual, bool stochastic) {
  if (residual)
    return stochastic ? &launchInt8Encode<T, true, true> : &launchInt8Encode<T, true, false>;
  return stochastic ? &launchInt8Encode<T, false, true> : &launchInt8Encode<T, false, false>;
}

Status int8Encode(const Int8BlockCodec& codec, const void* input, size_t count, ncclDataType_t type,
                  float* residual, uint64_t seed, void* out, cudaStream_t stream) {
  const Int8BlockOptions& o = codec.options();
  const bool bf16 = o.scales == ScaleFormat::Bf16;
  const bool stochastic = o.rounding == Rounding::Stochastic;
  const Header h{uint8_t(CodecId::Int8Block),
                 kFormatVersion,
                 uint8_t((stochastic ? kInt8FlagStochastic : 0) | (bf16 ? kInt8FlagBf16Scales : 0)),
                 0,
                 o.blockSize,
                 count};
  const QuantParams params{o.blockSize, bf16, seed};
  const cudaError_t err = withFloatType(type, [&](auto t) {
    return int8EncodeFn<decltype(t)>(residual != nullptr, stochastic)(input, residual, count,
                                                                      params, h, out, stream);
  });
  return cudaStatus(err, "int8_block encode kernel");
}

// The parameters of an int8_block message for `count` elements that is inBytes long, or false
// where its header says otherwise.
__device__ bool int8Message(const unsigned char* in, size_t inBytes, size_t count,
                            ConstQuantBuffers* buffers, QuantParams* p) {
  const Header h = readHeaderBytes(in);
  if (h.codec != uint8_t(CodecId::Int8Block) || h.version != kFormatVersion || h.count != count ||
      h.param < Int8BlockOptions::kMinBlock || h.param > Int8BlockOptions::kMaxBlock)
    return false;
  const bool bf16 = h.flags & kInt8FlagBf16Scales;
  if (inBytes != int8MessageBytes(count, h.param, bf16)) return false;
  *p = QuantParams{h.param, bf16, 0};
  const unsigned char* scales = in + sizeof(Header);
  *buffers = {scales, reinterpret_cast<const int8_t*>(scales + int8BlockCount(count, h.param) *
                                                                   (bf16 ? 2 : 4))};
  return true;
}

// What a decode does with the message: out[i] = element i in T, or (kAccumulate, T float)
// out[i] += it.
template <typename T, bool kAccumulate>
struct DecodeInto {
  T* out;
  __device__ void operator()(ConstQuantBuffers in, size_t count, const QuantParams& p, size_t w,
                             size_t s) const {
    if constexpr (kAccumulate)
      spans::decodeAccumulateSpan(in, count, p.blockSize, p.bf16Scales, out, w, s);
    else
      spans::decodeSpan(in, count, p.blockSize, p.bf16Scales, out, w, s);
  }
};

// Every thread reads the header (one cached line) and checks it: a bad message writes nothing.
template <typename Apply>
__global__ void __launch_bounds__(kThreads)
    int8DecodeKernel(const unsigned char* in, size_t inBytes, size_t count, uint32_t* check,
                     Apply apply) {
  ConstQuantBuffers buffers;
  QuantParams p;
  if (!int8Message(in, inBytes, count, &buffers, &p)) {
    if (workerIndex() == 0) *check = kBadHeader;
    return;
  }
  apply(buffers, count, p, workerIndex(), workerCount());
}

template <typename Apply>
cudaError_t launchInt8Decode(const void* in, size_t inBytes, size_t count, uint32_t* check,
                             Apply apply, cudaStream_t stream) {
  int8DecodeKernel<<<gridBlocks(count), kThreads, 0, stream>>>(
      static_cast<const unsigned char*>(in), inBytes, count, check, apply);
  return cudaGetLastError();
}

// ---- Top-k ----

// Device memory of one top-k encode: the radix selection's state and counts, the number CUB
// selected, then CUB's own temporary storage.
struct TopkScratch {
  spans::RadixState state;
  uint32_t counts[spans::kRadixBins];
  uint32_t selected;
};
constexpr size_t kScratchHead = (sizeof(TopkScratch) + 255) / 256 * 256;

__global__ void radixStartKernel(TopkScratch* s, uint64_t k) {
  s->state = spans::radixStart(k);
  for (int d = 0; d < spans::kRadixBins; ++d) s->counts[d] = 0;
}

// One pass's counts: per block in shared memory, then added to the scratch's.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    radixCountKernel(const T* v, size_t count, TopkScratch* s) {
  __shared__ uint32_t counts[spans::kRadixBins];
  const spans::RadixState state = s->state;
  if (state.done) return;  // the same for every thread of the grid
  for (unsigned d = threadIdx.x; d < spans::kRadixBins; d += blockDim.x) counts[d] = 0;
  __syncthreads();
  for (size_t i = workerIndex(); i < count; i += workerCount()) {
    const int d = spans::topkDigit(v, i, state);
    if (d >= 0) atomicAdd(&counts[d], 1u);
  }
  __syncthreads();
  for (unsigned d = threadIdx.x; d < spans::kRadixBins; d += blockDim.x)
    if (counts[d]) atomicAdd(&s->counts[d], counts[d]);
}

// The pass's digit, and the counts cleared for the next pass.
__global__ void radixChooseKernel(TopkScratch* s) {
  if (!s->state.done) spans::chooseDigit(s->counts, &s->state);
  for (int d = 0; d < spans::kRadixBins; ++d) s->counts[d] = 0;
}

template <typename T>
struct KeptAtCut {
  const T* v;
  const TopkScratch* s;
  __device__ bool operator()(uint32_t i) const { return spans::topkKept(v, i, s->state.prefix); }
};

template <typename T>
__global__ void __launch_bounds__(kThreads)
    addInputKernel(float* residual, const T* input, size_t count) {
  spans::addInputSpan(residual, input, count, workerIndex(), workerCount());
}

// The header, and the values of the kept indices CUB wrote; with error feedback their residual
// is cleared (they are sent exactly).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    topkGatherKernel(const T* v, float* residual, uint32_t k, Header h, unsigned char* out) {
  writeHeaderBytes(out, h);
  const auto* indices = reinterpret_cast<const uint32_t*>(out + sizeof(Header));
  auto* values = reinterpret_cast<float*>(out + sizeof(Header) + 4 * size_t(k));
  for (size_t j = workerIndex(); j < k; j += workerCount()) {
    const uint32_t i = indices[j];
    values[j] = spans::topkValue(v, i);
    if (residual) residual[i] = 0.0f;
  }
}

// Selects from v (the input, or the residual holding input + residual) into out.
template <typename T>
cudaError_t topkSelect(const T* v, size_t count, uint32_t k, float* residual, void* outv,
                       cudaStream_t stream) {
  auto* out = static_cast<unsigned char*>(outv);
  auto* indices = reinterpret_cast<uint32_t*>(out + sizeof(Header));
  const thrust::counting_iterator<uint32_t> all(0);
  size_t cubBytes = 0;
  cudaError_t err = cub::DeviceSelect::If(nullptr, cubBytes, all, indices, (uint32_t*)nullptr,
                                          uint32_t(count), KeptAtCut<T>{v, nullptr}, stream);
  if (err != cudaSuccess) return err;
  void* mem = nullptr;
  if ((err = cudaMallocAsync(&mem, kScratchHead + cubBytes, stream)) != cudaSuccess) return err;
  auto* s = static_cast<TopkScratch*>(mem);
  radixStartKernel<<<1, 1, 0, stream>>>(s, k);
  const unsigned grid = gridBlocks(count);
  for (int pass = 0; pass < spans::kRadixPasses; ++pass) {
    radixCountKernel<<<grid, kThreads, 0, stream>>>(v, count, s);
    radixChooseKernel<<<1, 1, 0, stream>>>(s);
  }
  err = cudaGetLastError();
  if (err == cudaSuccess)
    err = cub::DeviceSelect::If(static_cast<char*>(mem) + kScratchHead, cubBytes, all, indices,
                                &s->selected, uint32_t(count), KeptAtCut<T>{v, s}, stream);
  if (err == cudaSuccess) {
    const Header h{uint8_t(CodecId::TopK), kFormatVersion, 0, 0, k, count};
    topkGatherKernel<<<gridBlocks(k), kThreads, 0, stream>>>(v, residual, k, h, out);
    err = cudaGetLastError();
  }
  const cudaError_t freed = cudaFreeAsync(mem, stream);
  return err != cudaSuccess ? err : freed;
}

Status topkEncode(const TopKCodec& codec, const void* input, size_t count, ncclDataType_t type,
                  float* residual, void* out, cudaStream_t stream) {
  const uint32_t k = uint32_t(codec.keptCount(count));
  cudaError_t err;
  if (residual) {
    err = withFloatType(type, [&](auto t) {
      using T = decltype(t);
      addInputKernel<T><<<gridBlocks(count), kThreads, 0, stream>>>(
          residual, static_cast<const T*>(input), count);
      return cudaGetLastError();
    });
    if (err == cudaSuccess) err = topkSelect<float>(residual, count, k, residual, out, stream);
  } else {
    err = withFloatType(type, [&](auto t) {
      using T = decltype(t);
      return topkSelect<T>(static_cast<const T*>(input), count, k, nullptr, out, stream);
    });
  }
  return cudaStatus(err, "topk encode");
}

// k of a top-k message for `count` elements that is inBytes long, or false where its header
// says otherwise.
__device__ bool topkMessage(const unsigned char* in, size_t inBytes, size_t count, uint32_t* k) {
  const Header h = readHeaderBytes(in);
  if (h.codec != uint8_t(CodecId::TopK) || h.version != kFormatVersion || h.count != count ||
      h.param > count || inBytes != sizeof(Header) + 8 * size_t(h.param))
    return false;
  *k = h.param;
  return true;
}

// Checks the header and that the indices ascend below count, before anything is written.
__global__ void __launch_bounds__(kThreads)
    topkCheckKernel(const unsigned char* in, size_t inBytes, size_t count, uint32_t* check) {
  uint32_t k;
  if (!topkMessage(in, inBytes, count, &k)) {
    if (workerIndex() == 0) *check = kBadHeader;
    return;
  }
  const auto* indices = reinterpret_cast<const uint32_t*>(in + sizeof(Header));
  for (size_t j = workerIndex(); j < k; j += workerCount())
    if (indices[j] >= count || (j > 0 && indices[j - 1] >= indices[j])) *check = kBadIndex;
}

// out[0, count) = 0 (+0 in all three types), where the message passed its check.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    topkClearKernel(T* out, size_t count, const uint32_t* check) {
  if (*check != kMessageOk) return;
  for (size_t i = workerIndex(); i < count; i += workerCount()) out[i] = T{};
}

struct AccumulatePair {
  float* acc;
  __device__ void operator()(uint32_t i, float v) const { acc[i] += v; }
};

template <typename T>
struct StorePair {
  T* out;
  __device__ void operator()(uint32_t i, float v) const {
    out[i] = kernels::ElemTraits<T>::store(v);
  }
};

// apply(index, value) for each pair of a message that passed its check.
template <typename Apply>
__global__ void __launch_bounds__(kThreads)
    topkPairsKernel(const unsigned char* in, const uint32_t* check, Apply apply) {
  if (*check != kMessageOk) return;
  const uint32_t k = readHeaderBytes(in).param;
  const auto* indices = reinterpret_cast<const uint32_t*>(in + sizeof(Header));
  const auto* values = reinterpret_cast<const float*>(in + sizeof(Header) + 4 * size_t(k));
  for (size_t j = workerIndex(); j < k; j += workerCount()) apply(indices[j], values[j]);
}

// The pairs' kernel is sized by count (k is on the device): a grid-stride loop over at most
// count pairs.
template <typename Apply>
cudaError_t launchTopkPairs(const void* in, size_t count, uint32_t* check, Apply apply,
                            cudaStream_t stream) {
  topkPairsKernel<<<gridBlocks(count), kThreads, 0, stream>>>(static_cast<const unsigned char*>(in),
                                                              check, apply);
  return cudaGetLastError();
}

cudaError_t launchTopkCheck(const void* in, size_t inBytes, size_t count, uint32_t* check,
                            cudaStream_t stream) {
  topkCheckKernel<<<gridBlocks(count), kThreads, 0, stream>>>(static_cast<const unsigned char*>(in),
                                                              inBytes, count, check);
  return cudaGetLastError();
}

// ---- Arguments ----

bool aligned(const void* p, size_t to) { return reinterpret_cast<uintptr_t>(p) % to == 0; }

Status checkArguments(const Codec& codec, const char* what, size_t count, ncclDataType_t type,
                      const void* data, const char* dataName, const void* message) {
  const std::string name = codec.name();
  if (!isCompressibleType(type))
    return invalidArgument("%s %s (device): datatype %d is not float, half or bfloat16",
                           name.c_str(), what, int(type));
  if (count > UINT32_MAX)
    return invalidArgument("%s %s (device): count %zu is above 2^32 - 1", name.c_str(), what,
                           count);
  const size_t unit = type == ncclFloat32 ? 4 : 2;
  if (!aligned(data, unit))
    return invalidArgument("%s %s (device): %s %p is not aligned to its %zu-byte elements",
                           name.c_str(), what, dataName, data, unit);
  if (!aligned(message, 4))
    return invalidArgument("%s %s (device): message %p is not 4-byte aligned", name.c_str(), what,
                           message);
  return Status::Ok();
}

Status noCudaVersion(const Codec& codec) {
  return invalidUsage("codec %s has no CUDA version", codec.name().c_str());
}

}  // namespace

const char* decodeCheckName(uint32_t check) {
  switch (check) {
    case kMessageOk: return "message ok";
    case kBadHeader: return "bad header";
    case kBadIndex: return "bad index";
    default: return "unknown check word";
  }
}

Status encode(const Codec& codec, const void* input, size_t count, ncclDataType_t type,
              float* residual, uint64_t seed, void* out, size_t outBytes, size_t* written,
              cudaStream_t stream) {
  BRAID_TRY(checkArguments(codec, "encode", count, type, input, "input", out));
  if (!aligned(residual, 4))
    return invalidArgument("%s encode (device): residual %p is not 4-byte aligned",
                           codec.name().c_str(), static_cast<void*>(residual));
  const size_t bytes = codec.maxEncodedBytes(count, type);
  if (outBytes < bytes)
    return invalidArgument("%s encode (device): output of %zu bytes, %zu elements need %zu",
                           codec.name().c_str(), outBytes, count, bytes);
  if (const auto* int8 = dynamic_cast<const Int8BlockCodec*>(&codec)) {
    BRAID_TRY(int8Encode(*int8, input, count, type, residual, seed, out, stream));
  } else if (const auto* topk = dynamic_cast<const TopKCodec*>(&codec)) {
    BRAID_TRY(topkEncode(*topk, input, count, type, residual, out, stream));
  } else {
    return noCudaVersion(codec);
  }
  *written = bytes;
  return Status::Ok();
}

Status decodeAccumulate(const Codec& codec, const void* in, size_t inBytes, size_t count,
                        float* acc, uint32_t* check, cudaStream_t stream) {
  BRAID_TRY(checkArguments(codec, "decodeAccumulate", count, ncclFloat32, acc, "acc", in));
  cudaError_t err;
  if (dynamic_cast<const Int8BlockCodec*>(&codec)) {
    err = launchInt8Decode(in, inBytes, count, check, DecodeInto<float, true>{acc}, stream);
  } else if (dynamic_cast<const TopKCodec*>(&codec)) {
    err = launchTopkCheck(in, inBytes, count, check, stream);
    if (err == cudaSuccess) err = launchTopkPairs(in, count, check, AccumulatePair{acc}, stream);
  } else {
    return noCudaVersion(codec);
  }
  return cudaStatus(err, "decodeAccumulate kernel");
}

Status decode(const Codec& codec, const void* in, size_t inBytes, size_t count, ncclDataType_t type,
              void* out, uint32_t* check, cudaStream_t stream) {
  BRAID_TRY(checkArguments(codec, "decode", count, type, out, "output", in));
  cudaError_t err;
  if (dynamic_cast<const Int8BlockCodec*>(&codec)) {
    err = withFloatType(type, [&](auto t) {
      using T = decltype(t);
      return launchInt8Decode(in, inBytes, count, check, DecodeInto<T, false>{static_cast<T*>(out)},
                              stream);
    });
  } else if (dynamic_cast<const TopKCodec*>(&codec)) {
    err = launchTopkCheck(in, inBytes, count, check, stream);
    if (err == cudaSuccess)
      err = withFloatType(type, [&](auto t) {
        using T = decltype(t);
        topkClearKernel<<<gridBlocks(count), kThreads, 0, stream>>>(static_cast<T*>(out), count,
                                                                    check);
        cudaError_t e = cudaGetLastError();
        return e != cudaSuccess
                   ? e
                   : launchTopkPairs(in, count, check, StorePair<T>{static_cast<T*>(out)}, stream);
      });
  } else {
    return noCudaVersion(codec);
  }
  return cudaStatus(err, "decode kernel");
}

}  // namespace braid::compress::cuda
