// Dispatch to one ISA's codec loops (the same choice as the reduction kernels), and the scalar
// path of special blocks that every ISA shares.
#include "compress/codec_kernels.h"

#include <cstdlib>

#include "base/log.h"
#include "compress/quant_math.h"

namespace braid::compress {

const CodecKernelTable& codecKernels(kernels::Isa isa) {
  if (!kernels::isaAvailable(isa)) {
    BRAID_WARN("internal: codec kernels for unavailable ISA %s requested", kernels::isaName(isa));
    std::abort();
  }
  switch (isa) {
#if defined(BRAID_COMPRESS_X86)
    case kernels::Isa::Avx512: return isa_avx512::codecTable();
    case kernels::Isa::Avx2: return isa_avx2::codecTable();
#endif
    default: return isa_generic::codecTable();
  }
}

const CodecKernelTable& activeCodecKernels() {
  static const CodecKernelTable& table = codecKernels(kernels::activeIsa());
  return table;
}

namespace quant {

// A block with NaN or Inf: the finite values are quantised against their own maximum over 126
// levels and the other codes name +Inf, -Inf and NaN (specialCode); the stored scale carries the
// sign bit.
void encodeSpecialBlock(const float* v, size_t n, size_t firstIndex, float* residual,
                        const QuantParams& params, bool stochastic, unsigned char* scales,
                        size_t block, int8_t* codes) {
  uint32_t maxBits = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t a = floatBits(v[i]) & kAbsMask;
    if (a < kInfBits && a > maxBits) maxBits = a;
  }
  const BlockScale sc = blockScale(bitsFloat(maxBits), kSpecialLevels, params.bf16Scales);
  storeScale(scales, block, sc.scale, true, params.bf16Scales);
  const RandomKey key = randomKey(params.seed);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t index = uint32_t(firstIndex + i);
    float left;
    codes[i] = stochastic ? specialCode<true>(v[i], sc, key, index, &left)
                          : specialCode<false>(v[i], sc, key, index, &left);
    if (residual) residual[i] = left;
  }
}

void decodeSpecialBlock(const int8_t* codes, size_t n, float scale, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = decodeSpecialCode(codes[i], scale);
}

}  // namespace quant
}  // namespace braid::compress
