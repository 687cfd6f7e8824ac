// The host loops behind the codecs, built once per instruction set like src/kernels: the same
// source (kernel_loops.h) compiled with generic, AVX2 and AVX-512 flags, one table each, picked
// at first use by kernels::activeIsa() (so BRAID_ISA lowers both at once). Every table computes
// bit for bit what the generic one does: the loops use only IEEE operations in a fixed order,
// no fused multiply-add (-ffp-contract=off), and integer hashing for stochastic rounding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/isa.h"
#include "nccl.h"

namespace braid::compress {

// Index of an input or output element type in the tables below.
enum class FloatKind : uint8_t { Fp32 = 0, Fp16 = 1, Bf16 = 2 };
constexpr int kNumFloatKinds = 3;
// The kind of fp32, fp16 and bf16 (callers check isCompressibleType first).
inline FloatKind floatKind(ncclDataType_t type) {
  return type == ncclFloat16    ? FloatKind::Fp16
         : type == ncclBfloat16 ? FloatKind::Bf16
                                : FloatKind::Fp32;
}

// The INT8 block format's parameters as the loops need them.
struct QuantParams {
  uint32_t blockSize;  // 32..256
  bool bf16Scales;     // scales stored as bfloat16 (rounded up) instead of fp32
  uint64_t seed;       // stochastic rounding only
};

// Where the pieces of an INT8 block message live: `scales` holds one scale per block (4 or 2
// bytes, unaligned), `codes` one byte per element.
struct QuantBuffers {
  unsigned char* scales;
  int8_t* codes;
};
struct ConstQuantBuffers {
  const unsigned char* scales;
  const int8_t* codes;
};

struct CodecKernelTable {
  // Quantises count elements into scales and codes; with a residual, adds it first and leaves
  // the part not sent in it. Index: [input kind][residual?][stochastic?].
  using QuantizeFn = void (*)(const void* input, float* residual, size_t count,
                              const QuantParams& params, QuantBuffers out);
  // acc[i] += decoded element i.
  using DequantAccFn = void (*)(ConstQuantBuffers in, size_t count, const QuantParams& params,
                                float* acc);
  // out[i] = decoded element i, in the output kind. Index: [output kind].
  using DequantFn = void (*)(ConstQuantBuffers in, size_t count, const QuantParams& params,
                             void* out);
  // dst[i] = float(input[i]) (accumulate: dst[i] += float(input[i])). Index: [input kind].
  using WidenFn = void (*)(float* dst, const void* input, size_t count);
  // How many |v[i]| are at or above the magnitude whose float bits are `key` (sign cleared);
  // NaN and Inf count as the largest magnitudes.
  using CountFn = size_t (*)(const float* v, size_t count, uint32_t key);
  // Writes the indices of those elements, ascending, to indices (room for all of them plus 16)
  // and returns how many.
  using CollectFn = size_t (*)(const float* v, size_t count, uint32_t key, uint32_t* indices);

  QuantizeFn quantize[kNumFloatKinds][2][2];
  DequantAccFn dequantizeAccumulate;
  DequantFn dequantize[kNumFloatKinds];
  WidenFn widen[kNumFloatKinds];
  WidenFn widenAccumulate[kNumFloatKinds];
  CountFn countAtLeast;
  CollectFn collectAtLeast;
};

// The table of an available ISA (tests and benchmarks compare them); the active one serves
// the codecs.
const CodecKernelTable& codecKernels(kernels::Isa isa);
const CodecKernelTable& activeCodecKernels();

namespace isa_generic {
const CodecKernelTable& codecTable();
}
namespace isa_avx2 {
const CodecKernelTable& codecTable();
}
namespace isa_avx512 {
const CodecKernelTable& codecTable();
}

}  // namespace braid::compress
