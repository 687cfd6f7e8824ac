// braid-topo: shows the topology Braid would use on this machine.
//   braid-topo                 the host topology (NCCL_TOPO_FILE when set, else detected)
//   braid-topo --xml           the same as NCCL_TOPO_FILE XML (what NCCL_TOPO_DUMP_FILE writes)
//   braid-topo --dump FILE     write that XML to FILE
//   braid-topo --detect        ignore NCCL_TOPO_FILE
//   braid-topo [MAP]           also the cluster map (MAP, else BRAID_CLUSTER_FILE), and with
//     --hosts h1,h2,...        the communicator topology of one rank per listed host
// Exit status 1 on any error, with the error's text (file:line: ...) on stderr.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algos/cost_model.h"
#include "base/env.h"
#include "topo/cluster_map.h"
#include "topo/comm_topology.h"
#include "topo/host_topology.h"
#include "topo/topo_xml.h"
#include "topo/variables.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace {

int usage() {
  std::fprintf(
      stderr,
      "usage: braid-topo [--xml] [--dump FILE] [--detect] [--hosts h1,h2,...] [CLUSTER_MAP]\n");
  return 2;
}

int fail(const braid::Status& s) {
  std::fprintf(stderr, "braid-topo: %s\n", s.message().c_str());
  return 1;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    if (comma > pos) out.push_back(list.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool xml = false, detect = false;
  std::string dumpPath, mapPath, hosts;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--xml")
      xml = true;
    else if (a == "--detect")
      detect = true;
    else if (a == "--dump" && i + 1 < argc)
      dumpPath = argv[++i];
    else if (a == "--hosts" && i + 1 < argc)
      hosts = argv[++i];
    else if (a == "-h" || a == "--help" || a.starts_with("-") || !mapPath.empty())
      return usage();
    else
      mapPath = a;
  }

  braid::topo::HostTopology host;
  braid::Status s = detect ? braid::topo::discoverHost(&host) : braid::topo::hostTopology(&host);
  if (!s.ok()) return fail(s);
  if (!dumpPath.empty()) {
    if (s = braid::topo::dumpTopoFile(host, dumpPath); !s.ok()) return fail(s);
  }
  std::fputs((xml ? braid::topo::topoXml(host) : braid::topo::describeHost(host)).c_str(), stdout);

  if (mapPath.empty()) {
    const char* env = braid::env::get(braid::env::kBraidClusterFile);
    mapPath = env ? env : "";
  }
  if (mapPath.empty()) {
    if (!hosts.empty()) std::fprintf(stderr, "braid-topo: --hosts needs a cluster map\n");
    return hosts.empty() ? 0 : 2;
  }
  braid::topo::ClusterMap map;
  if (s = braid::topo::loadClusterMap(mapPath, &map); !s.ok()) return fail(s);
  std::printf("\n%s", map.describe().c_str());
  if (!hosts.empty()) {
    braid::topo::CommTopology comm;
    s = braid::topo::topologyFromClusterMap(map, split(hosts), braid::transport::kShmLinkCost,
                                            &comm);
    if (!s.ok()) return fail(s);
    std::printf("\n%s", comm.describe().c_str());
  }
  return 0;
}
