// Telemetry (include/braid/braid.h): what a communicator's connections carried and what its
// operations took, read from the counters the executor keeps (core/comm/link_stats.h), the
// communicator's priority classes (its twins) included.
#include "api/stats.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/guard.h"
#include "base/env.h"
#include "base/log.h"
#include "base/strfmt.h"
#include "braid/braid.h"
#include "core/async/engine.h"
#include "core/comm/comm.h"
#include "core/variables.h"

using braid::Status;
using braid::api::guard;

namespace {

// The communicator and the twins that carry its priority classes.
std::vector<ncclComm*> carriers(ncclComm* comm) {
  std::vector<ncclComm*> out = braid::async::twins(comm);
  out.insert(out.begin(), comm);
  return out;
}

// Counts add up over a communicator's carriers; the model and the kernel's view are those of the
// first carrier that measured them (the communicator's own connections carry most calls).
void addPeer(const braid::LinkStats& link, braidPeerStats_t* out) {
  out->bytesSent += link.bytesSent.get();
  out->bytesReceived += link.bytesReceived.get();
  out->messagesSent += link.messagesSent.get();
  out->messagesReceived += link.messagesReceived.get();
  out->errors += link.errors.get();
  out->busyNs += link.busyNs.get();
  out->stallNs += link.stallNs.get();
  out->arrivalSkewNs += link.skewNs.get();
  out->skewCalls += link.skewCalls.get();
  if (out->measuredUsPerMiB == 0) out->measuredUsPerMiB = link.usPerMiB.get();
  if (out->modelUsPerMiB == 0) {
    out->modelUsPerMiB = link.modelUsPerMiB.get();
    out->level = static_cast<int>(link.level.get());
  }
  if (out->tcpRttUs == 0) {
    out->tcpRetransmits = link.retransmits.get();
    out->tcpRttUs = static_cast<uint32_t>(link.rttUs.get());
    out->tcpCwnd = static_cast<uint32_t>(link.cwnd.get());
  }
  if (out->tcpPathUsPerMiB == 0) out->tcpPathUsPerMiB = link.pathUsPerMiB.get();
}

braidPeerStats_t peerStats(const std::vector<ncclComm*>& carriers, int peer) {
  braidPeerStats_t out{};
  for (ncclComm* c : carriers)
    if (static_cast<size_t>(peer) < c->channels.size()) addPeer(c->channels[peer].stats, &out);
  return out;
}

// Every carrier's entries merged by tag (the communicator's own order first), and the calls under
// tags past the table's room.
std::vector<braidTagStats_t> tagStats(ncclComm* comm, uint64_t* untracked) {
  std::vector<braidTagStats_t> out;
  *untracked = 0;
  for (ncclComm* c : carriers(comm)) {
    *untracked += c->callStats.tags.untracked();
    for (const braid::TagStats::Entry& e : c->callStats.tags.snapshot()) {
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const braidTagStats_t& t) { return t.tag == e.tag; });
      if (it == out.end()) it = out.insert(out.end(), braidTagStats_t{e.tag, 0, 0, 0, 0, 0});
      it->calls += e.calls;
      it->failedCalls += e.failed;
      it->timedCalls += e.timed;
      it->callNs += e.nanoseconds;
      it->bytes += e.bytes;
    }
  }
  return out;
}

braidCommStats_t commStats(ncclComm* comm) {
  braidCommStats_t out{};
  braidPeerStats_t links{};
  for (ncclComm* c : carriers(comm)) {
    out.calls += c->callStats.calls.get();
    out.failedCalls += c->callStats.failed.get();
    out.callNs += c->callStats.nanoseconds.get();
    out.timedCalls += c->callStats.timed.get();
    for (const braid::PeerChannel& ch : c->channels) addPeer(ch.stats, &links);
  }
  out.bytesSent = links.bytesSent;
  out.bytesReceived = links.bytesReceived;
  out.messagesSent = links.messagesSent;
  out.messagesReceived = links.messagesReceived;
  out.errors = links.errors;
  out.planChanges = comm->adapt.epoch();
  out.lateRank = comm->adapt.lateRank();
  out.lateUs = static_cast<uint64_t>(comm->adapt.lateUs());
  out.slowRank = comm->adapt.slowRank();
  out.slowGbps = comm->adapt.slowGbps();
  return out;
}

using ull = unsigned long long;

// One JSON line of what comm did so far (event: "interval" or "destroy"): braidCommStats_t's
// fields, and each peer's braidPeerStats_t as an array in the order "peerFields" names.
std::string jsonLine(ncclComm* comm, const char* event) {
  const braidCommStats_t s = commStats(comm);
  const std::vector<ncclComm*> all = carriers(comm);
  const braid::transport::PeerInfo& me = comm->peers[static_cast<size_t>(comm->rank)];
  const std::string host(me.hostName, strnlen(me.hostName, sizeof me.hostName));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string out = braid::strfmt(
      "{\"time\":%.3f,\"event\":\"%s\",\"comm\":\"%p\",\"commHash\":\"%016llx\",\"rank\":%d,"
      "\"nranks\":%d,\"host\":\"%s\",\"pid\":%d,\"calls\":%llu,\"failedCalls\":%llu,"
      "\"timedCalls\":%llu,\"callNs\":%llu,\"bytesSent\":%llu,\"bytesReceived\":%llu,"
      "\"messagesSent\":%llu,\"messagesReceived\":%llu,\"errors\":%llu,\"planChanges\":%llu,"
      "\"lateRank\":%lld,\"lateUs\":%llu,\"slowRank\":%lld,\"slowGbps\":%.3f,"
      "\"peerFields\":[\"peer\",\"bytesSent\",\"bytesReceived\",\"messagesSent\","
      "\"messagesReceived\",\"errors\",\"busyNs\","
      "\"stallNs\",\"arrivalSkewNs\",\"skewCalls\",\"measuredUsPerMiB\",\"modelUsPerMiB\","
      "\"level\",\"tcpRetransmits\",\"tcpRttUs\",\"tcpCwnd\",\"tcpPathUsPerMiB\"],\"peers\":[",
      now, event, static_cast<void*>(comm), static_cast<ull>(comm->commHash), comm->rank,
      comm->nranks, host.c_str(), static_cast<int>(me.pid), static_cast<ull>(s.calls),
      static_cast<ull>(s.failedCalls), static_cast<ull>(s.timedCalls), static_cast<ull>(s.callNs),
      static_cast<ull>(s.bytesSent), static_cast<ull>(s.bytesReceived),
      static_cast<ull>(s.messagesSent), static_cast<ull>(s.messagesReceived),
      static_cast<ull>(s.errors), static_cast<ull>(s.planChanges),
      static_cast<long long>(s.lateRank), static_cast<ull>(s.lateUs),
      static_cast<long long>(s.slowRank), s.slowGbps);
  bool first = true;
  for (int p = 0; p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    const braidPeerStats_t ps = peerStats(all, p);
    out += braid::strfmt(
        "%s[%d,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.3f,%.3f,%d,%llu,%u,%u,%.3f]",
        first ? "" : ",", p, static_cast<ull>(ps.bytesSent), static_cast<ull>(ps.bytesReceived),
        static_cast<ull>(ps.messagesSent), static_cast<ull>(ps.messagesReceived),
        static_cast<ull>(ps.errors), static_cast<ull>(ps.busyNs), static_cast<ull>(ps.stallNs),
        static_cast<ull>(ps.arrivalSkewNs), static_cast<ull>(ps.skewCalls), ps.measuredUsPerMiB,
        ps.modelUsPerMiB, ps.level, static_cast<ull>(ps.tcpRetransmits), ps.tcpRttUs, ps.tcpCwnd,
        ps.tcpPathUsPerMiB);
    first = false;
  }
  // The per-tag counts (userProfilerTag), as [tag, calls, failedCalls, timedCalls, callNs, bytes].
  uint64_t untracked = 0;
  const std::vector<braidTagStats_t> tags = tagStats(comm, &untracked);
  out += braid::strfmt("],\"untrackedTagCalls\":%llu,\"tagFields\":[\"tag\",\"calls\",",
                       static_cast<ull>(untracked));
  out += "\"failedCalls\",\"timedCalls\",\"callNs\",\"bytes\"],\"tags\":[";
  first = true;
  for (const braidTagStats_t& t : tags) {
    out += braid::strfmt("%s[%llu,%llu,%llu,%llu,%llu,%llu]", first ? "" : ",",
                         static_cast<ull>(t.tag), static_cast<ull>(t.calls),
                         static_cast<ull>(t.failedCalls), static_cast<ull>(t.timedCalls),
                         static_cast<ull>(t.callNs), static_cast<ull>(t.bytes));
    first = false;
  }
  return out + "]}\n";
}

// BRAID_STATS_FILE's writer: the communicators it watches and one thread that writes a line for
// each every BRAID_STATS_INTERVAL_MS. Never freed: the thread may still be waiting when the
// process exits, and must not find its state destroyed under it.
struct StatsFile {
  std::mutex mu;
  std::condition_variable wake;
  FILE* file = nullptr;
  bool opened = false;  // tried to open (file is null when it failed or is not set)
  std::vector<ncclComm*> comms;
};

StatsFile& statsFile() {
  static StatsFile* f = new StatsFile;
  return *f;
}

void writeLine(StatsFile& f, ncclComm* comm, const char* event) {
  const std::string line = jsonLine(comm, event);
  std::fwrite(line.data(), 1, line.size(), f.file);
  std::fflush(f.file);
}

void writeEvery(std::chrono::milliseconds interval) {
  StatsFile& f = statsFile();
  std::unique_lock<std::mutex> lock(f.mu);
  for (;;) {
    f.wake.wait_for(lock, interval);
    for (ncclComm* comm : f.comms) writeLine(f, comm, "interval");
  }
}

}  // namespace

namespace braid::api {

void watchStats(ncclComm* comm) {
  if (comm->twinOf) return;  // a twin's counts are its communicator's
  StatsFile& f = statsFile();
  std::lock_guard<std::mutex> lock(f.mu);
  if (!f.opened) {
    f.opened = true;
    const char* pattern = env::get(env::kBraidStatsFile);
    if (!pattern || !*pattern) return;
    const std::string path = log::expandPath(pattern);
    f.file = std::fopen(path.c_str(), "w");
    if (!f.file) {
      BRAID_WARN("%s=%s: cannot open %s (%s): no stats are written", env::kBraidStatsFile.name,
                 pattern, path.c_str(), std::strerror(errno));
      return;
    }
    const int64_t ms = env::getInt(env::kBraidStatsIntervalMs);
    if (ms > 0) std::thread(writeEvery, std::chrono::milliseconds(ms)).detach();
  }
  if (f.file) f.comms.push_back(comm);
}

void unwatchStats(ncclComm* comm) {
  StatsFile& f = statsFile();
  std::lock_guard<std::mutex> lock(f.mu);
  auto it = std::find(f.comms.begin(), f.comms.end(), comm);
  if (it == f.comms.end()) return;
  f.comms.erase(it);
  writeLine(f, comm, "destroy");
}

// The online link model per topology level, for the summary: the median measured time per MiB
// of the level's connections against the model's price, and the share of their busy time
// stalled; empty when no connection was measured.
std::string levelSummary(const std::vector<braidPeerStats_t>& peers) {
  std::string out;
  for (int level = 0;; ++level) {
    std::vector<double> measured;
    double model = 0;
    uint64_t busy = 0, stall = 0;
    bool higher = false;
    for (const braidPeerStats_t& ps : peers) {
      higher |= ps.level > level;
      if (ps.level != level || ps.measuredUsPerMiB <= 0) continue;
      measured.push_back(ps.measuredUsPerMiB);
      model = ps.modelUsPerMiB;
      busy += ps.busyNs;
      stall += ps.stallNs;
    }
    if (!measured.empty()) {
      std::nth_element(measured.begin(), measured.begin() + measured.size() / 2, measured.end());
      out += strfmt("; level %d: %.0f us/MiB measured (median of %zu), %.0f priced, %.0f%% stalled",
                    level, measured[measured.size() / 2], measured.size(), model,
                    busy ? 100.0 * static_cast<double>(stall) / static_cast<double>(busy) : 0.0);
    }
    if (!higher) return out;
  }
}

void logStatsSummary(ncclComm* comm) {
  if (comm->twinOf || !log::enabled(log::Level::Info, log::kInit)) return;
  const braidCommStats_t s = commStats(comm);
  const std::vector<ncclComm*> all = carriers(comm);
  int busiest = -1;
  uint64_t most = 0;
  std::vector<braidPeerStats_t> peers;
  for (int p = 0; p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    const braidPeerStats_t ps = peerStats(all, p);
    peers.push_back(ps);
    if (busiest < 0 || ps.bytesSent + ps.bytesReceived > most) {
      busiest = p;
      most = ps.bytesSent + ps.bytesReceived;
    }
  }
  BRAID_INFO(
      kInit,
      "comm %p rank %d/%d: %llu calls (%llu failed; %llu timed, %.3f s); sent %llu bytes in %llu "
      "messages, received %llu bytes in %llu; %llu errors%s%s%s",
      static_cast<void*>(comm), comm->rank, comm->nranks, static_cast<unsigned long long>(s.calls),
      static_cast<unsigned long long>(s.failedCalls), static_cast<unsigned long long>(s.timedCalls),
      static_cast<double>(s.callNs) * 1e-9, static_cast<unsigned long long>(s.bytesSent),
      static_cast<unsigned long long>(s.messagesSent),
      static_cast<unsigned long long>(s.bytesReceived),
      static_cast<unsigned long long>(s.messagesReceived),
      static_cast<unsigned long long>(s.errors),
      busiest < 0 ? ""
                  : strfmt("; most with rank %d (%llu bytes)", busiest,
                           static_cast<unsigned long long>(most))
                        .c_str(),
      comm->adapt.enabled()
          ? strfmt("; %llu plan changes", static_cast<unsigned long long>(s.planChanges)).c_str()
          : "",
      levelSummary(peers).c_str());
  uint64_t untracked = 0;
  for (const braidTagStats_t& t : tagStats(comm, &untracked))
    BRAID_INFO(kInit,
               "comm %p rank %d/%d: profiler tag %llu: %llu calls (%llu failed; %llu timed, "
               "%.3f s), %llu bytes",
               static_cast<void*>(comm), comm->rank, comm->nranks,
               static_cast<unsigned long long>(t.tag), static_cast<unsigned long long>(t.calls),
               static_cast<unsigned long long>(t.failedCalls),
               static_cast<unsigned long long>(t.timedCalls), static_cast<double>(t.callNs) * 1e-9,
               static_cast<unsigned long long>(t.bytes));
  if (untracked)
    BRAID_INFO(kInit, "comm %p rank %d/%d: %llu calls under tags past the first %zu",
               static_cast<void*>(comm), comm->rank, comm->nranks,
               static_cast<unsigned long long>(untracked), braid::TagStats::kMax);
}

}  // namespace braid::api

BRAID_EXT_API(ncclResult_t, braidCommGetPeerStats, ncclComm_t comm, int peer,
              braidPeerStats_t* stats) {
  return guard(comm, "braidCommGetPeerStats", [&]() -> Status {
    BRAID_TRY(braid::api::checkCommHandle(comm));  // a failed one's counts are wanted most
    if (!stats) return braid::invalidArgument("stats is NULL");
    if (peer < 0 || peer >= comm->nranks)
      return braid::invalidArgument("peer %d is not a rank of this communicator (0..%d)", peer,
                                    comm->nranks - 1);
    if (peer == comm->rank)
      return braid::invalidArgument("peer %d is this communicator's own rank: no connection", peer);
    *stats = peerStats(carriers(comm), peer);
    return Status::Ok();
  });
}

BRAID_EXT_API(ncclResult_t, braidCommGetTagStats, ncclComm_t comm, braidTagStats_t* stats,
              int* count, uint64_t* untracked) {
  return guard(comm, "braidCommGetTagStats", [&]() -> Status {
    BRAID_TRY(braid::api::checkCommHandle(comm));
    if (!count) return braid::invalidArgument("count is NULL");
    if (*count < 0) return braid::invalidArgument("*count %d is negative", *count);
    if (*count > 0 && !stats)
      return braid::invalidArgument("stats is NULL with room for %d entries", *count);
    uint64_t rest = 0;
    const std::vector<braidTagStats_t> tags = tagStats(comm, &rest);
    const size_t room = static_cast<size_t>(*count);
    std::copy_n(tags.begin(), std::min(room, tags.size()), stats);
    *count = static_cast<int>(tags.size());
    if (untracked) *untracked = rest;
    return Status::Ok();
  });
}

BRAID_EXT_API(ncclResult_t, braidCommGetStats, ncclComm_t comm, braidCommStats_t* stats) {
  return guard(comm, "braidCommGetStats", [&]() -> Status {
    BRAID_TRY(braid::api::checkCommHandle(comm));  // a failed one's counts are wanted most
    if (!stats) return braid::invalidArgument("stats is NULL");
    *stats = commStats(comm);
    return Status::Ok();
  });
}
