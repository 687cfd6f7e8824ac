// gather_perf: nccl-tests' Gather benchmark, on host memory (-r picks the root, whose receive
// buffer alone is checked). The size column is the whole gathered buffer.
#include "harness.h"

namespace {

using namespace braid::perf;

const Collective kGather{
    .name = "Gather",
    .hasOp = false,
    .hasRoot = true,
    .shape = gatheredShape,
    .busFactor = blockBusFactor,
    .input = movedInput,
    .expected = gatheredExpected,
    .run =
        [](const Args& a, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
          return ncclGather(send, recv, a.shape.paramCount, a.type, a.root, comm, stream);
        },
    .receives = [](const Args& a) { return a.rank == a.root; },
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kGather); }
