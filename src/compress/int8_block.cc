#include "compress/int8_block.h"

#include <cstring>

#include "base/env.h"
#include "compress/codec_kernels.h"
#include "compress/variables.h"

namespace braid::compress {
namespace {

bool validBlockSize(uint64_t b) {
  return b >= Int8BlockOptions::kMinBlock && b <= Int8BlockOptions::kMaxBlock;
}

// A checked message: its parameters and where its scales and codes are. A decoder follows the
// message's block size and scale format, not its own options, so any Int8BlockCodec reads what
// any other wrote.
struct Message {
  QuantParams params;
  ConstQuantBuffers buffers;
};

Status readMessage(std::span<const std::byte> in, size_t count, Message* msg) {
  Header h;
  BRAID_TRY(readHeader(in, CodecId::Int8Block, count, &h).withContext("int8_block decode"));
  if (!validBlockSize(h.param))
    return invalidArgument("int8_block decode: block size %u is outside %u..%u", h.param,
                           Int8BlockOptions::kMinBlock, Int8BlockOptions::kMaxBlock);
  const bool bf16 = h.flags & kInt8FlagBf16Scales;
  const size_t expected = int8MessageBytes(count, h.param, bf16);
  if (in.size() != expected)
    return invalidArgument("int8_block decode: message of %zu bytes where %zu elements take %zu",
                           in.size(), count, expected);
  const auto* base = reinterpret_cast<const unsigned char*>(in.data()) + sizeof(Header);
  msg->params = QuantParams{h.param, bf16, 0};
  msg->buffers = {base, reinterpret_cast<const int8_t*>(base + int8BlockCount(count, h.param) *
                                                                   (bf16 ? 2 : 4))};
  return Status::Ok();
}

Status checkCount(const char* what, size_t count) {
  if (count > UINT32_MAX)
    return invalidArgument("int8_block %s: count %zu is above 2^32 - 1", what, count);
  return Status::Ok();
}

}  // namespace

Int8BlockOptions Int8BlockOptions::fromEnv() {
  Int8BlockOptions o;
  o.blockSize = uint32_t(env::getInt(env::kBraidCompressBlock));
  return o;
}

Status Int8BlockCodec::create(const Int8BlockOptions& options,
                              std::unique_ptr<Int8BlockCodec>* codec) {
  if (!validBlockSize(options.blockSize))
    return invalidArgument("int8_block: block size %u is outside %u..%u (BRAID_COMPRESS_BLOCK)",
                           options.blockSize, Int8BlockOptions::kMinBlock,
                           Int8BlockOptions::kMaxBlock);
  codec->reset(new Int8BlockCodec(options));
  return Status::Ok();
}

size_t Int8BlockCodec::maxEncodedBytes(size_t count, ncclDataType_t) const {
  return int8MessageBytes(count, options_.blockSize, options_.scales == ScaleFormat::Bf16);
}

Status Int8BlockCodec::encode(const void* input, size_t count, ncclDataType_t type, float* residual,
                              uint64_t seed, std::span<std::byte> out, size_t* written) const {
  if (!isCompressibleType(type))
    return invalidArgument("int8_block encode: datatype %d is not float, half or bfloat16",
                           int(type));
  BRAID_TRY(checkCount("encode", count));
  const bool bf16 = options_.scales == ScaleFormat::Bf16;
  const size_t bytes = int8MessageBytes(count, options_.blockSize, bf16);
  if (out.size() < bytes)
    return invalidArgument("int8_block encode: output of %zu bytes, %zu elements need %zu",
                           out.size(), count, bytes);
  const bool stochastic = options_.rounding == Rounding::Stochastic;
  Header h{uint8_t(CodecId::Int8Block),
           kFormatVersion,
           uint8_t((stochastic ? kInt8FlagStochastic : 0) | (bf16 ? kInt8FlagBf16Scales : 0)),
           0,
           options_.blockSize,
           count};
  writeHeader(out, h);
  auto* base = reinterpret_cast<unsigned char*>(out.data()) + sizeof(Header);
  QuantBuffers buffers{
      base,
      reinterpret_cast<int8_t*>(base + int8BlockCount(count, options_.blockSize) * (bf16 ? 2 : 4))};
  if (count > 0) {
    const QuantParams params{options_.blockSize, bf16, seed};
    activeCodecKernels().quantize[int(floatKind(type))][residual != nullptr][stochastic](
        input, residual, count, params, buffers);
  }
  *written = bytes;
  return Status::Ok();
}

Status Int8BlockCodec::decodeAccumulate(std::span<const std::byte> in, size_t count,
                                        float* acc) const {
  Message msg;
  BRAID_TRY(readMessage(in, count, &msg));
  if (count > 0) activeCodecKernels().dequantizeAccumulate(msg.buffers, count, msg.params, acc);
  return Status::Ok();
}

Status Int8BlockCodec::decode(std::span<const std::byte> in, size_t count, ncclDataType_t type,
                              void* out) const {
  if (!isCompressibleType(type))
    return invalidArgument("int8_block decode: datatype %d is not float, half or bfloat16",
                           int(type));
  Message msg;
  BRAID_TRY(readMessage(in, count, &msg));
  if (count > 0)
    activeCodecKernels().dequantize[int(floatKind(type))](msg.buffers, count, msg.params, out);
  return Status::Ok();
}

}  // namespace braid::compress
