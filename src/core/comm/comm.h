// The communicator: what ncclComm_t points at. It owns the bootstrap, the endpoints to every
// peer and the per-communicator caches; collectives are run on it by the executor.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "algos/algorithm.h"
#include "algos/selector.h"
#include "base/status.h"
#include "core/adapt/adapt.h"
#include "core/bootstrap/bootstrap.h"
#include "core/comm/link_stats.h"
#include "core/comm/memory_registry.h"
#include "core/comm/peer_loss.h"
#include "core/comm/redop.h"
#include "core/plan/call_selection.h"
#include "core/plan/compression.h"
#include "core/plan/plan.h"
#include "core/plan/schedule_cache.h"
#include "nccl.h"
#include "transport/transport.h"

namespace braid {

namespace device {
class Proxy;
class IpcPath;
}  // namespace device
namespace async {
struct Lanes;
}  // namespace async

// A communicator's view of one peer: its endpoint plus how many operations the executor has
// posted on it (endpoints count completions; posted counts give each operation its number).
struct PeerChannel {
  std::unique_ptr<transport::Endpoint> endpoint;
  uint64_t sendsPosted = 0;
  uint64_t recvsPosted = 0;
  // Signatures sent to and received from this peer so far (their numbers), and the same for the
  // announcements of receives (see the executor). Separate counters, because each travels one
  // way only: a pair's counts agree when its calls do.
  uint64_t signaturesSent = 0;
  uint64_t signaturesReceived = 0;
  uint64_t announcementsSent = 0;
  uint64_t announcementsReceived = 0;
  LinkStats stats;          // what this connection carried (core/comm/link_stats.h)
  int64_t sampledAtNs = 0;  // when the executor last read the endpoint's LinkSample (steady clock)
};

struct CommConfig {
  bool blocking = true;
  std::string name;
  unsigned clientVersion = 0;  // the NCCL_VERSION_CODE of the client's header (config->version)
};

// Identity of this host and process, as other ranks compare it.
transport::PeerInfo localPeerInfo(int rank);

}  // namespace braid

struct ncclComm {
  static constexpr uint64_t kMagic = 0x62726169642d636dull;  // "braid-cm"

  uint64_t magic = kMagic;
  int rank = -1;
  int nranks = 0;
  braid::CommConfig config;

  std::unique_ptr<braid::Bootstrap> bootstrap;
  std::vector<braid::transport::PeerInfo> peers;
  std::vector<std::unique_ptr<braid::transport::Transport>> transports;
  std::vector<braid::PeerChannel> channels;  // indexed by peer rank; own rank has none

  // Hosts from the peers' host hashes; racks and link costs come from the topology layer.
  braid::algos::Topology topology;

  int64_t timeoutMs = 0;
  int64_t initTimeoutMs = 0;  // init's wait for the other members (InitRequest::staggered)
  size_t chunkBytes = 0;
  size_t directMaxBytes = 0;
  bool checkMismatch = true;
  // Idle rounds the executor spins before it yields the core or sleeps: many when every local
  // rank can have a core of its own (yielding then only hands the core to unrelated work and
  // adds microseconds), none when ranks outnumber cores (the data a spinning rank waits for needs
  // a peer to run on the core it holds; over TCP each round is also a recvmsg per stream).
  uint32_t spinRounds = 0;
  double ranksPerCore = 1.0;  // on the most crowded machine: Topology::alphaScale
  braid::RedOpTable redOps;
  braid::CommCompression compression;   // BRAID_COMPRESS and the residuals of this communicator
  std::string forcedAlgorithm;          // BRAID_ALGO
  braid::algos::AlgoFilter algoFilter;  // NCCL_ALGO

  std::atomic<bool> abortFlag{false};
  // ncclCommRevoke: collectives in flight fail and new ones are refused; shrink, split,
  // destroy and abort still work. Unlike abortFlag it leaves the bootstrap usable.
  std::atomic<bool> revoked{false};
  uint64_t commHash = 0;  // of the unique id it was made from (ncclCommQueryProperties)
  // ncclCommSuspend: calls are refused until ncclCommResume.
  std::atomic<bool> suspended{false};
  // The id ncclCommGetUniqueId made for a grow, until ncclCommGrow consumes it.
  ncclUniqueId growId{};
  bool growIdPending = false;
  braid::MemoryRegistry memory;  // ncclCommRegister / ncclCommWindowRegister
  braid::CallStats callStats;    // its operations' counts and time (the channels' own: stats)
  std::atomic<ncclResult_t> asyncError{ncclSuccess};
  // The CUDA device the communicator was bound to at init (-1 without device support), and the
  // progress thread that runs its device-memory calls, made at the first one (core/device/device.h;
  // device::shutdown ends it before the communicator is freed).
  int cudaDev = -1;
  braid::device::Proxy* deviceProxy = nullptr;
  // Its ranks' mailboxes where they run device collectives on the devices (BRAID_DEVICE_IPC), made
  // at init; null otherwise.
  braid::device::IpcPath* deviceIpc = nullptr;
  // Host streams (core/async/engine.h): the priority classes' lanes and progress threads, made
  // at the first queued call (async::shutdown ends them). A twin (a class's own connections)
  // names the communicator it serves and its class.
  braid::async::Lanes* async = nullptr;
  ncclComm* twinOf = nullptr;
  int twinClass = 0;

  // Runs a blocking init body (rendezvous, connections) on this communicator.
  braid::Status init(const ncclUniqueId& id, bool hostRoot);
  // Non-blocking communicators run init here; destroy joins it.
  std::thread initThread;

  // The schedule for `args`: the algorithm is selected and the schedule built once, then
  // reused for identical calls (a training loop repeats the same ones; core/plan/schedule_cache.h).
  // *estimateUs: the cost model's price of the whole operation (ncclGroupSimulateEnd).
  // Under a per-call `selection`, its own cache and choice (core/plan/call_selection.h).
  braid::Status schedule(const braid::algos::CollArgs& args,
                         std::shared_ptr<const braid::algos::Schedule>* out, double* estimateUs,
                         braid::CallSelection* selection = nullptr);
  braid::CallSelections selections;  // those the calls of this communicator named
  // Drops what is rebuilt on demand: chosen schedules (all selections') and the kept repeat
  // plan (ncclCommSuspend). Returns the schedule steps released.
  size_t releaseCaches();
  // The last call's plan, for a repeat of it (core/plan/plan.h).
  braid::RepeatPlan repeat;

  // Calls that use the communicator hold a CallScope, so that ncclCommAbort from another
  // thread can wait for them to leave before it frees anything.
  // (core/comm/calls_in_flight.h says how.)
  class CallScope {
   public:
    explicit CallScope(ncclComm* comm);
    ~CallScope();
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

   private:
    ncclComm* comm_;
    int token_;
  };
  void waitForCalls();

  // Failures every rank must share (mismatched calls): told to all ranks through the
  // bootstrap, heard by ranks that are waiting on data that will never come.
  void broadcastFailure(const std::string& text);
  bool heardFailure(std::string* text);
  // Ranks that gave up on their peers, and whom they awaited (core/comm/peer_loss.h).
  braid::loss::Reports loss;

  // The topology as the cluster map or the probe finds it now, built as init builds it
  // (*probed: the probe ran; *slow, where given: the host it found slow, if any; underLoad: the
  // probe's rounds under load group the hosts, topo::probeTopology). Collective: every rank
  // calls it at the same point, with nothing of this communicator in flight on its connections
  // (the probe posts on them directly).
  braid::Status measureTopology(braid::algos::Topology* out, bool* probed,
                                braid::adapt::SlowHost* slow = nullptr, bool underLoad = false);
  // Re-planning when the network changes (core/adapt/adapt.h).
  braid::adapt::Adaptation adapt;

  void setLastError(const std::string& text);
  std::string lastError();
  void markFailed(ncclResult_t code) {
    ncclResult_t expected = ncclSuccess;
    asyncError.compare_exchange_strong(expected, code);
  }

 private:
  braid::Status initWith(const ncclUniqueId& id, bool hostRoot, const braid::Waiter& waiter);
  braid::Status connectAll(const braid::Waiter& waiter);
  braid::Status buildTopology();
  braid::transport::LinkCost pairLinkCost(bool sameHost) const;

  std::mutex mu_;
  std::string lastError_;

  braid::ScheduleCache schedules_;
};
