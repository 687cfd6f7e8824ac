// The reduction loops built for baseline x86-64 (or whatever the target's baseline is); the
// flags come from src/kernels/CMakeLists.txt.
#define BRAID_ISA_NAMESPACE isa_generic
#include "kernels/reduce_loops.h"

namespace braid::kernels::isa_generic {

const KernelTable& table() {
  static constexpr KernelTable kTable = makeTable();
  return kTable;
}

}  // namespace braid::kernels::isa_generic
