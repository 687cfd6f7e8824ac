#include "topo/probe.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

#include "base/env.h"
#include "base/log.h"
#include "topo/comm_topology.h"
#include "topo/variables.h"
#include "transport/wait.h"

namespace braid::topo {
namespace {

constexpr uint64_t kTagCommand = 0x70726f62;  // "prob"
constexpr uint64_t kTagResult = 0x70726f72;
constexpr uint64_t kTagRacks = 0x70726b73;
// Per measurement: kPings ping-pongs (the fastest is the latency: a descheduled rank only makes
// a round trip look slower), one untimed message that drains whatever burst a shaped link
// allows and opens the TCP window, then kTransfers timed messages: the link's steady rate, and
// the CPU time both sides spent on them per byte (each side sleeps while it waits; the kernel's
// work outside the two threads, such as softirq processing, is not seen).
// Last, the link idles kIdle and one more message is timed: a shaped link's token bucket has
// refilled (if it refills within kIdle), and what arrived faster than the rate allows is its
// burst. Below kMinBurstShare of the message that is read as noise: no bucket.
constexpr size_t kTransferBytes = 512 << 10;
constexpr int kTransfers = 4, kPings = 5;
constexpr auto kIdle = std::chrono::milliseconds(3);
constexpr std::chrono::milliseconds kPoll{10};
constexpr double kMinBurstShare = 0.125;
// A round under load times kLoadedTransfers messages of every flow: twice a lone pair's, as the
// flows of a round share the cores and one flow's rate wanders more.
constexpr int kLoadedTransfers = 2 * kTransfers;

constexpr uint64_t kTagReady = 0x70726479;
constexpr uint64_t kTagGo = 0x7072676f;

enum Op : int32_t { kDone = 0, kSend = 1, kReceive = 2, kExchange = 3 };
struct Command {
  int32_t op;
  int32_t peer;  // rank of the other leader (kExchange: the one to send to)
  int32_t from;  // kExchange: the leader to receive from
};
struct Result {
  double latencyUs;
  double bandwidthGbps;
  double burstBytes;
  double cpuUsPerByte;
};

using Clock = std::chrono::steady_clock;

// One message on the connection to `peer`, waited for.
Status transfer(ProbeNetwork& net, int peer, bool send, void* data, size_t bytes,
                bool sleep = false) {
  uint64_t seq;
  BRAID_TRY(net.post(peer, send, data, bytes, &seq));
  transport::Endpoint* ep = &net.endpoint(peer);
  const Waiter waiter = net.waiter();
  // With `sleep`, waits in poll() between moves where the endpoint allows it, so that a side's
  // CPU time is the work of moving the data, not of waiting for it (see threadCpuUs). Latency is
  // measured spinning, as the executor waits for a small message.
  transport::WaitSet wakeups;
  for (;;) {
    BRAID_TRY(ep->progress());
    if ((send ? ep->sendsCompleted() : ep->recvsCompleted()) >= seq) return Status::Ok();
    BRAID_TRY(waiter.check("topology probe"));
    if (!sleep) continue;
    wakeups.clear();
    ep->addWakeups(wakeups);
    if (wakeups.method() == transport::WaitSet::Method::kFds) wakeups.sleep(kPoll);
  }
}

// `count` messages to `to` and as many from `from` at once (the same connection where they are
// one rank), each side acknowledging what it received with one word; *sendUs: from the call
// until `to` acknowledged. Timed at the sender, whose data cannot leave before it starts: a
// receiver that starts late finds the bytes in its socket, and its own clock would run fast. A
// receiver that reads late only makes the pair look slower.
Status exchange(ProbeNetwork& net, int to, int from, std::vector<char>& out, std::vector<char>& in,
                int count, double* sendUs) {
  const auto t0 = Clock::now();
  *sendUs = 0;
  uint64_t sent = 0, received = 0, acked = 0, ackSent = 0, ackOut = 0, ackIn = 0;
  for (int i = 0; i < count; ++i) {
    BRAID_TRY(net.post(to, true, out.data(), out.size(), &sent));
    BRAID_TRY(net.post(from, false, in.data(), in.size(), &received));
  }
  BRAID_TRY(net.post(to, false, &ackIn, sizeof ackIn, &acked));
  transport::Endpoint* toEp = &net.endpoint(to);
  transport::Endpoint* fromEp = &net.endpoint(from);
  const Waiter waiter = net.waiter();
  bool ackPosted = false;
  // Waits in poll() between moves where the endpoints allow it, as a lone pair's timed transfer
  // does: every host moves data at once, and a leader spinning would take a core from the
  // others' network stacks where hosts share one machine.
  transport::WaitSet wakeups;
  for (;;) {
    BRAID_TRY(toEp->progress());
    if (fromEp != toEp) BRAID_TRY(fromEp->progress());
    if (!ackPosted && fromEp->recvsCompleted() >= received) {
      BRAID_TRY(net.post(from, true, &ackOut, sizeof ackOut, &ackSent));
      ackPosted = true;
      continue;  // move the acknowledgement before sleeping
    }
    if (*sendUs <= 0 && toEp->recvsCompleted() >= acked)
      *sendUs = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (ackPosted && *sendUs > 0 && toEp->sendsCompleted() >= sent &&
        fromEp->sendsCompleted() >= ackSent)
      return Status::Ok();
    BRAID_TRY(waiter.check("topology probe under load"));
    wakeups.clear();
    toEp->addWakeups(wakeups);
    if (fromEp != toEp) fromEp->addWakeups(wakeups);
    if (wakeups.method() == transport::WaitSet::Method::kFds) wakeups.sleep(kPoll);
  }
}

// A leader's part of one loaded round: one message each way (opens the windows), then, once
// rank 0 says go (every leader has done its first), kLoadedTransfers each way; gives the rate at
// which its own messages reached `to`. Rank 0 (host 0's leader) also says go.
Status exchangeRound(ProbeNetwork& net, const std::vector<int>& leaders, int to, int from,
                     double* gbps) {
  std::vector<char> out(kTransferBytes), in(kTransferBytes);
  double us = 0;
  BRAID_TRY(exchange(net, to, from, out, in, 1, &us));
  uint8_t token = 0;
  if (net.rank() == 0) {
    for (int leader : leaders)
      if (leader != 0) BRAID_TRY(net.recvControl(leader, kTagReady, &token, 1));
    for (int leader : leaders)
      if (leader != 0) BRAID_TRY(net.sendControl(leader, kTagGo, &token, 1));
  } else {
    BRAID_TRY(net.sendControl(0, kTagReady, &token, 1));
    BRAID_TRY(net.recvControl(0, kTagGo, &token, 1));
  }
  BRAID_TRY(exchange(net, to, from, out, in, kLoadedTransfers, &us));
  *gbps = us > 0 ? kLoadedTransfers * kTransferBytes * 8.0 / (us * 1e3) : 0;
  return Status::Ok();
}

// The calling thread's CPU time so far (user and system), in microseconds.
double threadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

// The two leaders' sides of one measurement: ping-pongs for latency, then kTransfers messages
// and an acknowledgement for bandwidth. The sender reports to rank 0.
Status measureAsSender(ProbeNetwork& net, int peer, Result* out) {
  std::vector<char> buf(kTransferBytes);
  uint64_t word = 0;
  auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  double rttUs = 1e30;
  for (int i = 0; i < kPings; ++i) {
    auto t0 = Clock::now();
    BRAID_TRY(transfer(net, peer, true, &word, sizeof word));
    BRAID_TRY(transfer(net, peer, false, &word, sizeof word));
    rttUs = std::min(rttUs, since(t0));
  }
  BRAID_TRY(transfer(net, peer, true, buf.data(), buf.size()));  // warm-up
  BRAID_TRY(transfer(net, peer, false, &word, sizeof word));
  auto t0 = Clock::now();
  const double cpu0 = threadCpuUs();
  for (int i = 0; i < kTransfers; ++i)
    BRAID_TRY(transfer(net, peer, true, buf.data(), buf.size(), true));
  const double cpuUs = threadCpuUs() - cpu0;
  BRAID_TRY(transfer(net, peer, false, &word, sizeof word));  // the receiver's CPU, in ns
  const double us = since(t0) - rttUs / 2;
  out->latencyUs = rttUs / 2;
  out->bandwidthGbps = us > 0 ? kTransfers * kTransferBytes * 8.0 / (us * 1e3) : 0;
  out->cpuUsPerByte =
      (cpuUs + static_cast<double>(word) * 1e-3) / (kTransfers * double{kTransferBytes});
  std::this_thread::sleep_for(kIdle);
  t0 = Clock::now();
  BRAID_TRY(transfer(net, peer, true, buf.data(), buf.size()));
  BRAID_TRY(transfer(net, peer, false, &word, sizeof word));
  // Bytes per microsecond at the steady rate: Gbit/s x 1e3 / 8.
  const double atRate = (since(t0) - rttUs) * out->bandwidthGbps * 1e3 / 8;
  const double burst =
      std::clamp(static_cast<double>(kTransferBytes) - atRate, 0.0, double{kTransferBytes});
  out->burstBytes = burst >= kMinBurstShare * kTransferBytes ? burst : 0;
  return Status::Ok();
}

Status measureAsReceiver(ProbeNetwork& net, int peer) {
  std::vector<char> buf(kTransferBytes);
  uint64_t word = 0;
  for (int i = 0; i < kPings; ++i) {
    BRAID_TRY(transfer(net, peer, false, &word, sizeof word));
    BRAID_TRY(transfer(net, peer, true, &word, sizeof word));
  }
  BRAID_TRY(transfer(net, peer, false, buf.data(), buf.size()));  // warm-up
  BRAID_TRY(transfer(net, peer, true, &word, sizeof word));
  const double cpu0 = threadCpuUs();
  for (int i = 0; i < kTransfers; ++i)
    BRAID_TRY(transfer(net, peer, false, buf.data(), buf.size(), true));
  word = static_cast<uint64_t>(std::max(0.0, (threadCpuUs() - cpu0) * 1e3));
  BRAID_TRY(transfer(net, peer, true, &word, sizeof word));
  BRAID_TRY(transfer(net, peer, false, buf.data(), buf.size()));  // the burst
  return transfer(net, peer, true, &word, sizeof word);
}

// Rank 0's part of the rounds under load: in round d every host h sends to host h + d and
// receives from h - d (mod the hosts), all at once, for d = 1, 2, ... while the budget lasts
// (each pair is measured both ways, in rounds d and hosts - d). Gives each flow's rate, a the
// sender.
Status driveLoaded(ProbeNetwork& net, const std::vector<int>& leaders,
                   std::chrono::steady_clock::time_point deadline,
                   std::vector<PairSample>* loaded) {
  const int hosts = static_cast<int>(leaders.size());
  for (int d = 1; d < hosts && Clock::now() < deadline; ++d) {
    auto leaderAt = [&](int h) {
      return leaders[static_cast<size_t>(((h % hosts) + hosts) % hosts)];
    };
    for (int h = 1; h < hosts; ++h) {
      Command cmd{kExchange, leaderAt(h + d), leaderAt(h - d)};
      BRAID_TRY(net.sendControl(leaders[static_cast<size_t>(h)], kTagCommand, &cmd, sizeof cmd));
    }
    double gbps = 0;
    BRAID_TRY(exchangeRound(net, leaders, leaderAt(d), leaderAt(-d), &gbps));
    loaded->push_back({0, d, {0, gbps, 0, 0}});
    for (int h = 1; h < hosts; ++h) {
      BRAID_TRY(net.recvControl(leaders[static_cast<size_t>(h)], kTagResult, &gbps, sizeof gbps));
      loaded->push_back({h, (h + d) % hosts, {0, gbps, 0, 0}});
    }
  }
  return Status::Ok();
}

// Rank 0's view of the probe: measure(a, b) commands the two hosts' leaders. Under load, the
// pairs measured alone price the racks that the rounds under load found (where they found any).
Status drive(ProbeNetwork& net, const std::vector<int>& leaders, bool underLoad,
             RackClustering* racks) {
  MeasureFn measure = [&](int a, int b, LinkSample* sample) -> Status {
    const int sender = leaders[a], receiver = leaders[b];
    Result result{};
    Command toReceiver{kReceive, sender, 0}, toSender{kSend, receiver, 0};
    if (receiver != 0)
      BRAID_TRY(net.sendControl(receiver, kTagCommand, &toReceiver, sizeof toReceiver));
    if (sender != 0) BRAID_TRY(net.sendControl(sender, kTagCommand, &toSender, sizeof toSender));
    if (sender == 0)
      BRAID_TRY(measureAsSender(net, receiver, &result));
    else if (receiver == 0)
      BRAID_TRY(measureAsReceiver(net, sender));
    if (sender != 0) BRAID_TRY(net.recvControl(sender, kTagResult, &result, sizeof result));
    sample->latencyUs = result.latencyUs;
    sample->bandwidthGbps = result.bandwidthGbps;
    sample->burstBytes = result.burstBytes;
    sample->cpuUsPerByte = result.cpuUsPerByte;
    return Status::Ok();
  };
  ProbeOptions options;
  options.budget = std::chrono::milliseconds(env::getInt(env::kBraidTopoProbe));
  std::vector<PairSample> alone, loaded;
  Status st = probeRacks(static_cast<int>(leaders.size()), measure, options, racks, &alone);
  if (st.ok() && underLoad) {
    st = driveLoaded(net, leaders, Clock::now() + options.budget, &loaded);
    for (const PairSample& f : loaded)
      BRAID_TRACE(kGraph, "probe under load: host %d -> host %d at %.3f Gbit/s", f.a, f.b,
                  f.link.bandwidthGbps);
    double threshold = 0;
    std::vector<int> rackOfHost =
        racksUnderLoad(static_cast<int>(leaders.size()), loaded, options.racks, &threshold);
    BRAID_INFO(kGraph, "probe under load: %zu flows measured, %d racks (split at %.3g Gbit/s)",
               loaded.size(),
               rackOfHost.empty() ? 1 : *std::max_element(rackOfHost.begin(), rackOfHost.end()) + 1,
               threshold);
    // A topology has one link cost per level. Where the pairs alone already put a slow host in a
    // rack of its own, that stays the split: its link bounds every call that crosses it, where a
    // shared uplink costs the flows' share of it, and racks found under load beside it would be
    // priced at the median link across them, the slow host's hidden in it (docs/topology.md).
    if (st.ok() && !rackOfHost.empty()) {
      RackClustering found = priceRacks(static_cast<int>(leaders.size()), alone,
                                        std::move(rackOfHost), threshold, options.racks);
      if (found.slowHost < 0 || found.slowHost != racks->slowHost) *racks = std::move(found);
    }
  }
  Command done{kDone, 0, 0};
  for (int leader : leaders)
    if (leader != 0) BRAID_TRY(net.sendControl(leader, kTagCommand, &done, sizeof done));
  return st;
}

// A leader's view: measure what rank 0 asks until it says done.
Status serve(ProbeNetwork& net) {
  for (;;) {
    Command cmd{};
    BRAID_TRY(net.recvControl(0, kTagCommand, &cmd, sizeof cmd));
    if (cmd.op == kDone) return Status::Ok();
    if (cmd.op == kExchange) {
      double gbps = 0;
      BRAID_TRY(exchangeRound(net, {}, cmd.peer, cmd.from, &gbps));
      BRAID_TRY(net.sendControl(0, kTagResult, &gbps, sizeof gbps));
    } else if (cmd.op == kReceive) {
      BRAID_TRY(measureAsReceiver(net, cmd.peer));
    } else {
      Result result{};
      BRAID_TRY(measureAsSender(net, cmd.peer, &result));
      BRAID_TRY(net.sendControl(0, kTagResult, &result, sizeof result));
    }
  }
}

}  // namespace

Status probeTopology(ProbeNetwork& net, const std::vector<std::string>& rankHosts,
                     RackClustering* racks, bool* ran, bool underLoad) {
  *ran = false;
  std::vector<int> hostOfRank;
  const auto hosts = distinctHosts(rankHosts, &hostOfRank);
  const char* map = env::get(env::kBraidClusterFile);
  if ((map && *map) || env::getInt(env::kBraidTopoProbe) <= 0 || hosts.size() < 3)
    return Status::Ok();
  std::vector<int> leaders(hosts.size(), -1);
  for (int r = net.nranks() - 1; r >= 0; --r) leaders[static_cast<size_t>(hostOfRank[r])] = r;

  // Rank 0 leads host 0 (hosts are numbered by first appearance). The wire format of the
  // result: ok flag, racks per host, rack count, threshold, two link costs, the slow host.
  struct Wire {
    int32_t ok, racks;
    double threshold;
    algos::LinkCost intra, inter;
    int32_t slowHost;
    double slowHostGbps, othersGbps;
  } wire{};
  std::vector<int32_t> rackOfHost(hosts.size(), 0);
  if (net.rank() == 0) {
    Status st = drive(net, leaders, underLoad, racks);
    if (!st.ok())
      BRAID_WARN("topology probe failed, treating hosts as one flat network: %s",
                 st.message().c_str());
    wire = {st.ok(),          racks->racks,    racks->thresholdGbps, racks->intraRack,
            racks->interRack, racks->slowHost, racks->slowHostGbps,  racks->othersGbps};
    if (st.ok()) std::copy(racks->rackOfHost.begin(), racks->rackOfHost.end(), rackOfHost.begin());
    for (int r = 1; r < net.nranks(); ++r) {
      BRAID_TRY(net.sendControl(r, kTagRacks, &wire, sizeof wire));
      BRAID_TRY(
          net.sendControl(r, kTagRacks, rackOfHost.data(), rackOfHost.size() * sizeof(int32_t)));
    }
  } else {
    if (leaders[static_cast<size_t>(hostOfRank[net.rank()])] == net.rank()) BRAID_TRY(serve(net));
    BRAID_TRY(net.recvControl(0, kTagRacks, &wire, sizeof wire));
    BRAID_TRY(
        net.recvControl(0, kTagRacks, rackOfHost.data(), rackOfHost.size() * sizeof(int32_t)));
  }
  if (!wire.ok) return Status::Ok();
  racks->rackOfHost.assign(rackOfHost.begin(), rackOfHost.end());
  racks->racks = wire.racks;
  racks->thresholdGbps = wire.threshold;
  racks->intraRack = wire.intra;
  racks->interRack = wire.inter;
  racks->slowHost = wire.slowHost;
  racks->slowHostGbps = wire.slowHostGbps;
  racks->othersGbps = wire.othersGbps;
  *ran = true;
  return Status::Ok();
}

}  // namespace braid::topo
