// The codec loops built for baseline x86-64 (or whatever the target's baseline is); the flags come
// from src/compress/CMakeLists.txt.
#define BRAID_ISA_NAMESPACE isa_generic
#include "compress/kernel_loops.h"

namespace braid::compress::isa_generic {

const CodecKernelTable& codecTable() {
  static constexpr CodecKernelTable kTable = makeCodecTable();
  return kTable;
}

}  // namespace braid::compress::isa_generic
