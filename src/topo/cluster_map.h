// BRAID_CLUSTER_FILE: Braid's own description of what lies between hosts, which NCCL's topology
// XML has no words for. It declares switch levels from the host outwards, each with the
// bandwidth and latency a message sees between two members that differ at that level, and
// nests the hosts in the groups of those levels. docs/topology.md has the format and an example:
//
//   <cluster version="1">
//     <level name="host" bw_gbps="100" latency_us="2"/>   two hosts of one rack
//     <level name="rack" bw_gbps="25" latency_us="8"/>    two racks
//     <rack name="r0"> <host name="node01"/> <host name="node02"/> </rack>
//     <rack name="r1"> <host name="node03"/> </rack>
//   </cluster>
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "algos/cost_model.h"
#include "base/status.h"
#include "topo/xml_source.h"

namespace braid::topo {

struct ClusterLevel {
  std::string name;  // the element name of this level's groups; levels[0] is "host"
  double bwGbps = 0;
  double latencyUs = 0;
  double burstKib = 0;           // a shaped link's token bucket (optional; 0: a plain link)
  double cpuNsPerByte = 0;       // CPU a byte costs both ends together (optional; 0: not priced)
  algos::LinkCost link() const;  // alpha = latency, beta = 1 / bandwidth, burst, CPU
};

struct ClusterGroup {
  std::string name;
  int parent = -1;  // index into groups[level + 1]; -1 for the outermost level
  int line = 0;
};

struct ClusterMap {
  std::string path;
  std::vector<ClusterLevel> levels;               // innermost (host) first
  // CPU a byte between two ranks of one host costs both ends together (the copies through
  // shared memory), in nanoseconds: <cluster local_cpu_ns_per_byte> (optional; 0: not priced).
  double localCpuNsPerByte = 0;
  std::vector<std::vector<ClusterGroup>> groups;  // groups[L] belong to levels[L]; groups[0]: hosts

  // The host a rank names itself by (hostname or NCCL_HOSTID): exact match first, else the
  // same short name (before the first dot) when only one host has it. -1 when absent.
  int findHost(std::string_view name) const;
  // The group at `level` that host `host` sits in.
  int groupOf(int host, int level) const;
  std::string describe() const;  // the whole map, one group per line (braid-topo)
};

// Errors are invalidUsage "path:line: what was found; what was expected".
Status parseClusterMap(const XmlSource& source, ClusterMap* out);
Status loadClusterMap(const std::string& path, ClusterMap* out);

}  // namespace braid::topo
