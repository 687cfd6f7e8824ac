// The reduction loops built for the avx2 target; the flags come from src/kernels/CMakeLists.txt.
#define BRAID_ISA_NAMESPACE isa_avx2
#include "kernels/reduce_loops.h"
