// Dispatch: which ISA's table serves reduce()/scale()/finishAvg(), chosen once per process.
#include "kernels/reduce.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "base/env.h"
#include "base/log.h"
#include "kernels/isa.h"
#include "kernels/variables.h"

namespace braid::kernels {
namespace {

constexpr const char* kIsaNames[kNumIsas] = {"generic", "avx2", "avx512"};

#if defined(__x86_64__) || defined(__i386__)
// F16C from cpuid leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does not know "f16c".
// Its registers are AVX's, whose OS support the avx2 check below covers.
bool cpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

bool cpuHas(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports also checks that the OS saves the wider registers.
  switch (isa) {
    case Isa::Generic: return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpuHasF16c();
    case Isa::Avx512:
      return cpuHas(Isa::Avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq");
  }
  return false;
#else
  return isa == Isa::Generic;
#endif
}

bool built(Isa isa) {
#if defined(BRAID_KERNELS_X86)
  return true;
#else
  return isa == Isa::Generic;
#endif
}

Isa bestAvailable() {
  for (int i = kNumIsas - 1; i > 0; --i)
    if (isaAvailable(Isa(i))) return Isa(i);
  return Isa::Generic;
}

const KernelTable& activeTable() {
  static const KernelTable& table = []() -> const KernelTable& {
    Isa isa = activeIsa();
    BRAID_INFO(kInit, "host reduction kernels: %s", kIsaNames[int(isa)]);
    return kernelTable(isa);
  }();
  return table;
}

bool validType(ncclDataType_t type) { return int(type) >= 0 && int(type) < kNumTypes; }

}  // namespace

Isa resolveIsaRequest(const char* request, Isa best) {
  if (!request || !*request) return best;
  for (int i = 0; i < kNumIsas; ++i) {
    if (std::strcmp(request, kIsaNames[i]) != 0) continue;
    if (Isa(i) > best) {
      BRAID_WARN("BRAID_ISA=%s is not available on this machine; using %s", request,
                 kIsaNames[int(best)]);
      return best;
    }
    return Isa(i);
  }
  BRAID_WARN("BRAID_ISA=%s is not one of generic, avx2, avx512; using %s", request,
             kIsaNames[int(best)]);
  return best;
}

const char* isaName(Isa isa) { return int(isa) < kNumIsas ? kIsaNames[int(isa)] : "unknown"; }

bool isaAvailable(Isa isa) { return built(isa) && cpuHas(isa); }

Isa activeIsa() {
  static const Isa isa = resolveIsaRequest(env::get(env::kBraidIsa), bestAvailable());
  return isa;
}

const KernelTable& kernelTable(Isa isa) {
  if (!isaAvailable(isa)) {
    BRAID_WARN("internal: kernel table for unavailable ISA %s requested", isaName(isa));
    std::abort();
  }
  switch (isa) {
#if defined(BRAID_KERNELS_X86)
    case Isa::Avx512: return isa_avx512::table();
    case Isa::Avx2: return isa_avx2::table();
#endif
    default: return isa_generic::table();
  }
}

const char* isaName() { return isaName(activeIsa()); }

size_t typeSize(ncclDataType_t type) {
  static constexpr size_t kSizes[kNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return validType(type) ? kSizes[type] : 0;
}

const char* typeName(ncclDataType_t type) {
  static constexpr const char* kNames[kNumTypes] = {"int8",   "uint8",    "int32",  "uint32",
                                                    "int64",  "uint64",   "half",   "float",
                                                    "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return validType(type) ? kNames[type] : "unknown";
}

const char* opName(ncclRedOp_t op) {
  static constexpr const char* kNames[] = {"sum", "prod", "max", "min", "avg"};
  return int(op) >= 0 && int(op) < int(ncclNumOps) ? kNames[op] : "unknown";
}

namespace {

// The active table's loop for (type, op); null for a pair it has none for. Avg reduces as Sum:
// the division happens once in finishAvg.
KernelTable::ReduceFn loopFor(ncclDataType_t type, ncclRedOp_t op) {
  const int row = op == ncclAvg ? int(ncclSum) : int(op);
  if (!validType(type) || row < 0 || row >= kNumBasicOps) return nullptr;
  return activeTable().reduce[type][row];
}

}  // namespace

void reduce(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
            ncclRedOp_t op) {
  const KernelTable::ReduceFn loop = loopFor(type, op);
  if (count > 0 && loop) loop(dst, a, b, count);
}

namespace {

// Streaming stores are weakly ordered: complete them before anyone is told the data is there.
void streamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace

// Each block is reduced into a buffer that stays in L1 and streamed from there, so that every
// type and op keeps its one vectorised loop.
void reduceStreamed(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
                    ncclRedOp_t op) {
  const KernelTable::ReduceFn loop = loopFor(type, op);
  if (count == 0 || !loop) return;
  const KernelTable::CopyFn stream = activeTable().streamCopy;
  alignas(64) char block[4096];
  const size_t size = typeSize(type), perBlock = sizeof block / size;
  char* out = static_cast<char*>(dst);
  const char* x = static_cast<const char*>(a);
  const char* y = static_cast<const char*>(b);
  for (size_t done = 0; done < count; done += perBlock) {
    const size_t n = std::min(perBlock, count - done), at = done * size;
    loop(block, x + at, y + at, n);
    stream(out + at, block, n * size);
  }
  streamFence();
}

void streamCopy(void* dst, const void* src, size_t bytes) {
  activeTable().streamCopy(dst, src, bytes);
  streamFence();
}

void finishAvg(void* data, size_t count, ncclDataType_t type, int nranks) {
  if (count == 0 || !validType(type) || nranks <= 1) return;
  activeTable().finishAvg[type](data, count, nranks);
}

void scale(void* dst, const void* src, size_t count, ncclDataType_t type, const void* scalar) {
  if (count == 0 || !validType(type)) return;
  activeTable().scale[type](dst, src, count, scalar);
}

}  // namespace braid::kernels
