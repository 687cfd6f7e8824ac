#include "compress/codec.h"

#include <cstring>

#include "kernels/reduce.h"

namespace braid::compress {

bool isCompressibleType(ncclDataType_t type) {
  return type == ncclFloat32 || type == ncclFloat16 || type == ncclBfloat16;
}

Status readHeader(std::span<const std::byte> in, CodecId codec, size_t count, Header* header) {
  if (in.size() < sizeof(Header))
    return invalidArgument("encoded message of %zu bytes is shorter than its 16-byte header",
                           in.size());
  std::memcpy(header, in.data(), sizeof(Header));
  if (header->codec != uint8_t(codec))
    return invalidArgument("encoded message is of codec %u, not %u", unsigned(header->codec),
                           unsigned(codec));
  if (header->version != kFormatVersion)
    return invalidArgument("encoded message has format version %u; this build reads %u",
                           unsigned(header->version), unsigned(kFormatVersion));
  if (header->count != count)
    return invalidArgument("encoded message holds %llu elements where %zu were expected",
                           (unsigned long long)header->count, count);
  return Status::Ok();
}

void writeHeader(std::span<std::byte> out, const Header& header) {
  std::memcpy(out.data(), &header, sizeof(Header));
}

}  // namespace braid::compress
