// The codec loops built for AVX2 + FMA + F16C (FMA is never used: -ffp-contract=off); the flags
// come from src/compress/CMakeLists.txt.
#define BRAID_ISA_NAMESPACE isa_avx2
#include "compress/kernel_loops.h"

namespace braid::compress::isa_avx2 {

const CodecKernelTable& codecTable() {
  static constexpr CodecKernelTable kTable = makeCodecTable();
  return kTable;
}

}  // namespace braid::compress::isa_avx2
