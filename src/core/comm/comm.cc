#include "core/comm/comm.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <unordered_map>

#include "algos/selector.h"
#include "base/env.h"
#include "base/log.h"
#include "core/adapt/adapt.h"
#include "core/comm/calls_in_flight.h"
#include "core/device/device.h"
#include "core/variables.h"
#include "topo/comm_topology.h"
#include "topo/host_topology.h"
#include "topo/probe.h"
#include "topo/sysfs.h"
#include "topo/variables.h"
#include "transport/registry.h"

namespace braid {
namespace {

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Same host = same hostname and boot id (so containers sharing a hostname on different
// machines are told apart), or whatever NCCL_HOSTID says.
uint64_t hostHash() {
  if (const char* id = env::get(env::kNcclHostid); id && *id) return fnv1a(id);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string bootId;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> bootId;
  return fnv1a(std::string(host) + "/" + bootId);
}

// Same kernel instance: the CPUs ranks compete for, even across network namespaces.
uint64_t machineHash() {
  std::string bootId;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> bootId;
  return fnv1a(bootId);
}

// Differs between processes even when a pid is reused.
uint64_t processHash() {
  static const uint64_t nonce =
      std::random_device{}() * 0x9e3779b97f4a7c15ull ^ std::random_device{}();
  return fnv1a(std::to_string(getpid())) ^ nonce;
}

// The topology probe's view of a communicator: its connections, numbered as the executor numbers
// its operations, and its bootstrap for the probe's commands and results.
class CommProbeNetwork final : public topo::ProbeNetwork {
 public:
  explicit CommProbeNetwork(ncclComm& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank; }
  int nranks() const override { return comm_.nranks; }
  Status post(int peer, bool send, void* data, size_t bytes, uint64_t* number) override {
    PeerChannel& ch = comm_.channels[peer];
    if (!ch.endpoint) return internalError("topology probe: no connection to rank %d", peer);
    if (send) {
      BRAID_TRY(ch.endpoint->postSend(data, bytes));
      ch.stats.sent(bytes);
      *number = ++ch.sendsPosted;
    } else {
      BRAID_TRY(ch.endpoint->postRecv(data, bytes, nullptr));
      ch.stats.received(bytes);
      *number = ++ch.recvsPosted;
    }
    return Status::Ok();
  }
  transport::Endpoint& endpoint(int peer) override { return *comm_.channels[peer].endpoint; }
  Status sendControl(int peer, uint64_t tag, const void* data, size_t bytes) override {
    return comm_.bootstrap->send(peer, tag, data, bytes);
  }
  Status recvControl(int peer, uint64_t tag, void* data, size_t bytes) override {
    return comm_.bootstrap->recv(peer, tag, data, bytes);
  }
  // Without BRAID_TIMEOUT_MS a probe still gives up on a silent peer, after 10 s.
  Waiter waiter() const override {
    return Waiter(comm_.timeoutMs > 0 ? comm_.timeoutMs : 10000, &comm_.abortFlag);
  }

 private:
  ncclComm& comm_;
};

}  // namespace

transport::PeerInfo localPeerInfo(int rank) {
  transport::PeerInfo info;
  info.rank = rank;
  info.pid = getpid();
  info.hostHash = hostHash();
  info.processHash = processHash();
  std::snprintf(info.hostName, sizeof(info.hostName), "%s", braid::topo::localHostName().c_str());
  info.machineHash = machineHash();
  cpu_set_t cpus;
  info.cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return info;
}

}  // namespace braid

using braid::Status;

Status ncclComm::init(const ncclUniqueId& id, bool hostRoot) {
  braid::Waiter waiter(initTimeoutMs > 0 ? initTimeoutMs : 0, &abortFlag);
  Status st = initWith(id, hostRoot, waiter);
  if (!st.ok() && waiter.expired())
    return Status(st.code(), st.message() + braid::strfmt(" (init waits at most %lld ms: %s)",
                                                          static_cast<long long>(initTimeoutMs),
                                                          braid::env::kBraidInitTimeoutMs.name));
  return st;
}

Status ncclComm::initWith(const ncclUniqueId& id, bool hostRoot, const braid::Waiter& waiter) {
  BRAID_TRY(braid::Bootstrap::create(id, rank, nranks, hostRoot, waiter, &bootstrap));

  peers.assign(nranks, {});
  BRAID_TRY(braid::transport::createTransports(&transports));
  peers[rank] = braid::localPeerInfo(rank);
  peers[rank].deviceIpc = braid::device::offersIpc(this);
  for (const auto& t : transports) t->advertise(&peers[rank]);
  BRAID_TRY(bootstrap->allGather(peers.data(), sizeof(braid::transport::PeerInfo)));
  for (int r = 0; r < nranks; ++r) {
    if (peers[r].rank != r) return braid::internalError("bootstrap returned a corrupt peer table");
  }
  std::unordered_map<uint64_t, std::pair<int, int>> machines;  // hash -> ranks, most cores
  for (const auto& p : peers) {
    auto& [ranks, machineCores] = machines.try_emplace(p.machineHash, 0, 1).first->second;
    ++ranks;
    machineCores = std::max(machineCores, p.cores);
  }
  // The cost model's view, the same on every rank: ranks per core on the most crowded machine.
  for (const auto& [hash, m] : machines)
    ranksPerCore = std::max(ranksPerCore, static_cast<double>(m.first) / m.second);
  // Spinning is this rank's own choice: the cores it may run on.
  const int localRanks = machines[peers[rank].machineHash].first;
  const int cores = std::max(1, peers[rank].cores);
  spinRounds = localRanks <= cores ? 1u << 16 : 0;
  BRAID_INFO(kInit, "rank %d: %d local ranks on %d cores: %s while waiting", rank, localRanks,
             cores, localRanks <= cores ? "spinning" : "not spinning");
  BRAID_TRY(connectAll(waiter));
  if (!twinOf) BRAID_TRY(braid::device::joinIpc(this));
  if (twinOf)
    topology = twinOf->topology;
  else
    BRAID_TRY(buildTopology());
  BRAID_INFO(kInit, "comm %p rank %d nranks %d: ready (%s)", static_cast<void*>(this), rank, nranks,
             config.name.empty() ? "unnamed" : config.name.c_str());
  return Status::Ok();
}

// The topology algorithms are priced on: hosts from the peers' names; racks and link costs from
// BRAID_CLUSTER_FILE when there is one, else from the probe (over the connections just made).
// Every rank builds the same from the same data.
Status ncclComm::buildTopology() {
  // The host's own topology (NCCL_TOPO_FILE, else hwloc or /sys), once per process: it is what
  // NCCL_TOPO_DUMP_FILE writes out, and a required part of a topology file that is wrong fails
  // init here rather than later.
  static std::once_flag hostOnce;
  static Status hostStatus;
  std::call_once(hostOnce, [] {
    braid::topo::HostTopology host;
    hostStatus = braid::topo::hostTopology(&host);
  });
  BRAID_TRY(hostStatus);
  bool probed = false;
  braid::adapt::SlowHost slow;
  BRAID_TRY(measureTopology(&topology, &probed, &slow));
  adapt.probed(this, slow, -1);
  if (ranksPerCore > 1.0)
    BRAID_INFO(kGraph, "%.2f ranks per core on the most crowded machine: every alpha priced x%.2f",
               ranksPerCore, ranksPerCore);
  return braid::adapt::agreeAtInit(this, probed);
}

Status ncclComm::measureTopology(braid::algos::Topology* out, bool* probed,
                                 braid::adapt::SlowHost* slow, bool underLoad) {
  braid::topo::CommTopologyInputs in;
  for (const auto& p : peers)
    in.rankHosts.emplace_back(p.hostName, strnlen(p.hostName, sizeof p.hostName));
  in.intraHost = pairLinkCost(true);
  in.interHost = pairLinkCost(false);
  braid::topo::RackClustering racks;
  *probed = false;
  braid::CommProbeNetwork probeNet(*this);
  BRAID_TRY(braid::topo::probeTopology(probeNet, in.rankHosts, &racks, probed, underLoad));
  if (*probed) in.probedRacks = &racks;
  if (slow) {
    *slow = {};
    std::vector<int> hostOfRank;
    braid::topo::distinctHosts(in.rankHosts, &hostOfRank);
    for (int r = 0; *probed && racks.slowHost >= 0 && r < nranks; ++r) {
      if (hostOfRank[static_cast<size_t>(r)] != racks.slowHost) continue;
      if (slow->rank < 0) slow->rank = r;
      ++slow->ranks;
    }
    slow->gbps = racks.slowHostGbps;
    slow->othersGbps = racks.othersGbps;
  }
  braid::topo::CommTopology built;
  BRAID_TRY(braid::topo::buildCommTopology(in, &built));
  *out = std::move(built.topology);
  out->alphaScale = ranksPerCore;
  out->signatures = checkMismatch;
  // Every host is priced with this one's memory and cache (ranks do not exchange them).
  static const size_t cacheBytes = braid::topo::sysfs::lastLevelCacheBytes();
  out->memoryUsPerByte = braid::algos::kHostMemoryUsPerByte;
  out->cacheBytes = cacheBytes ? static_cast<double>(cacheBytes) : braid::algos::kDefaultCacheBytes;
  return Status::Ok();
}

// What a message costs on the transport that serves a pair of ranks on one host (sameHost) or
// on two hosts: that of the first such pair, which every rank finds alike from the same peer
// table (the transports' own figures; a cluster map or the probe replaces those between hosts).
braid::transport::LinkCost ncclComm::pairLinkCost(bool sameHost) const {
  int a = 0, b = -1;
  if (sameHost) {
    std::unordered_map<uint64_t, int> firstOnHost;
    for (int r = 0; r < nranks && b < 0; ++r) {
      auto [it, fresh] = firstOnHost.try_emplace(peers[r].hostHash, r);
      if (!fresh) a = it->second, b = r;
    }
  } else {
    for (int r = 1; r < nranks && b < 0; ++r)
      if (peers[r].hostHash != peers[0].hostHash) b = r;
  }
  // Where no such pair exists the level is never priced; the cost is still that of the
  // transport that would serve one (another process on rank 0's host, or another host).
  braid::transport::PeerInfo other = peers[0];
  if (b < 0) (sameHost ? other.processHash : other.hostHash) ^= 1;
  const braid::transport::PeerInfo& pa = peers[a];
  const braid::transport::PeerInfo& pb = b < 0 ? other : peers[b];
  for (const auto& t : transports)
    if (t->canConnect(pa, pb)) return t->linkCost();
  return {};
}

// Connects to every peer (send/recv to self is a local copy in the executor). Three phases with
// bootstrap exchanges between them, as the transport interface requires: listen (blobs out),
// connect (blobs in), finish (after a barrier).
Status ncclComm::connectAll(const braid::Waiter& waiter) {
  channels.clear();
  channels.resize(nranks);

  if (nranks == 1) return Status::Ok();
  std::vector<int> chosen(nranks, -1);
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    for (size_t t = 0; t < transports.size(); ++t) {
      if (transports[t]->canConnect(peers[rank], peers[p])) {
        chosen[p] = static_cast<int>(t);
        break;
      }
    }
    if (chosen[p] < 0) return braid::systemError("no transport can reach rank %d", p);
  }

  // Blobs travel as (size, bytes) over the bootstrap's point-to-point channel.
  constexpr uint64_t kTagBlob = 0x626c6f62;  // "blob"
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    braid::transport::Blob blob;
    BRAID_TRY(transports[chosen[p]]->listen(peers[rank], peers[p], &blob));
    uint64_t size = blob.size();
    BRAID_TRY(bootstrap->send(p, kTagBlob, &size, sizeof(size)));
    if (size) BRAID_TRY(bootstrap->send(p, kTagBlob, blob.data(), blob.size()));
  }
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    uint64_t size = 0;
    BRAID_TRY(bootstrap->recv(p, kTagBlob, &size, sizeof(size)));
    if (size > (1u << 20))
      return braid::remoteError("rank %d sent a %llu-byte connection handle", p,
                                static_cast<unsigned long long>(size));
    braid::transport::Blob blob(size);
    if (size) BRAID_TRY(bootstrap->recv(p, kTagBlob, blob.data(), blob.size()));
    BRAID_TRY(
        transports[chosen[p]]->connect(peers[rank], peers[p], blob, waiter, &channels[p].endpoint));
    BRAID_INFO(kInit, "rank %d -> rank %d via %s", rank, p,
               channels[p].endpoint->describe().c_str());
  }
  BRAID_TRY(bootstrap->barrier());
  for (auto& t : transports) BRAID_TRY(t->finishConnect());
  return Status::Ok();
}

Status ncclComm::schedule(const braid::algos::CollArgs& a,
                          std::shared_ptr<const braid::algos::Schedule>* out, double* estimateUs,
                          braid::CallSelection* selection) {
  braid::ScheduleCache& cache = selection ? selection->schedules : schedules_;
  if (const braid::ScheduleCache::Entry* hit = cache.find(a)) {
    *out = hit->schedule;
    *estimateUs = hit->estimateUs;
    return Status::Ok();
  }
  braid::algos::Choice choice;
  // Selection prices a call out of place whatever its placement (ranks choose placement each
  // for itself), so the other placement's choice stands where its algorithm serves this one too:
  // a sweep over sizes in both placements (the perf tables) selects once per size.
  const braid::ScheduleCache::Entry* sibling = cache.sibling(a);
  bool chosen = false;
  if (sibling && sibling->algorithm->supports(a)) {
    choice.algorithm = sibling->algorithm;
    choice.estimateUs = sibling->estimateUs;
    choice.reason = a.inPlace ? "as out of place" : "as in place";
    chosen = true;
  } else if (selection) {
    BRAID_TRY(braid::chooseSelected(a, *selection, &choice, &chosen));
  }
  if (!chosen) BRAID_TRY(braid::algos::chooseAlgorithm(a, algoFilter, forcedAlgorithm, &choice));
  BRAID_INFO(kTuning, "%s count %zu x %zu B, %d ranks: %.*s (%s)",
             braid::algos::collectiveName(a.coll), a.count, a.typeSize, a.nranks,
             static_cast<int>(choice.algorithm->name().size()), choice.algorithm->name().data(),
             choice.reason.c_str());
  auto built = std::make_shared<const braid::algos::Schedule>(choice.algorithm->build(a));
  cache.insert({a, choice.algorithm, choice.estimateUs, built});
  *estimateUs = choice.estimateUs;
  *out = std::move(built);
  return Status::Ok();
}

size_t ncclComm::releaseCaches() {
  size_t steps = schedules_.steps() + selections.steps();
  schedules_.clear();
  selections.clearSchedules();
  repeat.clear();
  return steps;
}

ncclComm::CallScope::CallScope(ncclComm* comm) : comm_(comm), token_(braid::calls::enter(comm)) {}

ncclComm::CallScope::~CallScope() { braid::calls::leave(comm_, token_); }

// Only destroy, abort and shrink wait here, and calls in flight leave promptly once the abort
// flag is set (the executor checks it while idle), so a sleeping poll is enough.
void ncclComm::waitForCalls() {
  for (bool first = true; braid::calls::inFlight(this, first); first = false)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
}

namespace {
constexpr uint64_t kTagFailure = 0x6661696c;  // "fail"
}

void ncclComm::broadcastFailure(const std::string& text) {
  if (!bootstrap) return;
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    Status st = bootstrap->send(p, kTagFailure, text.data(), text.size());
    if (!st.ok())
      BRAID_INFO(kInit, "could not tell rank %d about the failure: %s", p, st.message().c_str());
  }
}

bool ncclComm::heardFailure(std::string* text) {
  if (!bootstrap) return false;
  int from = -1;
  std::vector<uint8_t> data;
  if (!bootstrap->poll(kTagFailure, &from, &data).ok() || from < 0) return false;
  text->assign(data.begin(), data.end());
  return true;
}

void ncclComm::setLastError(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  lastError_ = text;
}

std::string ncclComm::lastError() {
  std::lock_guard<std::mutex> lock(mu_);
  return lastError_;
}
