// reduce_perf: nccl-tests' Reduce benchmark, on host memory (-r picks the root; only the root's
// receive buffer is checked, as NCCL leaves the others alone).
#include "harness.h"

namespace {

using namespace braid::perf;

const Collective kReduce{
    .name = "Reduce",
    .hasOp = true,
    .hasRoot = true,
    .shape =
        [](size_t count, int, int) {
          return Shape{.count = count, .sendCount = count, .recvCount = count, .paramCount = count};
        },
    .busFactor = [](int) { return 1.0; },
    .input = standardInput,
    .expected = standardReduced,
    .run =
        [](const Args& a, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
          return ncclReduce(send, recv, a.shape.paramCount, a.type, a.op, a.root, comm, stream);
        },
    .receives = [](const Args& a) { return a.rank == a.root; },
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kReduce); }
