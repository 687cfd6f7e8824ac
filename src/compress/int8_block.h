// INT8 block quantisation: each block of `blockSize` elements is sent as one scale (its
// absolute maximum / 127) and one signed byte per element, about a quarter of fp32 plus the
// scales (fp32 data, block 64, fp32 scales: 26.6% of the input bytes).
//
// Message: Header | scales[ceil(count / blockSize)] (fp32, or bf16) | codes[count] (int8).
// Decoded element i is codes[i] * scale of its block, in fp32. Rounding to nearest has error at
// most scale / 2 per element (plus float rounding); stochastic rounding is unbiased, with error
// below one scale.
//
// NaN and Inf: a block holding any is flagged (the sign bit of its scale). Its finite values use
// 126 levels, and codes 127, -127 and -128 carry +Inf, -Inf and NaN exactly, so the receiver
// sees the very non-finite values the sender had, in their places (a NaN's payload becomes the
// canonical quiet NaN). They leave no residual. Blocks without them are unaffected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "compress/codec.h"
#include "kernels/types.h"

namespace braid::compress {

// The message's header flags and layout, which the host and CUDA codecs share.
constexpr uint8_t kInt8FlagStochastic = 1;
constexpr uint8_t kInt8FlagBf16Scales = 2;
BRAID_HOST_DEVICE constexpr size_t int8BlockCount(size_t count, uint32_t blockSize) {
  return (count + blockSize - 1) / blockSize;
}
BRAID_HOST_DEVICE constexpr size_t int8MessageBytes(size_t count, uint32_t blockSize,
                                                    bool bf16Scales) {
  return sizeof(Header) + int8BlockCount(count, blockSize) * (bf16Scales ? 2 : 4) + count;
}

enum class Rounding : uint8_t { Nearest = 0, Stochastic = 1 };
enum class ScaleFormat : uint8_t { Fp32 = 0, Bf16 = 1 };

struct Int8BlockOptions {
  static constexpr uint32_t kMinBlock = 32;
  static constexpr uint32_t kMaxBlock = 256;

  uint32_t blockSize = 64;  // elements per scale, kMinBlock..kMaxBlock
  Rounding rounding = Rounding::Nearest;
  // bf16 halves the scales' bytes. It is chosen over fp16 because it has fp32's range: every
  // block a float can hold has a scale (fp16 overflows past 65504 * 127), and codes are
  // computed against the scale rounded up to bf16, so precision is not lost, only the step
  // grows by at most 2^-8.
  ScaleFormat scales = ScaleFormat::Fp32;

  // blockSize from BRAID_COMPRESS_BLOCK; the rest as above.
  static Int8BlockOptions fromEnv();
};

class Int8BlockCodec final : public Codec {
 public:
  // Options out of range are refused here rather than at the first call.
  static Status create(const Int8BlockOptions& options, std::unique_ptr<Int8BlockCodec>* codec);

  std::string name() const override { return "int8_block"; }
  const Int8BlockOptions& options() const { return options_; }

  size_t maxEncodedBytes(size_t count, ncclDataType_t type) const override;
  Status encode(const void* input, size_t count, ncclDataType_t type, float* residual,
                uint64_t seed, std::span<std::byte> out, size_t* written) const override;
  Status decodeAccumulate(std::span<const std::byte> in, size_t count, float* acc) const override;
  Status decode(std::span<const std::byte> in, size_t count, ncclDataType_t type,
                void* out) const override;

 private:
  explicit Int8BlockCodec(const Int8BlockOptions& options) : options_(options) {}

  Int8BlockOptions options_;
};

}  // namespace braid::compress
