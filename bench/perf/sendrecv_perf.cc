// sendrecv_perf: nccl-tests' SendRecv benchmark, on host memory: in one group, each rank sends to
// the next rank and receives from the previous one (a ring shift).
#include "harness.h"

namespace {

using namespace braid::perf;

ncclResult_t sendRecv(const Args& a, const void* send, void* recv, ncclComm_t comm,
                      cudaStream_t stream) {
  const int next = (a.rank + 1) % a.nranks, prev = (a.rank - 1 + a.nranks) % a.nranks;
  // Both halves must be in flight together, or every rank would wait in its send.
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return r;
  ncclResult_t s = ncclSend(send, a.shape.paramCount, a.type, next, comm, stream);
  ncclResult_t v =
      s == ncclSuccess ? ncclRecv(recv, a.shape.paramCount, a.type, prev, comm, stream) : s;
  r = ncclGroupEnd();  // closes the group even after a failed call
  return v != ncclSuccess ? v : r;
}

const Collective kSendRecv{
    .name = "SendRecv",
    .hasOp = false,
    .hasRoot = false,
    .shape =
        [](size_t count, int, int) {
          return Shape{.count = count, .sendCount = count, .recvCount = count, .paramCount = count};
        },
    .busFactor = [](int) { return 1.0; },
    .input = movedInput,
    .expected = [](const Args& a,
                   size_t i) { return movedInput(a, (a.rank - 1 + a.nranks) % a.nranks, i); },
    .run = sendRecv,
};

}  // namespace

int main(int argc, char** argv) { return perfMain(argc, argv, kSendRecv); }
