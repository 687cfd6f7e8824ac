#include "topo/comm_topology.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "base/env.h"
#include "base/log.h"
#include "topo/variables.h"

namespace braid::topo {
namespace {

// "0-3,6,8-9"
std::string rankRanges(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out.push_back(',');
    out.append(std::to_string(ranks[i]));
    if (j > i) out.append(1, '-').append(std::to_string(ranks[j]));
    i = j + 1;
  }
  return out;
}

std::string linkText(const algos::LinkCost& l) {
  std::string text =
      strfmt("%.3g us, %.3g Gbit/s", l.alphaUs, l.betaUsPerByte > 0 ? 8e-3 / l.betaUsPerByte : 0.0);
  if (l.burstBytes > 0) text += strfmt(", bursts of %.4g KiB", l.burstBytes / 1024);
  if (l.cpuUsPerByte > 0) text += strfmt(", %.3g ns of CPU per byte", l.cpuUsPerByte * 1e3);
  return text;
}

// Numbers the distinct values of `keys` (one per rank) in order of first appearance.
std::vector<int> numberGroups(const std::vector<std::string>& keys,
                              std::vector<std::string>* names) {
  std::vector<int> out(keys.size());
  for (size_t r = 0; r < keys.size(); ++r) {
    auto it = std::find(names->begin(), names->end(), keys[r]);
    out[r] = static_cast<int>(it - names->begin());
    if (it == names->end()) names->push_back(keys[r]);
  }
  return out;
}

}  // namespace

std::string localHostName() {
  if (const char* id = env::get(env::kNcclHostid); id && *id) return id;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::vector<std::string> distinctHosts(const std::vector<std::string>& rankHosts,
                                       std::vector<int>* hostOfRank) {
  std::vector<std::string> names;
  *hostOfRank = numberGroups(rankHosts, &names);
  return names;
}

Status topologyFromClusterMap(const ClusterMap& map, const std::vector<std::string>& rankHosts,
                              algos::LinkCost intraHost, CommTopology* out) {
  CommTopology t;
  t.source = "cluster map " + map.path;
  t.rankHosts = rankHosts;
  std::vector<int> hostIndex(rankHosts.size());
  for (size_t r = 0; r < rankHosts.size(); ++r) {
    hostIndex[r] = map.findHost(rankHosts[r]);
    if (hostIndex[r] < 0)
      return invalidUsage(
          "%s: rank %zu runs on host \"%s\", which the map does not name; expected a <host "
          "name=\"%s\"> (the hostname or NCCL_HOSTID)",
          map.path.c_str(), r, rankHosts[r].c_str(), rankHosts[r].c_str());
  }
  for (size_t l = 0; l < map.levels.size(); ++l) {
    std::vector<std::string> keys(rankHosts.size());
    for (size_t r = 0; r < rankHosts.size(); ++r)
      keys[r] =
          map.groups[l][static_cast<size_t>(map.groupOf(hostIndex[r], static_cast<int>(l)))].name;
    t.groupNames.emplace_back();
    t.topology.groupOf.push_back(numberGroups(keys, &t.groupNames.back()));
    t.levelNames.push_back(map.levels[l].name);
  }
  if (map.localCpuNsPerByte > 0) intraHost.cpuUsPerByte = map.localCpuNsPerByte * 1e-3;
  t.topology.link.push_back(intraHost);
  for (const ClusterLevel& l : map.levels) t.topology.link.push_back(l.link());
  *out = std::move(t);
  return Status::Ok();
}

Status topologyFromRacks(const std::vector<std::string>& rankHosts, const RackClustering& racks,
                         algos::LinkCost intraHost, CommTopology* out) {
  std::vector<int> hostOfRank;
  std::vector<std::string> hosts = distinctHosts(rankHosts, &hostOfRank);
  if (racks.rackOfHost.size() != hosts.size())
    return internalError("rack clustering covers %zu hosts; the communicator has %zu",
                         racks.rackOfHost.size(), hosts.size());
  CommTopology t;
  t.source = strfmt("probe (%d racks)", racks.racks);
  t.rankHosts = rankHosts;
  t.levelNames = {"host"};
  t.groupNames = {hosts};
  if (racks.racks > 1) {
    t.topology = algos::Topology::hostsAndRacks(hostOfRank, racks.rackOfHost, intraHost,
                                                racks.intraRack, racks.interRack);
    t.levelNames.push_back("rack");
    t.groupNames.emplace_back();
    for (int r = 0; r < racks.racks; ++r) t.groupNames.back().push_back(strfmt("rack%d", r));
  } else {
    t.topology = algos::Topology::hostsAndRacks(hostOfRank, {}, intraHost, racks.intraRack, {});
  }
  *out = std::move(t);
  return Status::Ok();
}

CommTopology topologyFromHosts(const std::vector<std::string>& rankHosts, algos::LinkCost intraHost,
                               algos::LinkCost interHost) {
  std::vector<int> hostOfRank;
  CommTopology t;
  t.source = "hosts only";
  t.rankHosts = rankHosts;
  t.levelNames = {"host"};
  t.groupNames = {distinctHosts(rankHosts, &hostOfRank)};
  t.topology = algos::Topology::hostsAndRacks(hostOfRank, {}, intraHost, interHost, {});
  return t;
}

std::string CommTopology::describe() const {
  const algos::Topology& t = topology;
  std::string out =
      strfmt("topology from %s: %d ranks, %d levels\n", source.c_str(), t.nranks(), t.levels());
  for (int l = 0; l < t.levels(); ++l) {
    const std::string& name = levelNames[static_cast<size_t>(l)];
    out += strfmt("  level %d %s: %zu groups; inside one %s: %s\n", l, name.c_str(),
                  groupNames[static_cast<size_t>(l)].size(), name.c_str(),
                  linkText(t.link[static_cast<size_t>(l)]).c_str());
  }
  if (t.levels() > 0)
    out +=
        strfmt("  between %ss: %s\n", levelNames.back().c_str(), linkText(t.link.back()).c_str());
  // The tree of groups, outermost first; hosts list their ranks.
  std::function<void(int, int, int)> show = [&](int level, int group, int depth) {
    std::vector<int> members;
    for (int r = 0; r < t.nranks(); ++r)
      if (t.groupOf[static_cast<size_t>(level)][static_cast<size_t>(r)] == group)
        members.push_back(r);
    out.append(static_cast<size_t>(2 * depth), ' ')
        .append(levelNames[static_cast<size_t>(level)])
        .append(1, ' ')
        .append(groupNames[static_cast<size_t>(level)][static_cast<size_t>(group)])
        .append(": ranks ")
        .append(rankRanges(members))
        .append(1, '\n');
    if (level == 0) return;
    std::vector<int> children;
    for (int r : members) {
      int c = t.groupOf[static_cast<size_t>(level) - 1][static_cast<size_t>(r)];
      if (std::find(children.begin(), children.end(), c) == children.end()) children.push_back(c);
    }
    for (int c : children) show(level - 1, c, depth + 1);
  };
  if (t.levels() > 0)
    for (size_t g = 0; g < groupNames.back().size(); ++g)
      show(t.levels() - 1, static_cast<int>(g), 1);
  return out;
}

Status buildCommTopology(const CommTopologyInputs& in, CommTopology* out) {
  std::vector<int> hostOfRank;
  const int nhosts = static_cast<int>(distinctHosts(in.rankHosts, &hostOfRank).size());
  const char* file = env::get(env::kBraidClusterFile);
  const int64_t probeMs = env::getInt(env::kBraidTopoProbe);
  if (file && *file) {
    ClusterMap map;
    BRAID_TRY(loadClusterMap(file, &map).withContext("BRAID_CLUSTER_FILE"));
    BRAID_TRY(topologyFromClusterMap(map, in.rankHosts, in.intraHost, out)
                  .withContext("BRAID_CLUSTER_FILE"));
  } else if (in.probedRacks) {
    BRAID_TRY(topologyFromRacks(in.rankHosts, *in.probedRacks, in.intraHost, out));
  } else if (probeMs > 0 && in.measure && nhosts >= 3) {
    ProbeOptions options;
    options.budget = std::chrono::milliseconds(probeMs);
    RackClustering racks;
    Status s = probeRacks(nhosts, in.measure, options, &racks);
    if (s.ok()) s = topologyFromRacks(in.rankHosts, racks, in.intraHost, out);
    if (!s.ok()) {
      BRAID_WARN("topology probe failed, treating hosts as one flat network: %s",
                 s.message().c_str());
      *out = topologyFromHosts(in.rankHosts, in.intraHost, in.interHost);
    }
  } else {
    *out = topologyFromHosts(in.rankHosts, in.intraHost, in.interHost);
  }
  if (log::enabled(log::Level::Info, log::kGraph)) {
    std::string text = out->describe();
    size_t start = 0;
    while (start < text.size()) {  // one log line per line, so each carries NCCL's prefix
      size_t end = text.find('\n', start);
      BRAID_INFO(kGraph, "%s", text.substr(start, end - start).c_str());
      start = end == std::string::npos ? text.size() : end + 1;
    }
  }
  return Status::Ok();
}

}  // namespace braid::topo
