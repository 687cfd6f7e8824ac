// The executor: runs schedules. One call runs every plan of a group together, so operations on
// several communicators (or several operations on one) progress concurrently and a group can
// never deadlock on the order in which its operations were called.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algos/algorithm.h"
#include "algos/schedule.h"
#include "base/status.h"
#include "nccl.h"

struct ncclComm;
struct braidHostStream;

namespace braid::compress {
class Codec;
struct Residual;
}  // namespace braid::compress

namespace braid {

namespace exec {
// A plan whose memory arrives and leaves piece by piece while it runs (the device path's staging,
// core/device/stream_proxy.cc): the executor starts a step (posts it, or runs it when local) only
// once open() says the memory it touches is in place, and tells finished() each step that ended,
// so the gate can send the pieces no step will write again on their way. Called on the running
// thread only; open() may be asked again and again while a step waits.
class StepGate {
 public:
  virtual bool open(uint32_t step) = 0;
  virtual void finished(uint32_t step) = 0;
  // Whether open() may still turn true without any message moving: the run then polls instead
  // of sleeping on its connections.
  virtual bool waiting() const = 0;

 protected:
  ~StepGate() = default;
};
}  // namespace exec

// One operation ready to run: a schedule bound to buffers and arithmetic.
struct Plan {
  ncclComm* comm = nullptr;
  std::shared_ptr<const algos::Schedule> schedule;
  double estimateUs = 0;  // the cost model's price of the whole operation
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;  // the built-in op the reduce steps apply (Avg reduces as Sum)
  // The call as the user made it: error messages, and the signature that ranks compare to
  // detect mismatched calls.
  algos::Collective coll = algos::Collective::AllReduce;
  size_t count = 0;
  ncclRedOp_t userOp = ncclSum;
  bool reduces = false;  // userOp is meaningful
  int root = -1;         // root or peer, -1 when the collective has none
  uint64_t profilerTag = 0;  // the call's userProfilerTag (telemetry: CallStats::tags)

  // PreMulSum: the executor multiplies inputCount elements of sendbuff by the scalar into a
  // buffer of its own first (the schedule was built out of place for that).
  bool preMul = false;
  uint64_t scalarBits = 0;          // the scalar, when it was copied at creation
  const void* scalarPtr = nullptr;  // else read here when the plan runs
  size_t inputCount = 0;
  // Device memory (core/device/device.h): the call's stream, and the bytes of sendbuff and recvbuff
  // the call reads and writes on this rank (0: unused). The proxy that runs such a plan points
  // sendbuff and recvbuff at host staging copies first, except a buffer of pinned host memory
  // (sendPinned, recvPinned), which it uses where it is, in stream order all the same.
  bool onDevice = false;
  bool sendPinned = false;
  bool recvPinned = false;
  cudaStream_t stream = nullptr;
  size_t sendBytes = 0;
  size_t recvBytes = 0;
  // Compressed AllReduce: the codec that runs the schedule's codec steps, this call's residual
  // (error feedback on the buffer; null without), the stochastic-rounding stream of this call,
  // and what ranks compare to agree on compression (0: none; see signature.h).
  const compress::Codec* codec = nullptr;
  std::shared_ptr<compress::Residual> residual;
  uint64_t seed = 0;
  uint16_t compressTag = 0;

  // The host stream the call was queued on (core/async/engine.h); null for a blocking call.
  braidHostStream* hostStream = nullptr;

  // Memory that arrives while the plan runs (exec::StepGate); null: all of it is in place.
  exec::StepGate* gate = nullptr;

  // Nonzero for a plan a communicator keeps for repeats of its call (core/plan/plan.h), unique in
  // the process: the executor then reuses what it set up for the plan's last run.
  uint64_t keptId = 0;

  // The input when the executor had to copy it first (PreMulSum; a send whose buffer a receive
  // of the same group overwrites).
  std::vector<char> privateInput;
};

// "ncclAllReduce(count=16, float, sum)".
std::string describe(const Plan& plan);

namespace exec {
// How a run behaves besides its plans.
struct Options {
  // A progress thread's run (core/async/engine.h): the caller computes beside it, so it never
  // spins while waiting, whatever the communicator's spin policy.
  bool background = false;
  // While this counter is nonzero (a call of a higher priority class runs on the same
  // communicator) the run moves nothing: it neither posts nor progresses its messages (a chunk
  // half sent waits where it is) and sleeps on the counter (base/futex.h) until whoever brings
  // it to zero wakes it. The urgent call has its own connections, so it needs nothing from a
  // held run, on this rank or any other.
  const std::atomic<uint32_t>* holdWhile = nullptr;
};
}  // namespace exec

// Runs all plans to completion, or until one fails, times out or is aborted. On failure the
// communicators involved are marked failed (their endpoints are in an unknown state).
Status execute(std::span<Plan> plans, const exec::Options& options = {});

}  // namespace braid
