// The bodies of the CUDA codecs (compress/cuda), as host/device functions over the share of work
// one worker does. A CUDA kernel calls them with its thread's place in the grid; the unit tests
// (codec_spans_test.cc) call them on the CPU with every worker in turn and compare the bytes
// with the host codecs', so the arithmetic the device runs is tested on any machine. Every value
// is computed by quant_math.h's functions, in the host loops' order per element, and every
// reduction over elements is an integer maximum or a count, which no order changes.
//
// INT8 block: a group of `lanes` workers (a warp on the device) codes one block at a time. Each
// lane takes elements lane, lane + lanes, ...: its share of the block's maxima (laneMax), which
// the group combines (combineMax); every lane then derives the same coding (blockCoding), lane 0
// stores the scale, and each lane codes its own elements (codeLane). Decoding is element-wise.
//
// Top-k: the k largest rank keys (quant::rankKey: magnitude, then lower index; unique) found by
// radix selection, 8 bits of the 64-bit key per pass from the top: a pass counts, among keys
// whose digits so far match the prefix chosen, how many hold each value of the next digit
// (radixDigit), and chooseDigit walks those counts from the top to the digit holding the k-th
// key. The selection is every key at or above the cut, exactly k of them, written in index
// order (a stable compaction), which is the host codec's message.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/codec_kernels.h"
#include "compress/quant_math.h"
#include "kernels/functors.h"

namespace braid::compress::spans {

using kernels::bitsFloat;
using kernels::ElemTraits;
using kernels::floatBits;

// ---- INT8 block ----

// A block's largest magnitude (as float bits: NaN and Inf sit above every finite value) and its
// largest finite one (the scale of a special block).
struct BlockMax {
  uint32_t all = 0;
  uint32_t finite = 0;
};

BRAID_HOST_DEVICE BRAID_INLINE BlockMax combineMax(BlockMax a, BlockMax b) {
  return {a.all > b.all ? a.all : b.all, a.finite > b.finite ? a.finite : b.finite};
}

// Element i of a block: the input (+ the residual), as the host loops form it.
template <typename T, bool kResidual>
BRAID_HOST_DEVICE BRAID_INLINE float blockValue(const T* x, const float* r, size_t i) {
  float v = ElemTraits<T>::load(x[i]);
  if constexpr (kResidual) v += r[i];
  return v;
}

// A lane's share of the maxima of the block x[0, n) (r: its residual).
template <typename T, bool kResidual>
BRAID_HOST_DEVICE BRAID_INLINE BlockMax laneMax(const T* x, const float* r, size_t n, unsigned lane,
                                                unsigned lanes) {
  BlockMax m;
  for (size_t i = lane; i < n; i += lanes) {
    const uint32_t a = floatBits(blockValue<T, kResidual>(x, r, i)) & quant::kAbsMask;
    m.all = a > m.all ? a : m.all;
    if (a < quant::kInfBits) m.finite = a > m.finite ? a : m.finite;
  }
  return m;
}

// How a block is coded: an ordinary block against its maximum over kLevels; a special one
// (NaN or Inf present) against its finite maximum over kSpecialLevels.
struct BlockCoding {
  quant::BlockScale scale;
  bool special;
};

BRAID_HOST_DEVICE BRAID_INLINE BlockCoding blockCoding(BlockMax m, bool bf16Scales) {
  const bool special = m.all >= quant::kInfBits;
  return {quant::blockScale(bitsFloat(special ? m.finite : m.all),
                            special ? quant::kSpecialLevels : quant::kLevels, bf16Scales),
          special};
}

// A lane's codes of the block x[0, n), whose first element is element `first` of the call, and
// (kResidual) what the message does not carry, into r.
template <typename T, bool kResidual, bool kStochastic>
BRAID_HOST_DEVICE BRAID_INLINE void codeLane(const T* x, float* r, size_t n, const BlockCoding& c,
                                             quant::RandomKey key, uint32_t first, int8_t* codes,
                                             unsigned lane, unsigned lanes) {
  for (size_t i = lane; i < n; i += lanes) {
    const float v = blockValue<T, kResidual>(x, r, i);
    const uint32_t index = first + uint32_t(i);
    float left;
    if (c.special) {
      codes[i] = quant::specialCode<kStochastic>(v, c.scale, key, index, &left);
    } else {
      const float u = kStochastic ? quant::uniform(key, index) : 0.0f;
      const float q = quant::quantize<kStochastic>(v, c.scale, quant::kLevels, u);
      codes[i] = int8_t(int32_t(q));
      left = v - q * c.scale.scale;
    }
    if constexpr (kResidual) r[i] = left;
  }
}

// Decoded element i of a message's scales and codes.
BRAID_HOST_DEVICE BRAID_INLINE float decodeElement(ConstQuantBuffers in, size_t i,
                                                   uint32_t blockSize, bool bf16Scales) {
  const uint32_t bits = quant::loadScaleBits(in.scales, i / blockSize, bf16Scales);
  if (bits >> 31) return quant::decodeSpecialCode(in.codes[i], bitsFloat(bits & quant::kAbsMask));
  return float(in.codes[i]) * bitsFloat(bits);
}

// acc[i] += decoded element i, for the worker's elements of [0, count).
BRAID_HOST_DEVICE BRAID_INLINE void decodeAccumulateSpan(ConstQuantBuffers in, size_t count,
                                                         uint32_t blockSize, bool bf16Scales,
                                                         float* acc, size_t worker, size_t stride) {
  for (size_t i = worker; i < count; i += stride)
    acc[i] += decodeElement(in, i, blockSize, bf16Scales);
}

// out[i] = decoded element i in T, for the worker's elements of [0, count).
template <typename T>
BRAID_HOST_DEVICE BRAID_INLINE void decodeSpan(ConstQuantBuffers in, size_t count,
                                               uint32_t blockSize, bool bf16Scales, T* out,
                                               size_t worker, size_t stride) {
  for (size_t i = worker; i < count; i += stride)
    out[i] = ElemTraits<T>::store(decodeElement(in, i, blockSize, bf16Scales));
}

// ---- Top-k ----

constexpr int kRadixBits = 8;
constexpr int kRadixBins = 1 << kRadixBits;
constexpr int kRadixPasses = 64 / kRadixBits;

// Where a radix selection stands: the digits chosen so far (the high `passes` digits of prefix)
// and the rank, from the top and from 1, of the sought key among the keys that match them. Once
// every key matching the prefix is taken (`remaining` equals their number), the cut is the
// prefix itself and the remaining passes have nothing to do (`done`).
struct RadixState {
  uint64_t prefix;
  uint64_t remaining;
  uint32_t passes;
  uint32_t done;
};

BRAID_HOST_DEVICE BRAID_INLINE RadixState radixStart(uint64_t k) { return {0, k, 0, k == 0}; }

// Whether `key` matches the digits chosen so far, and if so its next digit (else -1).
BRAID_HOST_DEVICE BRAID_INLINE int radixDigit(uint64_t key, const RadixState& s) {
  const unsigned chosen = s.passes * kRadixBits;
  if (chosen > 0 && (key >> (64 - chosen)) != (s.prefix >> (64 - chosen))) return -1;
  return int((key >> (64 - chosen - kRadixBits)) & (kRadixBins - 1));
}

// One pass's choice from the counts of the next digit among matching keys.
BRAID_HOST_DEVICE BRAID_INLINE void chooseDigit(const uint32_t* counts, RadixState* s) {
  const unsigned shift = 64 - (s->passes + 1) * kRadixBits;
  for (int d = kRadixBins - 1; d >= 0; --d) {
    if (s->remaining <= counts[d]) {
      s->prefix |= uint64_t(d) << shift;
      if (s->remaining == counts[d]) s->done = 1;
      break;
    }
    s->remaining -= counts[d];
  }
  ++s->passes;
  if (s->passes == kRadixPasses) s->done = 1;
}

// The value top-k ranks and sends for element i of v: the input itself (fp32, fp16 or bf16),
// or, with error feedback, the residual once the input is added to it (addInputSpan).
template <typename T>
BRAID_HOST_DEVICE BRAID_INLINE float topkValue(const T* v, size_t i) {
  return ElemTraits<T>::load(v[i]);
}

// residual[i] += input[i] for the worker's elements, as the host codec forms the values.
template <typename T>
BRAID_HOST_DEVICE BRAID_INLINE void addInputSpan(float* residual, const T* input, size_t count,
                                                 size_t worker, size_t stride) {
  for (size_t i = worker; i < count; i += stride) residual[i] += ElemTraits<T>::load(input[i]);
}

// The next digit of element i's rank key, or -1 where the key does not match s: one pass counts
// these (on the device, atomically in shared memory).
template <typename T>
BRAID_HOST_DEVICE BRAID_INLINE int topkDigit(const T* v, size_t i, const RadixState& s) {
  return radixDigit(quant::rankKey(topkValue(v, i), uint32_t(i)), s);
}

// Whether element i is among the k: its rank key at or above the cut (the finished prefix).
template <typename T>
BRAID_HOST_DEVICE BRAID_INLINE bool topkKept(const T* v, size_t i, uint64_t cut) {
  return quant::rankKey(topkValue(v, i), uint32_t(i)) >= cut;
}

}  // namespace braid::compress::spans
