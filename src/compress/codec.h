// The codec interface of gradient compression: one lossy encoding of a float buffer into bytes
// and back. The executor encodes a rank's contribution once, sends the bytes, and the owner
// decodes every contribution into an fp32 accumulator, so error never compounds hop by hop.
//
// Codecs are immutable after construction and keep no state between calls (error feedback is
// the caller's residual buffer, see error_feedback.h), so one codec serves any number of
// threads. They know nothing of transports or schedules; a CUDA version implements the same
// interface over device pointers.
//
// Encoded messages start with a 16-byte header (codec, version, parameters, element count) so
// a decoder refuses bytes meant for another codec or another count instead of corrupting memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "nccl.h"

namespace braid::compress {

// The element types a codec accepts as input and writes as output. Everything else (integers,
// fp8, double) is refused: compression is for floating gradients, and fp8 is already smaller
// than the codes.
bool isCompressibleType(ncclDataType_t type);

class Codec {
 public:
  virtual ~Codec() = default;

  // "int8_block" or "topk"; for logs and stats.
  virtual std::string name() const = 0;

  // Bytes encode() writes for `count` elements of `type`, at most. Both codecs here write
  // exactly this many, so a receiver can post its buffer before the data arrives.
  virtual size_t maxEncodedBytes(size_t count, ncclDataType_t type) const = 0;

  // Compresses input[0, count) (fp32, fp16 or bf16) into out, writing *written bytes.
  // residual: null, or count fp32 values of error feedback. On entry they are added to the
  //   input (in fp32) before compressing; on return they hold what the message did not carry,
  //   (input + old residual) - decode(message), so nothing is lost, only delayed.
  // seed: the stream of stochastic rounding; equal (input, residual, seed) give equal bytes.
  //   Callers pass a different seed per call (and per chunk of a call).
  // count must be below 2^32 (indices and the random stream are 32-bit per call).
  virtual Status encode(const void* input, size_t count, ncclDataType_t type, float* residual,
                        uint64_t seed, std::span<std::byte> out, size_t* written) const = 0;

  // acc[i] += decoded value i, for i in [0, count). The message must hold `count` elements.
  virtual Status decodeAccumulate(std::span<const std::byte> in, size_t count,
                                  float* acc) const = 0;

  // out[i] = decoded value i in `type` (rounded once from fp32), for i in [0, count).
  virtual Status decode(std::span<const std::byte> in, size_t count, ncclDataType_t type,
                        void* out) const = 0;
};

// The header every encoded message starts with. Little-endian on every host Braid runs on.
struct Header {
  uint8_t codec;    // CodecId
  uint8_t version;  // kFormatVersion
  uint8_t flags;    // codec-specific
  uint8_t reserved;
  uint32_t param;  // int8 block: the block size; top-k: k
  uint64_t count;  // elements encoded
};
static_assert(sizeof(Header) == 16);

enum class CodecId : uint8_t { Int8Block = 1, TopK = 2 };
constexpr uint8_t kFormatVersion = 1;

// Reads and checks the header of a message of `codec` for `count` elements.
Status readHeader(std::span<const std::byte> in, CodecId codec, size_t count, Header* header);
void writeHeader(std::span<std::byte> out, const Header& header);

}  // namespace braid::compress
