// The codecs on device memory: Int8BlockCodec's and TopKCodec's encode, decodeAccumulate and
// decode as CUDA kernels, asynchronous on a stream, writing and reading the very message bytes
// the host codecs do (same header, same codes, same residual). Their bodies are
// compress/codec_spans.h, which the CPU tests run against the host codecs.
//
// Checks that need only the arguments (a type that is not compressible, a count of 2^32 or
// more, an output too small, a misaligned pointer) return an error before anything is launched.
// A message's own contents live on the device, so a decode checks them there: a message whose
// header or indices are wrong sets `*check` (device memory the caller provides, zeroed before
// the call) to a DecodeCheck and writes nothing else. The caller reads it once the stream has
// run the call.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "compress/codec.h"

namespace braid::compress::cuda {

enum DecodeCheck : uint32_t {
  kMessageOk = 0,
  kBadHeader = 1,  // not this codec, another version or count, or parameters out of range
  kBadIndex = 2,   // top-k: an index out of range or out of order
};
// "message ok", "bad header", "bad index", or "unknown check word".
const char* decodeCheckName(uint32_t check);

// Codec::encode on device memory. `codec` is an Int8BlockCodec or a TopKCodec; input, residual
// (null or count fp32 values) and out are device pointers, out 4-byte aligned and outBytes long.
// *written is known at once (the message's size does not depend on the data).
Status encode(const Codec& codec, const void* input, size_t count, ncclDataType_t type,
              float* residual, uint64_t seed, void* out, size_t outBytes, size_t* written,
              cudaStream_t stream);

// Codec::decodeAccumulate on device memory: acc[i] += decoded element i. `in` is the message,
// inBytes long, 4-byte aligned.
Status decodeAccumulate(const Codec& codec, const void* in, size_t inBytes, size_t count,
                        float* acc, uint32_t* check, cudaStream_t stream);

// Codec::decode on device memory: out[i] = decoded element i in `type`.
Status decode(const Codec& codec, const void* in, size_t inBytes, size_t count, ncclDataType_t type,
              void* out, uint32_t* check, cudaStream_t stream);

}  // namespace braid::compress::cuda
