// The topology a communicator runs on: algos::Topology (what algorithms read) plus the names
// behind its groups, built from the cluster map when BRAID_CLUSTER_FILE is set, else from a
// bounded probe of host pairs, else from hosts alone.
//
// Wiring (done in communicator init): every rank contributes localHostName() to an allGather;
// the resulting per-rank vector goes into CommTopologyInputs with the intra-host cost (shared
// memory), the default inter-host cost (the transport's), and, for the probe, a MeasureFn
// over host indices (indices into distinctHosts(rankHosts)). Every rank must get the same
// result: the map is the same file everywhere; for the probe, one rank runs it and broadcasts
// rackOfHost (probeRacks and clusterRacks are deterministic given the measurements).
#pragma once

#include <string>
#include <vector>

#include "algos/topology.h"
#include "base/status.h"
#include "topo/cluster_map.h"
#include "topo/racks.h"

namespace braid::topo {

struct CommTopology {
  algos::Topology topology;
  std::vector<std::string> levelNames;               // per topology level: "host", "rack", ...
  std::vector<std::vector<std::string>> groupNames;  // [level][group]
  std::vector<std::string> rankHosts;                // per rank
  std::string source;                                // where the levels came from, for logs
  // The text logged at NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=GRAPH: levels, link costs, and which
  // ranks sit in which group.
  std::string describe() const;
};

// What a rank calls itself in the cluster map: NCCL_HOSTID when set, else its hostname.
std::string localHostName();

// Host names in order of first appearance, and each rank's index into them.
std::vector<std::string> distinctHosts(const std::vector<std::string>& rankHosts,
                                       std::vector<int>* hostOfRank);

// Levels and link costs from the map; a rank whose host the map does not name is an error.
Status topologyFromClusterMap(const ClusterMap& map, const std::vector<std::string>& rankHosts,
                              algos::LinkCost intraHost, CommTopology* out);
// Hosts, then racks as the probe found them (one level only when it found one rack).
Status topologyFromRacks(const std::vector<std::string>& rankHosts, const RackClustering& racks,
                         algos::LinkCost intraHost, CommTopology* out);
// Hosts only, all linked by `interHost`.
CommTopology topologyFromHosts(const std::vector<std::string>& rankHosts, algos::LinkCost intraHost,
                               algos::LinkCost interHost);

struct CommTopologyInputs {
  std::vector<std::string> rankHosts;  // localHostName() of every rank
  algos::LinkCost intraHost;           // shared memory
  algos::LinkCost interHost;           // the network, when neither map nor probe says more
  MeasureFn measure;  // host indices into distinctHosts(rankHosts); empty: no probe
  // Racks some other party already probed (every rank of a communicator gets rank 0's): used
  // instead of running the probe here.
  const RackClustering* probedRacks = nullptr;
};

// BRAID_CLUSTER_FILE (an error in it fails: someone wrote it on purpose), else the probe when
// BRAID_TOPO_PROBE > 0, a measure callback is given and there are at least 3 hosts (a probe
// failure falls back to hosts only, with a warning), else hosts only. Logs describe().
Status buildCommTopology(const CommTopologyInputs& in, CommTopology* out);

}  // namespace braid::topo
