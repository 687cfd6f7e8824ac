// Run-time instruction-set dispatch for the host reduction kernels. The same loop source
// (reduce_loops.h) is compiled once per ISA with different target flags; each build exposes a
// KernelTable and reduce.cc picks one at first use. Tests and benchmarks reach every table
// through kernelTable() to compare ISAs with each other.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid::kernels {

enum class Isa : uint8_t { Generic = 0, Avx2 = 1, Avx512 = 2 };
constexpr int kNumIsas = 3;
constexpr int kNumTypes = 12;    // ncclNumTypes
constexpr int kNumBasicOps = 4;  // Sum, Prod, Max, Min: the ops with a loop of their own

struct KernelTable {
  using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
  using ScaleFn = void (*)(void* dst, const void* src, size_t count, const void* scalar);
  using AvgFn = void (*)(void* data, size_t count, int nranks);
  using CopyFn = void (*)(void* dst, const void* src, size_t bytes);

  ReduceFn reduce[kNumTypes][kNumBasicOps];
  ScaleFn scale[kNumTypes];
  AvgFn finishAvg[kNumTypes];
  // memcpy whose stores go around the caches (the widest non-temporal store the ISA has), for
  // destinations nothing will read soon; unfenced: streamFence() orders them.
  CopyFn streamCopy;
};

const char* isaName(Isa isa);
// Compiled into this build and supported by this CPU (and its OS).
bool isaAvailable(Isa isa);
// The best available ISA, lowered by BRAID_ISA; fixed at first use.
Isa activeIsa();
// What BRAID_ISA=`request` selects when `best` is the best available ISA: the requested one
// if it is not higher, otherwise `best` (with a warning, as for a name it does not know).
Isa resolveIsaRequest(const char* request, Isa best);
// The table of an available ISA; asking for an unavailable one is a programming error.
const KernelTable& kernelTable(Isa isa);

// One per translation unit built from reduce_loops.h.
namespace isa_generic {
const KernelTable& table();
}  // namespace isa_generic
namespace isa_avx2 {
const KernelTable& table();
}  // namespace isa_avx2
namespace isa_avx512 {
const KernelTable& table();
}  // namespace isa_avx512

}  // namespace braid::kernels
