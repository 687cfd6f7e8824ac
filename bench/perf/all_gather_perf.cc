// all_gather_perf: nccl-tests' AllGather benchmark, on host memory. The size column is the whole
// gathered buffer; each rank sends size / nranks of it.
#include "harness.h"

namespace {

using namespace braid::perf;

const Collective kAllGather{
    .name = "AllGather",
    .hasOp = false,
    .hasRoot = false,
    .shape =
        [](size_t count, int nranks, int rank) {
          size_t c = count / nranks;
          // In place, each rank's input already sits in its own block of the output (NCCL's rule).
          return Shape{.count = c,
                       .sendCount = c,
                       .recvCount = c * nranks,
                       .paramCount = c,
                       .inPlaceSendOffset = c * rank};
        },
    .busFactor = [](int n) { return static_cast<double>(n - 1) / n; },
    .input = movedInput,
    .expected =
        [](const Args& a, size_t i) {
          size_t c = a.shape.paramCount;
          return movedInput(a, static_cast<int>(i / c), i % c);
        },
    .run =
        [](const Args& a, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
          return ncclAllGather(send, recv, a.shape.paramCount, a.type, comm, stream);
        },
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kAllGather); }
