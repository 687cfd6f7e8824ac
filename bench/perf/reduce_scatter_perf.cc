// reduce_scatter_perf: nccl-tests' ReduceScatter benchmark, on host memory. The size column is
// each rank's whole input; each rank receives size / nranks of the reduction.
#include "harness.h"

namespace {

using namespace braid::perf;

const Collective kReduceScatter{
    .name = "ReduceScatter",
    .hasOp = true,
    .hasRoot = false,
    .shape = scatteredShape,
    .busFactor = blockBusFactor,
    .input = standardInput,
    .expected = [](const Args& a,
                   size_t i) { return standardReduced(a, a.rank * a.shape.paramCount + i); },
    .run =
        [](const Args& a, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
          return ncclReduceScatter(send, recv, a.shape.paramCount, a.type, a.op, comm, stream);
        },
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kReduceScatter); }
