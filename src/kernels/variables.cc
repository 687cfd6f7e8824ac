#include "kernels/variables.h"

namespace braid::env {

const Var kBraidIsa = {
    "BRAID_ISA", nullptr,
    "generic, avx2 or avx512: use this instruction set for host reductions instead of the best "
    "one the CPU has (only a lower one takes effect)"};

List kernelsVariables() {
  static const Var* const kList[] = {&kBraidIsa};
  return kList;
}

}  // namespace braid::env
