// Collectives on device buffers among the ranks of one host, run by the devices (BRAID_DEVICE_IPC):
// no pinned staging, no progress thread, no host transport. docs/architecture.md ("Device
// memory") explains the choice; in short:
//
//   Every rank has a mailbox: device memory exported once at init (CUDA IPC between processes,
//   the address itself between threads of one process) that each peer maps. It holds, per peer,
//   kSlots slots of `slotBytes` that only that peer writes into, and two words per peer: how many
//   pieces the peer has delivered into those slots, and how many of this rank's pieces the peer
//   has consumed from its own mailbox.
//
//   A call's schedule (the same data the host executor runs) is queued at submit as stream work,
//   one stream per peer and direction and one for local steps, with events where a step depends
//   on one of another stream: a Send copies each piece of its message into the receiver's next
//   slot once the receiver has consumed the piece that slot held, then writes the receiver's
//   "delivered" word; a Recv waits for that word, copies (or, for a RecvReduce, reduces) the
//   piece out of its own slot into place, then writes the sender's "consumed" word; copies,
//   reductions and Avg's division are kernels. The caller's stream is joined before the first
//   step and after the last, so the call returns at once and work after it sees the result.
//
// Sends and receives keep, per peer and direction, the order of the host executor's queues (a
// group's plans in call order), so the k-th piece one rank sends another is the k-th that rank
// receives from it. The runtime is reached only through StreamOps: tests run all of it with host
// threads as streams and ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "core/device/stream_ops.h"
#include "core/exec/executor.h"

struct ncclComm;

namespace braid::device {

class IpcPath {
 public:
  // Slots per peer in each mailbox: a sender may run this many pieces ahead of its receiver.
  static constexpr uint32_t kSlots = 4;

  // At init, on every rank of `comm` at once (two allgathers over its bootstrap): makes this
  // rank's mailbox, publishes it, and maps every peer's. *out is null on every rank where any
  // rank could not (a warning says why on each rank), so all ranks agree on the path. `ops` runs
  // on the communicator's device.
  static Status join(ncclComm* comm, std::shared_ptr<StreamOps> ops, size_t slotBytes,
                     std::unique_ptr<IpcPath>* out);
  // Waits until every peer has consumed what this rank sent and every stream ran, then lets the
  // mailbox, the mappings and the streams go. After an abort nothing is waited for: every wait
  // the streams hold is let pass (the calls cut short end with undefined data, as in NCCL), and
  // the mailbox and the mappings stay (the streams and the peers may still write into them).
  // `timeoutMs` (BRAID_TIMEOUT_MS; 0: none) bounds the wait; past it, a warning, and the rest
  // goes as after an abort.
  void close(bool aborted, int64_t timeoutMs = 0);
  ~IpcPath();
  IpcPath(const IpcPath&) = delete;
  IpcPath& operator=(const IpcPath&) = delete;

  // Whether `plan` runs here: stream-ordered buffers (device, or pinned host memory on a CUDA
  // stream), no PreMulSum, compression, host stream or send to itself, and kernels for its type
  // and op. Every condition is one all ranks of a call share, so they all take this path or none.
  bool runs(const Plan& plan) const;
  // Queues `plans` (each runs here, on comm->deviceIpc), each after what its stream holds, in
  // three passes so that plans of several communicators on one stream never wait for each other:
  // start() marks every plan's start on its stream, then queues every plan's steps; finish()
  // makes each caller's stream wait for its plan's end (the caller may queue other work on the
  // streams between the two, as a group's staged part). finish() must follow every start().
  struct Queued;
  static Status start(std::vector<Plan>& plans, std::vector<Queued>* queued);
  static Status finish(std::vector<Queued>& queued);

  // Pieces queued so far that wait for a free slot (tests; the log counts them with the rest).
  uint64_t creditWaits() const { return creditWaits_; }
  size_t mailboxBytes() const { return headerBytes() + size_t(nranks_) * kSlots * slotBytes_; }

 private:
  struct Peer {
    char* base = nullptr;  // its mailbox, mapped here (null for this rank)
    bool opened = false;   // mapped with openMemory (another process)
    uint64_t sent = 0;     // pieces this rank sent it, and received from it, so far
    uint64_t received = 0;
    cudaStream_t sendStream = nullptr, recvStream = nullptr;
  };

  IpcPath(ncclComm* comm, std::shared_ptr<StreamOps> ops, size_t slotBytes);
  size_t headerBytes() const;
  // Word `index` of a mailbox's header: delivered[q] at q, consumed[q] at nranks + q.
  static uint32_t* word(char* base, size_t index) {
    return reinterpret_cast<uint32_t*>(base + index * 64);
  }
  // The slot of a mailbox that `from` writes into for its piece number `n`.
  char* slot(char* base, int from, uint64_t n) const;
  Status streamFor(cudaStream_t* s);
  Status enqueue(const Plan& plan, Queued* q);
  Status sendPieces(int peer, const char* src, size_t bytes, cudaStream_t stream);
  bool drained(const std::vector<cudaStream_t>& streams, int64_t timeoutMs);
  void releaseWaits(std::vector<cudaStream_t>* streams);
  Status recvPieces(const algos::Step& st, char* dst, const char* src, size_t unit,
                    const Plan& plan, cudaStream_t stream);

  std::shared_ptr<StreamOps> ops_;
  size_t slotBytes_;
  int rank_, nranks_;
  char* mailbox_ = nullptr;
  std::vector<Peer> peers_;
  cudaStream_t localStream_ = nullptr;
  std::mutex mu_;  // one submit at a time: the piece counters follow call order
  uint64_t piecesSent_ = 0, creditWaits_ = 0, plansRun_ = 0;
  bool closed_ = false;
};

// One plan between IpcPath::start and IpcPath::finish.
struct IpcPath::Queued {
  IpcPath* path;
  cudaStream_t stream;  // the caller's
  Event started = nullptr;
  void* scratch = nullptr;
  std::vector<cudaStream_t> used;  // the path's streams the plan queued work on
  std::vector<Event> ends;         // recorded on each of them after its last step
};

}  // namespace braid::device
