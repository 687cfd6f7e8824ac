// A loop of AllReduce calls on the same buffers with fresh inputs, alternating ops: what the
// repeated-call tests (inproc and mp) run. "" on success.
#pragma once

#include <string>
#include <vector>

#include "nccl.h"

namespace braid::testing {

// The inputs change between identical calls, and calls that share a schedule but not their
// arithmetic (sum, then max, on the same buffers and count) alternate, each replacing the kept
// plan of the other.
inline std::string alternateOps(int rank, int nranks, ncclComm_t comm, int iterations) {
  constexpr size_t kCount = 1000;
  std::vector<float> in(kCount), out(kCount);
  for (int i = 0; i < iterations; ++i) {
    for (size_t k = 0; k < kCount; ++k) in[k] = static_cast<float>((rank + 1) * (i + 1) + k % 7);
    const ncclRedOp_t op = i % 4 < 2 ? ncclSum : ncclMax;  // two of each: repeats and switches
    if (ncclAllReduce(in.data(), out.data(), kCount, ncclFloat, op, comm, nullptr) != ncclSuccess)
      return "call " + std::to_string(i) + ": " + ncclGetLastError(comm);
    for (size_t k = 0; k < kCount; ++k) {
      // sum over r of (r + 1)(i + 1) + k % 7, or its largest term (the last rank's)
      const size_t want = op == ncclSum ? nranks * (nranks + 1) / 2 * (i + 1) + nranks * (k % 7)
                                        : nranks * (i + 1) + k % 7;
      if (out[k] != static_cast<float>(want))
        return "call " + std::to_string(i) + " element " + std::to_string(k) + ": " +
               std::to_string(out[k]) + ", want " + std::to_string(want);
    }
  }
  return "";
}

}  // namespace braid::testing
