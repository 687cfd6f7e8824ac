#include "core/exec/codec_steps.h"

#include <cstring>
#include <span>

#include "compress/codec.h"
#include "compress/error_feedback.h"
#include "core/exec/executor.h"
#include "kernels/types.h"

namespace braid {

using algos::Buffer;
using algos::StepKind;

Status runCodecStep(const algos::Step& st, const Plan& plan, const char* src, char* dst,
                    uint32_t stepIndex) {
  if (!plan.codec)
    return internalError("%s step in a plan without a codec", algos::stepKindName(st.kind));
  if (st.kind == StepKind::Encode) {
    const ncclDataType_t type = st.src.buffer == Buffer::Accum ? ncclFloat32 : plan.type;
    float* residual =
        st.feedback && plan.residual ? plan.residual->values.get() + st.residualOffset : nullptr;
    // A stream per call and step: chunks of one call never share their rounding noise.
    const uint64_t seed = plan.seed * 0x9e3779b97f4a7c15ull + stepIndex;
    size_t written = 0;
    return plan.codec->encode(src, st.elements, type, residual, seed,
                              {reinterpret_cast<std::byte*>(dst), st.dst.count}, &written);
  }
  std::span<const std::byte> in{reinterpret_cast<const std::byte*>(src), st.src.count};
  if (st.kind == StepKind::DecodeAccumulate)
    return plan.codec->decodeAccumulate(in, st.elements, reinterpret_cast<float*>(dst));
  if (st.kind == StepKind::Decode) {
    const ncclDataType_t type = st.dst.buffer == Buffer::Accum ? ncclFloat32 : plan.type;
    return plan.codec->decode(in, st.elements, type, dst);
  }
  return internalError("%s is not a codec step", algos::stepKindName(st.kind));
}

void convertCopy(bool fromAccum, ncclDataType_t type, const char* src, char* dst, size_t n) {
  if (type == ncclFloat32) {
    std::memcpy(dst, src, n * 4);
  } else if (fromAccum) {
    const float* in = reinterpret_cast<const float*>(src);
    if (type == ncclFloat16)
      for (size_t i = 0; i < n; ++i)
        reinterpret_cast<kernels::Half*>(dst)[i] = kernels::floatToHalf(in[i]);
    else
      for (size_t i = 0; i < n; ++i)
        reinterpret_cast<kernels::BFloat16*>(dst)[i] = kernels::floatToBf16(in[i]);
  } else {
    float* out = reinterpret_cast<float*>(dst);
    if (type == ncclFloat16)
      for (size_t i = 0; i < n; ++i)
        out[i] = kernels::halfToFloat(reinterpret_cast<const kernels::Half*>(src)[i]);
    else
      for (size_t i = 0; i < n; ++i)
        out[i] = kernels::bf16ToFloat(reinterpret_cast<const kernels::BFloat16*>(src)[i]);
  }
}

}  // namespace braid
