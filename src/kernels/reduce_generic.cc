// The reduction loops built for the generic target; the flags come from src/kernels/CMakeLists.txt.
#define BRAID_ISA_NAMESPACE isa_generic
#include "kernels/reduce_loops.h"
