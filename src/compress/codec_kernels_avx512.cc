// The codec loops built for AVX-512 (F, BW, VL, DQ) with 512-bit vectors; the flags come from
// src/compress/CMakeLists.txt.
#define BRAID_ISA_NAMESPACE isa_avx512
#include "compress/kernel_loops.h"

namespace braid::compress::isa_avx512 {

const CodecKernelTable& codecTable() {
  static constexpr CodecKernelTable kTable = makeCodecTable();
  return kTable;
}

}  // namespace braid::compress::isa_avx512
