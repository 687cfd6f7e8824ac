// Fuzz target: the compression codecs' decoders (compress/int8_block.h, compress/topk.h), which
// read messages another rank sent. A corrupt message must be refused, or decoded, without a
// read or write outside the message and the output (each lives in an allocation of exactly its
// size, so ASan sees one byte past either). The first byte picks the codec and how the message
// is made:
//   bit 0: int8 blocks / top-k
//   bit 1: the message is the input bytes as they are / a valid message, encoded from values
//          the input gives, with input bytes XORed over it (headers intact, bodies corrupt)
#include <cmath>
#include <memory>
#include <vector>

#include "compress/int8_block.h"
#include "compress/topk.h"
#include "fuzz_common.h"

namespace braid {
namespace {

using fuzz::broken;
using fuzz::Input;

void run(Input& in) {
  const uint8_t mode = in.u8();
  const size_t count = in.u16() % 2049;
  const ncclDataType_t types[] = {ncclFloat32, ncclFloat16, ncclBfloat16};
  const ncclDataType_t type = types[in.u8() % 3];
  std::unique_ptr<compress::Codec> codec;
  if (mode & 1) {
    compress::TopKOptions o;
    o.ratio = (in.u8() % 100 + 1) / 100.0;
    std::unique_ptr<compress::TopKCodec> c;
    if (!compress::TopKCodec::create(o, &c).ok()) broken("top-k options");
    codec = std::move(c);
  } else {
    compress::Int8BlockOptions o;
    o.blockSize = compress::Int8BlockOptions::kMinBlock << (in.u8() % 4);
    o.scales = in.u8() & 1 ? compress::ScaleFormat::Bf16 : compress::ScaleFormat::Fp32;
    o.rounding = in.u8() & 1 ? compress::Rounding::Stochastic : compress::Rounding::Nearest;
    std::unique_ptr<compress::Int8BlockCodec> c;
    if (!compress::Int8BlockCodec::create(o, &c).ok()) broken("int8 options");
    codec = std::move(c);
  }

  std::vector<std::byte> message;
  if (mode & 2) {
    std::vector<float> values(count);
    for (float& v : values) {
      const uint32_t bits = in.u32();
      std::memcpy(&v, &bits, 4);  // any float, NaN and Inf included
    }
    message.resize(codec->maxEncodedBytes(count, ncclFloat32));
    size_t written = 0;
    Status st =
        codec->encode(values.data(), count, ncclFloat32, nullptr, in.u64(), message, &written);
    if (!st.ok()) broken("encode of a valid input", st.message());
    message.resize(written);
    // Corrupt the body: XOR the rest of the input over it, from byte 16 on.
    std::string_view noise = in.rest();
    for (size_t i = 0; i < noise.size() && 16 + i < message.size(); ++i)
      message[16 + i] ^= static_cast<std::byte>(noise[i]);
  } else {
    std::string_view b = in.rest();
    message.assign(reinterpret_cast<const std::byte*>(b.data()),
                   reinterpret_cast<const std::byte*>(b.data()) + b.size());
  }
  // Exact-size copies: the vectors above may have capacity beyond their size.
  std::unique_ptr<std::byte[]> exact(new std::byte[message.size()]);
  if (!message.empty()) std::memcpy(exact.get(), message.data(), message.size());
  std::span<const std::byte> msg(exact.get(), message.size());

  std::unique_ptr<float[]> acc(new float[count]());
  (void)codec->decodeAccumulate(msg, count, acc.get());
  const size_t elem = type == ncclFloat32 ? 4 : 2;
  std::unique_ptr<uint8_t[]> out(new uint8_t[count * elem]);
  (void)codec->decode(msg, count, type, out.get());
}

}  // namespace

std::span<const fuzz::Decoder> fuzz::decoders() {
  static constexpr Decoder kDecoders[] = {run};
  return kDecoders;
}

}  // namespace braid
