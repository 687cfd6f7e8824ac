// Compares two buffers of one NCCL type element by element, two NaNs counting as equal: the
// payload and sign of a NaN that arithmetic makes are the hardware's choice (x86 passes on one
// operand's, in whichever operand order the compiler picked; GPUs return the canonical NaN).
// Everything else must match bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/reduce.h"
#include "unit/kernels_reference.h"

namespace braid::testing {

// "" when equal, else the first differing element's index and bytes.
inline std::string firstDifference(ncclDataType_t type, const void* gotv, const void* wantv,
                                   size_t count) {
  const size_t size = kernels::typeSize(type);
  const auto* got = static_cast<const unsigned char*>(gotv);
  const auto* want = static_cast<const unsigned char*>(wantv);
  for (size_t e = 0; e < count; ++e) {
    if (!std::memcmp(got + e * size, want + e * size, size)) continue;
    uint64_t g = 0, w = 0;
    std::memcpy(&g, got + e * size, size);
    std::memcpy(&w, want + e * size, size);
    if (std::isnan(kernels::testref::valueOf(type, g)) &&
        std::isnan(kernels::testref::valueOf(type, w)))
      continue;
    char text[96];
    std::snprintf(text, sizeof text, "element %zu: got 0x%llx, want 0x%llx", e,
                  static_cast<unsigned long long>(g), static_cast<unsigned long long>(w));
    return text;
  }
  return "";
}

}  // namespace braid::testing
