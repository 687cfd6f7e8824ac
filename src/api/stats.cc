// Telemetry (include/braid/braid.h): what a communicator's connections carried and what its
// operations took, read from the counters the executor keeps (core/comm/link_stats.h), the
// communicator's priority classes (its twins) included.
#include "api/stats.h"

#include <vector>

#include "api/guard.h"
#include "base/log.h"
#include "braid/braid.h"
#include "core/async/engine.h"
#include "core/comm/comm.h"

using braid::Status;
using braid::api::guard;

namespace {

// The communicator and the twins that carry its priority classes.
std::vector<ncclComm*> carriers(ncclComm* comm) {
  std::vector<ncclComm*> out = braid::async::twins(comm);
  out.insert(out.begin(), comm);
  return out;
}

void addPeer(const braid::LinkStats& link, braidPeerStats_t* out) {
  out->bytesSent += link.bytesSent.get();
  out->bytesReceived += link.bytesReceived.get();
  out->messagesSent += link.messagesSent.get();
  out->messagesReceived += link.messagesReceived.get();
  out->errors += link.errors.get();
}

braidPeerStats_t peerStats(const std::vector<ncclComm*>& carriers, int peer) {
  braidPeerStats_t out{};
  for (ncclComm* c : carriers)
    if (static_cast<size_t>(peer) < c->channels.size()) addPeer(c->channels[peer].stats, &out);
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
  return out;
}

}  // namespace

namespace braid::api {

void logStatsSummary(ncclComm* comm) {
  if (comm->twinOf || !log::enabled(log::Level::Info, log::kInit)) return;
  const braidCommStats_t s = commStats(comm);
  const std::vector<ncclComm*> all = carriers(comm);
  int busiest = -1;
  uint64_t most = 0;
  for (int p = 0; p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    const braidPeerStats_t ps = peerStats(all, p);
    if (busiest < 0 || ps.bytesSent + ps.bytesReceived > most) {
      busiest = p;
      most = ps.bytesSent + ps.bytesReceived;
    }
  }
  BRAID_INFO(kInit,
             "comm %p rank %d/%d: %llu calls (%llu failed; %llu timed, %.3f s); sent %llu bytes in %llu "
             "messages, received %llu bytes in %llu; %llu errors%s%s",
             static_cast<void*>(comm), comm->rank, comm->nranks,
             static_cast<unsigned long long>(s.calls),
             static_cast<unsigned long long>(s.failedCalls),
             static_cast<unsigned long long>(s.timedCalls), static_cast<double>(s.callNs) * 1e-9,
             static_cast<unsigned long long>(s.bytesSent),
             static_cast<unsigned long long>(s.messagesSent),
             static_cast<unsigned long long>(s.bytesReceived),
             static_cast<unsigned long long>(s.messagesReceived),
             static_cast<unsigned long long>(s.errors),
             busiest < 0 ? ""
                         : strfmt("; most with rank %d (%llu bytes)", busiest,
                                  static_cast<unsigned long long>(most))
                               .c_str(),
             comm->adapt.enabled()
                 ? strfmt("; %llu plan changes", static_cast<unsigned long long>(s.planChanges))
                       .c_str()
                 : "");
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
      return braid::invalidArgument("peer %d is this communicator's own rank: no connection",
                                    peer);
    *stats = peerStats(carriers(comm), peer);
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
