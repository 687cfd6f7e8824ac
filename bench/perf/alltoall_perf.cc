// alltoall_perf: nccl-tests' AlltoAll benchmark, on host memory. The size column is each rank's
// whole send buffer: nranks blocks of count elements, block j going to rank j.
#include "harness.h"

namespace {

using namespace braid::perf;

const Collective kAlltoAll{
    .name = "AlltoAll",
    .hasOp = false,
    .hasRoot = false,
    .shape =
        [](size_t count, int nranks, int) {
          size_t c = count / nranks;
          return Shape{
              .count = c, .sendCount = c * nranks, .recvCount = c * nranks, .paramCount = c};
        },
    .busFactor = blockBusFactor,
    .input = movedInput,
    // Block j of the output is block `rank` of rank j's input.
    .expected =
        [](const Args& a, size_t i) {
          size_t c = a.shape.paramCount;
          return movedInput(a, static_cast<int>(i / c), a.rank * c + i % c);
        },
    .run =
        [](const Args& a, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
          return ncclAlltoAll(send, recv, a.shape.paramCount, a.type, comm, stream);
        },
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kAlltoAll); }
