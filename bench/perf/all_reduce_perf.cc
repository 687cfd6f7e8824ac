// all_reduce_perf: nccl-tests' AllReduce benchmark, on host memory.
#include "harness.h"

namespace {

using namespace braid::perf;

const Collective kAllReduce{
    .name = "AllReduce",
    .hasOp = true,
    .hasRoot = false,
    .shape =
        [](size_t count, int, int) {
          return Shape{.count = count, .sendCount = count, .recvCount = count, .paramCount = count};
        },
    .busFactor = [](int n) { return 2.0 * (n - 1) / n; },
    .input = standardInput,
    .expected = standardReduced,
    .run =
        [](const Args& a, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
          return ncclAllReduce(send, recv, a.shape.paramCount, a.type, a.op, comm, stream);
        },
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kAllReduce); }
