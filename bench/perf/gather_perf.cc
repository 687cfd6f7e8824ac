// gather_perf: nccl-tests' Gather benchmark, on host memory (-r picks the root, whose receive
// buffer alone is checked). The size column is the whole gathered buffer.
#include "harness.h"

namespace {

using namespace braid::perf;

const Collective kGather{
    .name = "Gather",
    .hasOp = false,
    .hasRoot = true,
    .shape =
        [](size_t count, int nranks, int rank) {
          size_t c = count / nranks;
          // In place, each rank's input sits in its own block of the (root's) output.
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
          return ncclGather(send, recv, a.shape.paramCount, a.type, a.root, comm, stream);
        },
    .receives = [](const Args& a) { return a.rank == a.root; },
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kGather); }
