// scatter_perf: nccl-tests' Scatter benchmark, on host memory (-r picks the root). The size
// column is the root's whole send buffer; each rank receives size / nranks of it.
#include "harness.h"

namespace {

using namespace braid::perf;

const Collective kScatter{
    .name = "Scatter",
    .hasOp = false,
    .hasRoot = true,
    .shape = scatteredShape,
    .busFactor = blockBusFactor,
    .input = movedInput,
    .expected = [](const Args& a,
                   size_t i) { return movedInput(a, a.root, a.rank * a.shape.paramCount + i); },
    .run =
        [](const Args& a, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
          return ncclScatter(send, recv, a.shape.paramCount, a.type, a.root, comm, stream);
        },
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kScatter); }
