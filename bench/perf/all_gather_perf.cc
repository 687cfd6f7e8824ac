// all_gather_perf: nccl-tests' AllGather benchmark, on host memory. The size column is the whole
// gathered buffer; each rank sends size / nranks of it.
#include "harness.h"

namespace {

using namespace braid::perf;

const Collective kAllGather{
    .name = "AllGather",
    .hasOp = false,
    .hasRoot = false,
    .shape = gatheredShape,
    .busFactor = blockBusFactor,
    .input = movedInput,
    .expected = gatheredExpected,
    .run =
        [](const Args& a, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
          return ncclAllGather(send, recv, a.shape.paramCount, a.type, comm, stream);
        },
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kAllGather); }
