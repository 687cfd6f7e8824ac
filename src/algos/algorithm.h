// The algorithm interface and registry. An algorithm is a pure function from the arguments of
// one collective call (as seen by one rank) to that rank's schedule.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "algos/schedule.h"
#include "algos/topology.h"
#include "nccl.h"

namespace braid::compress {
class Codec;
}

namespace braid::algos {

enum class Collective : uint8_t {
  AllReduce,
  Broadcast,
  Reduce,
  AllGather,
  ReduceScatter,
  AlltoAll,
  Gather,
  Scatter,
  Send,
  Recv,
};
const char* collectiveName(Collective coll);  // NCCL's function name, e.g. "ncclAllReduce"
// AllReduce, AllGather, ReduceScatter and AlltoAll: every rank's output needs every rank's
// input. A call of these checks its signature (the executor's mismatch check) only with the
// peers its schedule exchanges data with, both ways: a rank whose call differs is found by
// those peers, and nothing it sends passes them, so no rank can finish without hearing of it
// (see the executor). The other collectives check with every rank.
bool needsEveryInput(Collective coll);

// A schedule's steps, and the selector's work pricing candidates, grow with the call's data
// over its pipeline chunk. A call has at most this many chunks of its whole data (the nranks
// blocks of a block collective included): past it (2 GiB at the default 512 KiB chunks) chunks
// grow instead of the schedule, so no count makes a schedule unbounded.
inline constexpr size_t kMaxChunksPerCall = size_t{1} << 12;
// CollArgs::chunkCount for a call: chunkBytes' worth of elements, or more for a call above
// kMaxChunksPerCall chunks. The same on every rank (it depends on no rank's role).
size_t pipelineChunk(Collective coll, size_t count, int nranks, size_t typeSize, size_t chunkBytes);

// One collective call as one rank sees it. `count` is the NCCL call's count argument:
//   AllReduce, Broadcast, Reduce: elements of the buffer;
//   AllGather: sendcount (recvbuff holds nranks * count);
//   ReduceScatter: recvcount (sendbuff holds nranks * count);
//   AlltoAll: elements per peer (both buffers hold nranks * count);
//   Gather: elements per rank (root's recvbuff holds nranks * count);
//   Scatter: elements per rank (root's sendbuff holds nranks * count);
//   Send, Recv: elements; `root` is the peer.
// In place (NCCL's rules): AllReduce/Reduce/Broadcast sendbuff == recvbuff; AllGather
// sendbuff == recvbuff + rank * count; ReduceScatter recvbuff == sendbuff + rank * count;
// Gather sendbuff == recvbuff + root * count; Scatter recvbuff == sendbuff + root * count;
// AlltoAll (NCCL states no rule) when the buffers are equal. Each rank decides from its own
// pointers, so ranks may disagree. A builder addresses aliased memory through one Buffer id
// only (so that dependencies between its steps are seen): the executor maps Buffer::Send to
// sendbuff and Buffer::Recv to recvbuff.
struct CollArgs {
  Collective coll = Collective::AllReduce;
  size_t count = 0;
  bool average = false;  // the op is Avg: a FinishAvg step follows the reduction
  int root = 0;          // root rank, or the peer of Send/Recv
  bool inPlace = false;
  int rank = 0;
  int nranks = 1;
  size_t chunkCount = 0;      // pipeline chunk, in elements (>= 1)
  size_t typeSize = 1;        // bytes per element (selection only: schedules are in elements)
  size_t directMaxBytes = 0;  // the direct algorithm serves calls up to this size
  // The communicator's topology (never null once the API plans a call; builders that need
  // no topology ignore it). It is fixed for a communicator's life, so schedules cached per
  // communicator stay valid.
  const Topology* topology = nullptr;
  // Compressed AllReduce (null: exact). Builders read only the codec's message sizes; the
  // executor runs it. `feedback`: encodes of the rank's input use error feedback. Codecs
  // live as long as their communicator, so a cached schedule's pointer stays valid.
  const compress::Codec* codec = nullptr;
  bool feedback = false;
  ncclDataType_t type = ncclFloat32;  // message sizes may depend on it
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string_view name() const = 0;
  virtual bool supports(const CollArgs& args) const = 0;
  virtual Schedule build(const CollArgs& args) const = 0;
  // Compressed algorithms serve exactly the calls that carry a codec, the others those that
  // do not.
  virtual bool compressed() const { return false; }
};

// Every registered algorithm (no choice depends on their order).
std::span<const Algorithm* const> algorithms();
// The algorithm for `args` without pricing (tests, calls without a topology): `forced` when it
// names one that supports the call, otherwise the supporting one first in the tie preference
// (selector.h). Null when none supports it.
const Algorithm* selectAlgorithm(const CollArgs& args, std::string_view forced);

}  // namespace braid::algos
