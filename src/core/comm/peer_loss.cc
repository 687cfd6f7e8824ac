#include "core/comm/peer_loss.h"

#include <algorithm>
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

// The wire: i32 count, count x i32 awaited ranks; i32 count, count x (i32 peer, u64 message)
// awaited; i32 count, count x (i32 peer, u64 sends done); then the text.
class Writer {
 public:
  template <typename T>
  void put(T v) {
    const size_t at = out.size();
    out.resize(at + sizeof v);
    std::memcpy(out.data() + at, &v, sizeof v);
  }
  std::vector<uint8_t> out;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& in) : in_(in) {}
  template <typename T>
  bool get(T* v) {
    if (in_.size() - at_ < sizeof *v) return false;
    std::memcpy(v, in_.data() + at_, sizeof *v);
    at_ += sizeof *v;
    return true;
  }
  size_t at() const { return at_; }

 private:
  const std::vector<uint8_t>& in_;
  size_t at_ = 0;
};

void putPairs(Writer& w, const std::vector<std::pair<int, uint64_t>>& pairs) {
  w.put(static_cast<int32_t>(pairs.size()));
  for (const auto& [peer, n] : pairs) {
    w.put(static_cast<int32_t>(peer));
    w.put(n);
  }
}

bool getPairs(Reader& r, int nranks, std::vector<std::pair<int, uint64_t>>* out) {
  int32_t n = 0;
  if (!r.get(&n) || n < 0 || n > nranks) return false;
  out->clear();
  for (int32_t i = 0; i < n; ++i) {
    int32_t peer = 0;
    uint64_t v = 0;
    if (!r.get(&peer) || !r.get(&v) || peer < 0 || peer >= nranks) return false;
    out->emplace_back(peer, v);
  }
  return true;
}

std::vector<uint8_t> encode(const std::vector<int>& awaited, const Progress& progress,
                            const std::string& text) {
  Writer w;
  w.put(static_cast<int32_t>(awaited.size()));
  for (int r : awaited) w.put(static_cast<int32_t>(r));
  putPairs(w, progress.awaiting);
  putPairs(w, progress.sent);
  w.out.insert(w.out.end(), text.begin(), text.end());
  return std::move(w.out);
}

// A malformed report (another build, garbage) is dropped: false.
bool decode(const std::vector<uint8_t>& in, int nranks, Report* out) {
  Reader r(in);
  int32_t n = 0;
  if (!r.get(&n) || n < 0 || n > nranks) return false;
  out->awaited.clear();
  for (int32_t i = 0; i < n; ++i) {
    int32_t rank = 0;
    if (!r.get(&rank) || rank < 0 || rank >= nranks) return false;
    out->awaited.push_back(rank);
  }
  if (!getPairs(r, nranks, &out->progress.awaiting) || !getPairs(r, nranks, &out->progress.sent))
    return false;
  out->text.assign(in.begin() + static_cast<std::ptrdiff_t>(r.at()), in.end());
  return true;
}

// Keeps a report that came from rank `from` in comm->loss.heard (false: malformed, dropped).
bool keep(ncclComm* comm, int from, const std::vector<uint8_t>& data) {
  Report r;
  r.from = from;
  if (!decode(data, comm->nranks, &r)) {
    BRAID_WARN("rank %d: a malformed peer-loss report from rank %d was dropped", comm->rank, from);
    return false;
  }
  std::lock_guard<std::mutex> lock(comm->loss.mu);
  comm->loss.heard.push_back(std::move(r));
  return true;
}

// Takes what has arrived into comm->loss.heard.
void drain(ncclComm* comm) {
  if (!comm->bootstrap) return;
  for (;;) {
    int from = -1;
    std::vector<uint8_t> data;
    if (!comm->bootstrap->poll(kTagLoss, &from, &data).ok() || from < 0) return;
    keep(comm, from, data);
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

void report(ncclComm* comm, const std::vector<int>& awaited, const Progress& progress,
            const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(comm->loss.mu);
    if (comm->loss.sent || !comm->bootstrap) return;
    comm->loss.sent = true;
  }
  const std::vector<uint8_t> wire = encode(awaited, progress, text);
  for (int p = 0; p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    Status st = comm->bootstrap->send(p, kTagLoss, wire.data(), wire.size());
    if (!st.ok())
      BRAID_INFO(kInit, "rank %d: could not report the loss to rank %d: %s", comm->rank, p,
                 st.message().c_str());
  }
}

Progress progress(const ncclComm* comm, const std::vector<bool>& first) {
  // The endpoints count every operation a pair ever posted (calls before this one, the probe's)
  // alike on both ends, so their numbers compare across calls too: a peer may have finished the
  // call this rank is stuck in.
  constexpr size_t kSentPeers = 64;
  Progress out;
  for (bool firstPass : {true, false}) {
    for (size_t p = 0; p < comm->channels.size(); ++p) {
      const PeerChannel& ch = comm->channels[p];
      const bool isFirst = p < first.size() && first[p];
      if (!ch.endpoint || isFirst != firstPass) continue;
      const uint64_t received = ch.endpoint->recvsCompleted();
      if (received < ch.recvsPosted) out.awaiting.emplace_back(static_cast<int>(p), received + 1);
      if (ch.sendsPosted > 0 && out.sent.size() < kSentPeers)
        out.sent.emplace_back(static_cast<int>(p), ch.endpoint->sendsCompleted());
    }
  }
  return out;
}

Status giveUp(ncclComm* comm, std::vector<int> awaited, const Progress& progress,
              const Status& status, const std::string& diagnosis) {
  std::sort(awaited.begin(), awaited.end());
  awaited.erase(std::unique(awaited.begin(), awaited.end()), awaited.end());
  report(comm, awaited, progress, diagnosis.empty() ? status.message() : diagnosis);
  return Status(status.code(), status.message() + culprits(comm, awaited, progress));
}

Status recvUnlessLost(ncclComm* comm, int peer, uint64_t tag, void* data, size_t bytes,
                      int64_t timeoutMs, bool* lost) {
  *lost = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  for (int64_t left = timeoutMs;;) {
    int from = -1;
    std::vector<uint8_t> report;
    BRAID_TRY(comm->bootstrap->recvUnless(peer, tag, data, bytes, left, kTagLoss, &from, &report));
    if (from < 0) return Status::Ok();
    // A malformed report stops nothing: the wait goes on for what is left of its time.
    if (timeoutMs > 0)
      left = std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
    if (keep(comm, from, report)) {
      *lost = true;
      return Status::Ok();
    }
  }
}

bool heard(ncclComm* comm, Report* out) {
  drain(comm);
  std::lock_guard<std::mutex> lock(comm->loss.mu);
  if (comm->loss.heard.empty()) return false;
  *out = comm->loss.heard.front();
  return true;
}

std::string culprits(ncclComm* comm, const std::vector<int>& awaited, const Progress& progress) {
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
  std::vector<const Progress*> progressOf(static_cast<size_t>(comm->nranks), nullptr);
  for (const Report& r : reports) {
    spoke[static_cast<size_t>(r.from)] = true;
    awaits[static_cast<size_t>(r.from)] = r.awaited;
    progressOf[static_cast<size_t>(r.from)] = &r.progress;
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
    out += strfmt("; no word from %s, awaited by %s: it stopped or died, or the link to it did",
                  describeRank(comm, r).c_str(),
                  waiter == comm->rank ? "this rank" : strfmt("rank %d", waiter).c_str());
  }
  if (!silent.empty()) return out;
  // Everyone reached spoke, so no rank stopped: what holds the call up is a link. Either a
  // message left its sender (the transport took it) and its receiver still awaits it, or two
  // ranks each await the other (a send not taken on one side, a message not coming on the
  // other).
  awaits[static_cast<size_t>(comm->rank)] = awaited;
  spoke[static_cast<size_t>(comm->rank)] = true;
  progressOf[static_cast<size_t>(comm->rank)] = &progress;
  std::set<std::pair<int, int>> named;  // (from, to), and (lower, higher) for a mutual wait
  for (int to = 0; to < comm->nranks; ++to) {
    const Progress* mine = progressOf[static_cast<size_t>(to)];
    if (!mine) continue;
    for (const auto& [from, message] : mine->awaiting) {
      const Progress* theirs = progressOf[static_cast<size_t>(from)];
      if (!theirs) continue;
      for (const auto& [peer, sent] : theirs->sent)
        if (peer == to && sent >= message && named.insert({from, to}).second)
          out += strfmt(
              "; %s sent message %llu to %s, which never received it: the link from "
              "the one to the other stopped carrying traffic",
              describeRank(comm, from).c_str(), static_cast<unsigned long long>(message),
              describeRank(comm, to).c_str());
    }
  }
  if (!named.empty()) return out;
  auto awaitsRank = [&](int a, int b) {
    const std::vector<int>& list = awaits[static_cast<size_t>(a)];
    return std::find(list.begin(), list.end(), b) != list.end();
  };
  for (int a = 0; a < comm->nranks; ++a) {
    if (!spoke[static_cast<size_t>(a)]) continue;
    for (int b : awaits[static_cast<size_t>(a)])
      if (a < b && spoke[static_cast<size_t>(b)] && awaitsRank(b, a))
        out += strfmt(
            "; %s and %s both answered and each awaits the other: the link between "
            "them stopped carrying traffic",
            describeRank(comm, a).c_str(), describeRank(comm, b).c_str());
  }
  return out;
}

}  // namespace braid::loss
