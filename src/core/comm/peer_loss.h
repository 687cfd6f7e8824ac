// Naming the rank that went silent. A rank that gives up on its peers (a timeout, a connection
// that broke) usually waited on a neighbour that was itself only waiting: in a ring, every
// survivor times out on the rank before it, and only one of them on the rank that stopped. So
// each rank that gives up tells every other rank, through the bootstrap, whom it was awaiting; a
// rank that hears such a report gives up too (the call cannot complete) and reports in turn.
// After a short grace for the reports to arrive, each follows the chain of "awaiting" from its
// own peers: the ranks reached that sent no report are the ones that stopped or died.
#pragma once

#include <mutex>
#include <string>
#include <vector>

struct ncclComm;

namespace braid::loss {

struct Report {
  int from = -1;
  std::vector<int> awaited;
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
void report(ncclComm* comm, const std::vector<int>& awaited, const std::string& text);
// A report another rank sent, if one has arrived (non-blocking; kept for culprits()).
bool heard(ncclComm* comm, Report* out);
// After the grace for reports (exec::kLossGrace): the ranks reachable from `awaited` through the
// reports that never reported, as text for an error message ("" when every rank reached spoke).
std::string culprits(ncclComm* comm, const std::vector<int>& awaited);

}  // namespace braid::loss
