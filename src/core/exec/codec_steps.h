// The executor's compression steps (Encode, DecodeAccumulate, Decode) and the Copy that
// converts between the fp32 accumulator and the call's type: what one step does to memory the
// executor has already located. Kept apart from the executor's scheduling.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algos/schedule.h"
#include "base/status.h"
#include "nccl.h"

namespace braid {

struct Plan;

// Runs a codec step of `plan` (whose codec it uses) from src to dst. `stepIndex` makes the
// stochastic-rounding stream differ per step of one call.
Status runCodecStep(const algos::Step& step, const Plan& plan, const char* src, char* dst,
                    uint32_t stepIndex);

// A Copy of `count` elements between Accum (fp32) and a buffer of `type` (either direction).
void convertCopy(bool fromAccum, ncclDataType_t type, const char* src, char* dst, size_t count);

}  // namespace braid
