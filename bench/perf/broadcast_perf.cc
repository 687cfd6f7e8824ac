// broadcast_perf: nccl-tests' Broadcast benchmark, on host memory (-r picks the root).
#include "harness.h"

namespace {

using namespace braid::perf;

const Collective kBroadcast{
    .name = "Broadcast",
    .hasOp = false,
    .hasRoot = true,
    .shape =
        [](size_t count, int, int) {
          return Shape{.count = count, .sendCount = count, .recvCount = count, .paramCount = count};
        },
    .busFactor = [](int) { return 1.0; },
    // Every rank fills its send buffer with its own values: a rank that kept them (in place)
    // instead of receiving the root's shows up as wrong.
    .input = movedInput,
    .expected = [](const Args& a, size_t i) { return movedInput(a, a.root, i); },
    .run =
        [](const Args& a, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
          return ncclBroadcast(send, recv, a.shape.paramCount, a.type, a.root, comm, stream);
        },
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kBroadcast); }
