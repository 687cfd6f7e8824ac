// The codec loops, compiled once per ISA: each including translation unit defines
// BRAID_ISA_NAMESPACE and builds its codecTable() from makeCodecTable(). No include guard and an
// unnamed namespace, for the reason given in kernels/reduce_loops.h (no instantiation built for
// AVX-512 may be merged into the generic path).
//
// The loops are plain element loops the compiler vectorises: integer max for the block's
// absolute maximum (float order equals integer order of the magnitude bits, and NaN and Inf sit
// above every finite value, so the same reduction also detects them), float multiply and the
// magic-number rounding of quant_math.h for the codes.
#ifndef BRAID_ISA_NAMESPACE
#error "define BRAID_ISA_NAMESPACE before including kernel_loops.h"
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "compress/codec_kernels.h"
#include "compress/quant_math.h"
#include "kernels/functors.h"

namespace braid::compress::BRAID_ISA_NAMESPACE {
namespace {

using kernels::BFloat16;
using kernels::bitsFloat;
using kernels::ElemTraits;
using kernels::floatBits;
using kernels::Half;

constexpr size_t kMaxBlock = 256;  // Int8BlockOptions::kMaxBlock

// One block's values v = x (+ r) into v, and the largest magnitude's bits. kN: the block size
// when known at compile time (the loop then unrolls with no tail), 0 for n.
template <typename T, bool kResidual, size_t kN>
BRAID_INLINE uint32_t loadBlock(const T* __restrict x, const float* __restrict r,
                                float* __restrict v, size_t n) {
  const size_t len = kN ? kN : n;
  uint32_t maxBits = 0;
  for (size_t i = 0; i < len; ++i) {
    float value = ElemTraits<T>::load(x[i]);
    if constexpr (kResidual) value += r[i];
    v[i] = value;
    uint32_t a = floatBits(value) & quant::kAbsMask;
    maxBits = a > maxBits ? a : maxBits;
  }
  return maxBits;
}

// One ordinary block's codes (restrict: int8_t may alias anything, and without it every block
// pays run-time overlap checks).
template <bool kResidual, bool kStochastic, size_t kN>
BRAID_INLINE void codeBlock(const float* __restrict v, float* __restrict r,
                            int8_t* __restrict codes, size_t n, const quant::BlockScale& sc,
                            quant::RandomKey key, uint32_t first) {
  const size_t len = kN ? kN : n;
  for (size_t i = 0; i < len; ++i) {
    float u = 0.0f;
    if constexpr (kStochastic) u = quant::uniform(key, first + uint32_t(i));
    float q = quant::quantize<kStochastic>(v[i], sc, quant::kLevels, u);
    codes[i] = int8_t(int32_t(q));
    // The decoder computes exactly q * scale, so this is what the message did not carry.
    if constexpr (kResidual) r[i] = v[i] - q * sc.scale;
  }
}

// Quantises in chunks of whole blocks that fit in L1, one pass at a time over the chunk: the
// values and maxima of every block, then every scale, then every code. Done block by block,
// each block would wait on its own reduction and two divisions before its codes could start;
// across a chunk those chains are independent and overlap.
template <typename T, bool kResidual, bool kStochastic, size_t kN>
void quantizeChunks(const T* in, float* residual, size_t count, const QuantParams& p,
                    QuantBuffers out) {
  constexpr size_t kChunk = 4096;
  const size_t blockSize = kN ? kN : p.blockSize;
  const size_t chunkBlocks = kChunk / blockSize;
  const quant::RandomKey key = quant::randomKey(p.seed);
  alignas(64) float v[kChunk];
  uint32_t maxBits[kChunk / 32];
  quant::BlockScale scales[kChunk / 32];
  for (size_t chunk = 0; chunk < count; chunk += chunkBlocks * blockSize) {
    const size_t firstBlock = chunk / blockSize;
    const size_t n = std::min(chunkBlocks * blockSize, count - chunk);
    const size_t blocks = (n + blockSize - 1) / blockSize;
    const size_t full = n / blockSize;
    float* r = kResidual ? residual + chunk : nullptr;
    for (size_t b = 0; b < full; ++b)
      maxBits[b] = loadBlock<T, kResidual, kN>(in + chunk + b * blockSize,
                                               kResidual ? r + b * blockSize : nullptr,
                                               v + b * blockSize, blockSize);
    if (full < blocks)
      maxBits[full] = loadBlock<T, kResidual, 0>(in + chunk + full * blockSize,
                                                 kResidual ? r + full * blockSize : nullptr,
                                                 v + full * blockSize, n - full * blockSize);
    for (size_t b = 0; b < blocks; ++b) {
      if (maxBits[b] >= quant::kInfBits) continue;
      scales[b] = quant::blockScale(bitsFloat(maxBits[b]), quant::kLevels, p.bf16Scales);
      quant::storeScale(out.scales, firstBlock + b, scales[b].scale, false, p.bf16Scales);
    }
    for (size_t b = 0; b < blocks; ++b) {
      const size_t off = b * blockSize;
      const size_t len = std::min(blockSize, n - off);
      float* rb = kResidual ? r + off : nullptr;
      int8_t* codes = out.codes + chunk + off;
      if (maxBits[b] >= quant::kInfBits)
        quant::encodeSpecialBlock(v + off, len, chunk + off, rb, p, kStochastic, out.scales,
                                  firstBlock + b, codes);
      else if (len == blockSize)
        codeBlock<kResidual, kStochastic, kN>(v + off, rb, codes, len, scales[b], key,
                                              uint32_t(chunk + off));
      else
        codeBlock<kResidual, kStochastic, 0>(v + off, rb, codes, len, scales[b], key,
                                             uint32_t(chunk + off));
    }
  }
}

// The common block sizes get loops of fixed length; others run the same code with a variable
// one.
template <typename T, bool kResidual, bool kStochastic>
void quantizeLoop(const void* input, float* residual, size_t count, const QuantParams& p,
                  QuantBuffers out) {
  const T* in = static_cast<const T*>(input);
  switch (p.blockSize) {
    case 32: return quantizeChunks<T, kResidual, kStochastic, 32>(in, residual, count, p, out);
    case 64: return quantizeChunks<T, kResidual, kStochastic, 64>(in, residual, count, p, out);
    case 128: return quantizeChunks<T, kResidual, kStochastic, 128>(in, residual, count, p, out);
    case 256: return quantizeChunks<T, kResidual, kStochastic, 256>(in, residual, count, p, out);
    default: return quantizeChunks<T, kResidual, kStochastic, 0>(in, residual, count, p, out);
  }
}

// Calls body(base, n, codes, scale) for ordinary blocks and decodes special ones into a block
// buffer handed to special(base, n, values).
template <typename Ordinary, typename Special>
BRAID_INLINE void forEachBlock(ConstQuantBuffers in, size_t count, const QuantParams& p,
                               Ordinary ordinary, Special special) {
  const size_t blockSize = p.blockSize;
  alignas(64) float values[kMaxBlock];
  for (size_t base = 0, block = 0; base < count; base += blockSize, ++block) {
    const size_t n = std::min(blockSize, count - base);
    const uint32_t bits = quant::loadScaleBits(in.scales, block, p.bf16Scales);
    if (bits >> 31) {
      quant::decodeSpecialBlock(in.codes + base, n, bitsFloat(bits & quant::kAbsMask), values);
      special(base, n, values);
    } else {
      ordinary(base, n, in.codes + base, bitsFloat(bits));
    }
  }
}

void dequantizeAccumulateLoop(ConstQuantBuffers in, size_t count, const QuantParams& p,
                              float* acc) {
  forEachBlock(
      in, count, p,
      [acc](size_t base, size_t n, const int8_t* __restrict codes, float s) {
        float* __restrict a = acc + base;
        for (size_t i = 0; i < n; ++i) a[i] += float(codes[i]) * s;
      },
      [acc](size_t base, size_t n, const float* values) {
        for (size_t i = 0; i < n; ++i) acc[base + i] += values[i];
      });
}

template <typename T>
void dequantizeLoop(ConstQuantBuffers in, size_t count, const QuantParams& p, void* outv) {
  using Traits = ElemTraits<T>;
  T* out = static_cast<T*>(outv);
  forEachBlock(
      in, count, p,
      [out](size_t base, size_t n, const int8_t* __restrict codes, float s) {
        T* __restrict o = out + base;
        for (size_t i = 0; i < n; ++i) o[i] = Traits::store(float(codes[i]) * s);
      },
      [out](size_t base, size_t n, const float* values) {
        for (size_t i = 0; i < n; ++i) out[base + i] = Traits::store(values[i]);
      });
}

template <typename T>
void widenLoop(float* dst, const void* inputv, size_t count) {
  const T* in = static_cast<const T*>(inputv);
  for (size_t i = 0; i < count; ++i) dst[i] = ElemTraits<T>::load(in[i]);
}

template <typename T>
void widenAccumulateLoop(float* dst, const void* inputv, size_t count) {
  const T* in = static_cast<const T*>(inputv);
  for (size_t i = 0; i < count; ++i) dst[i] += ElemTraits<T>::load(in[i]);
}

// The one pass of top-k's threshold search. Counted in 32-bit lanes over slices that cannot
// overflow them, which keeps the vector loop in 32-bit arithmetic.
size_t countAtLeastLoop(const float* v, size_t count, uint32_t key) {
  constexpr size_t kSlice = size_t(1) << 30;
  size_t total = 0;
  for (size_t base = 0; base < count; base += kSlice) {
    const size_t n = std::min(kSlice, count - base);
    const float* x = v + base;
    uint32_t c = 0;
    for (size_t i = 0; i < n; ++i) c += (floatBits(x[i]) & quant::kAbsMask) >= key ? 1u : 0u;
    total += c;
  }
  return total;
}

// The candidates of top-k, usually a small fraction: each group of 16 is first tested as a
// whole (a vector compare and an OR), and only groups holding one are scanned, branch-free.
size_t collectAtLeastLoop(const float* v, size_t count, uint32_t key, uint32_t* indices) {
  constexpr size_t kGroup = 16;
  size_t found = 0, i = 0;
  for (; i + kGroup <= count; i += kGroup) {
    uint32_t any = 0;
    for (size_t j = 0; j < kGroup; ++j) any |= (floatBits(v[i + j]) & quant::kAbsMask) >= key;
    if (!any) continue;
    for (size_t j = 0; j < kGroup; ++j) {
      indices[found] = uint32_t(i + j);
      found += (floatBits(v[i + j]) & quant::kAbsMask) >= key;
    }
  }
  for (; i < count; ++i) {
    indices[found] = uint32_t(i);
    found += (floatBits(v[i]) & quant::kAbsMask) >= key;
  }
  return found;
}

template <typename T>
constexpr void fillKind(CodecKernelTable& t, FloatKind kind) {
  const int k = int(kind);
  t.quantize[k][0][0] = &quantizeLoop<T, false, false>;
  t.quantize[k][0][1] = &quantizeLoop<T, false, true>;
  t.quantize[k][1][0] = &quantizeLoop<T, true, false>;
  t.quantize[k][1][1] = &quantizeLoop<T, true, true>;
  t.dequantize[k] = &dequantizeLoop<T>;
  t.widen[k] = &widenLoop<T>;
  t.widenAccumulate[k] = &widenAccumulateLoop<T>;
}

constexpr CodecKernelTable makeCodecTable() {
  CodecKernelTable t{};
  fillKind<float>(t, FloatKind::Fp32);
  fillKind<Half>(t, FloatKind::Fp16);
  fillKind<BFloat16>(t, FloatKind::Bf16);
  t.dequantizeAccumulate = &dequantizeAccumulateLoop;
  t.countAtLeast = &countAtLeastLoop;
  t.collectAtLeast = &collectAtLeastLoop;
  return t;
}

}  // namespace
}  // namespace braid::compress::BRAID_ISA_NAMESPACE
