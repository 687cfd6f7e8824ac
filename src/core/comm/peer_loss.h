// Naming the rank that went silent. A rank that gives up on its peers (a timeout, a connection
// that broke) usually waited on a neighbour that was itself only waiting: in a ring, every
// survivor times out on the rank before it, and only one of them on the rank that stopped. So
// each rank that gives up tells every other rank, through the bootstrap, whom it was awaiting; a
// rank that hears such a report gives up too (the call cannot complete) and reports in turn.
// After a short grace for the reports to arrive, each follows the chain of "awaiting" from its
// own peers: the ranks reached that sent no report are the ones that stopped or died.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

struct ncclComm;

namespace braid::loss {

// Where a rank's messages stood when it gave up, per peer: the receives it awaited (the
// message's number among all the pair ever carried, from 1) and how many of its sends the
// transport took. Both ends of a pair number its messages alike, so receive k from a peer is
// that peer's send k: a rank that awaits message k from a peer whose transport took k sends to
// it awaits a message that left the peer and did not arrive.
struct Progress {
  std::vector<std::pair<int, uint64_t>> awaiting;  // (peer, message awaited from it)
  std::vector<std::pair<int, uint64_t>> sent;      // (peer, sends to it done)
};

struct Report {
  int from = -1;
  std::vector<int> awaited;
  Progress progress;
  std::string text;  // the reporter's own diagnosis
};

// What a communicator heard and said (ncclComm::loss).
struct Reports {
  std::mutex mu;
  bool sent = false;
  std::vector<Report> heard;
};

// "rank 3 (host h1, pid 4242)": how errors name a peer.
std::string describeRank(const ncclComm* comm, int rank);

// Tells every other rank (once per communicator) whom this rank awaited when it gave up.
void report(ncclComm* comm, const std::vector<int>& awaited, const Progress& progress,
            const std::string& text);
// A report another rank sent, if one has arrived (non-blocking; kept for culprits()).
bool heard(ncclComm* comm, Report* out);
// Where this communicator's messages stand now, in the endpoints' own numbers. Sends to at most
// 64 peers are told (each report goes to every rank): those in `first` (by rank; empty: none),
// then the others.
Progress progress(const ncclComm* comm, const std::vector<bool>& first = {});
// Gives up on the ranks `awaited`: tells every rank (report), and returns `status` with the
// culprits added. `diagnosis` is what the others hear ("" : status's text).
Status giveUp(ncclComm* comm, std::vector<int> awaited, const Progress& progress,
              const Status& status, const std::string& diagnosis = "");
// Bootstrap::recvUnless for a wait that is part of a call: it also ends, with *lost set, as soon
// as another rank reports it gave up, and that report is kept for heard() and culprits().
Status recvUnlessLost(ncclComm* comm, int peer, uint64_t tag, void* data, size_t bytes,
                      int64_t timeoutMs, bool* lost);
// After the grace for reports (exec::kLossGrace): the ranks reachable from `awaited` through the
// reports that never reported, as text for an error message ("" when every rank reached spoke).
// Where every rank reached spoke, it names instead a link that stopped carrying traffic: one on
// which a message left its sender and did not arrive, or two ranks that each await the other.
std::string culprits(ncclComm* comm, const std::vector<int>& awaited, const Progress& progress);

}  // namespace braid::loss
