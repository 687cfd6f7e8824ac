#include "core/comm/peer_loss.h"

#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "base/log.h"
#include "base/strfmt.h"
#include "core/bootstrap/bootstrap.h"
#include "core/comm/comm.h"

namespace braid::loss {
namespace {

constexpr uint64_t kTagLoss = 0x6c6f7374;  // "lost"
// How long a rank that gave up listens for the others' reports before it names culprits. Every
// survivor reports within about one idle check (kListenEvery, 2 ms) of hearing the first report,
// so this leaves two orders of magnitude for a loaded machine, and keeps the error inside the
// timeout plus one second that callers are promised.
constexpr std::chrono::milliseconds kGrace{300};

// The wire: i32 count, count x i32 awaited ranks, then the text.
std::vector<uint8_t> encode(const std::vector<int>& awaited, const std::string& text) {
  std::vector<uint8_t> out(4 + 4 * awaited.size() + text.size());
  const int32_t n = static_cast<int32_t>(awaited.size());
  std::memcpy(out.data(), &n, 4);
  for (size_t i = 0; i < awaited.size(); ++i) {
    const int32_t r = awaited[i];
    std::memcpy(out.data() + 4 + 4 * i, &r, 4);
  }
  std::memcpy(out.data() + 4 + 4 * awaited.size(), text.data(), text.size());
  return out;
}

// A malformed report (another build, garbage) is dropped: false.
bool decode(const std::vector<uint8_t>& in, int nranks, Report* out) {
  int32_t n = 0;
  if (in.size() < 4) return false;
  std::memcpy(&n, in.data(), 4);
  if (n < 0 || n > nranks || in.size() < 4 + 4 * static_cast<size_t>(n)) return false;
  out->awaited.clear();
  for (int32_t i = 0; i < n; ++i) {
    int32_t r = 0;
    std::memcpy(&r, in.data() + 4 + 4 * static_cast<size_t>(i), 4);
    if (r < 0 || r >= nranks) return false;
    out->awaited.push_back(r);
  }
  const size_t at = 4 + 4 * static_cast<size_t>(n);
  out->text.assign(in.begin() + static_cast<std::ptrdiff_t>(at), in.end());
  return true;
}

// Takes what has arrived into comm->loss.heard.
void drain(ncclComm* comm) {
  if (!comm->bootstrap) return;
  for (;;) {
    int from = -1;
    std::vector<uint8_t> data;
    if (!comm->bootstrap->poll(kTagLoss, &from, &data).ok() || from < 0) return;
    Report r;
    r.from = from;
    if (!decode(data, comm->nranks, &r)) {
      BRAID_WARN("rank %d: a malformed peer-loss report from rank %d was dropped", comm->rank,
                 from);
      continue;
    }
    std::lock_guard<std::mutex> lock(comm->loss.mu);
    comm->loss.heard.push_back(std::move(r));
  }
}

}  // namespace

std::string describeRank(const ncclComm* comm, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= comm->peers.size()) return strfmt("rank %d", rank);
  const transport::PeerInfo& peer = comm->peers[static_cast<size_t>(rank)];
  const std::string host(peer.hostName, strnlen(peer.hostName, sizeof peer.hostName));
  return strfmt("rank %d (host %s, pid %d)", rank, host.empty() ? "?" : host.c_str(),
                static_cast<int>(peer.pid));
}

void report(ncclComm* comm, const std::vector<int>& awaited, const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(comm->loss.mu);
    if (comm->loss.sent || !comm->bootstrap) return;
    comm->loss.sent = true;
  }
  const std::vector<uint8_t> wire = encode(awaited, text);
  for (int p = 0; p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    Status st = comm->bootstrap->send(p, kTagLoss, wire.data(), wire.size());
    if (!st.ok())
      BRAID_INFO(kInit, "rank %d: could not report the loss to rank %d: %s", comm->rank, p,
                 st.message().c_str());
  }
}

bool heard(ncclComm* comm, Report* out) {
  drain(comm);
  std::lock_guard<std::mutex> lock(comm->loss.mu);
  if (comm->loss.heard.empty()) return false;
  *out = comm->loss.heard.front();
  return true;
}

std::string culprits(ncclComm* comm, const std::vector<int>& awaited) {
  const auto until = std::chrono::steady_clock::now() + kGrace;
  std::vector<Report> reports;
  for (;;) {
    drain(comm);
    {
      std::lock_guard<std::mutex> lock(comm->loss.mu);
      reports = comm->loss.heard;
    }
    // Every other rank spoke: nobody is silent.
    std::set<int> spoke;
    for (const Report& r : reports) spoke.insert(r.from);
    if (static_cast<int>(spoke.size()) >= comm->nranks - 1 ||
        std::chrono::steady_clock::now() >= until)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::vector<std::vector<int>> awaits(static_cast<size_t>(comm->nranks));
  std::vector<bool> spoke(static_cast<size_t>(comm->nranks), false);
  for (const Report& r : reports) {
    spoke[static_cast<size_t>(r.from)] = true;
    awaits[static_cast<size_t>(r.from)] = r.awaited;
  }
  // Breadth first from this rank's own peers; `by` keeps who awaited each rank reached.
  std::vector<int> by(static_cast<size_t>(comm->nranks), -2), frontier;
  by[static_cast<size_t>(comm->rank)] = comm->rank;
  for (int r : awaited)
    if (by[static_cast<size_t>(r)] == -2)
      by[static_cast<size_t>(r)] = comm->rank, frontier.push_back(r);
  std::vector<int> silent;
  while (!frontier.empty()) {
    std::vector<int> next;
    for (int r : frontier) {
      if (!spoke[static_cast<size_t>(r)]) {
        silent.push_back(r);
        continue;
      }
      for (int a : awaits[static_cast<size_t>(r)])
        if (by[static_cast<size_t>(a)] == -2) by[static_cast<size_t>(a)] = r, next.push_back(a);
    }
    frontier = std::move(next);
  }
  std::string out;
  for (int r : silent) {
    const int waiter = by[static_cast<size_t>(r)];
    out += strfmt("; no word from %s, awaited by %s: it stopped or died",
                  describeRank(comm, r).c_str(),
                  waiter == comm->rank ? "this rank" : strfmt("rank %d", waiter).c_str());
  }
  return out;
}

}  // namespace braid::loss
