#include "topo/variables.h"

namespace braid::env {

const Var kNcclHostid = {
    "NCCL_HOSTID", nullptr,
    "overrides the host identity (hostname + boot id) used to pick shared memory"};
const Var kNcclTopoDumpFile = {
    "NCCL_TOPO_DUMP_FILE", nullptr,
    "write the host topology Braid uses (detected or from NCCL_TOPO_FILE) to this file, in "
    "NCCL's topology XML schema"};
const Var kNcclTopoFile = {
    "NCCL_TOPO_FILE", nullptr,
    "host topology XML in NCCL's schema, used instead of detection; a file that is not XML is "
    "ignored with a warning, one that breaks the schema fails init (docs/topology.md)"};
const Var kBraidClusterFile = {
    "BRAID_CLUSTER_FILE", nullptr,
    "cluster map XML (levels, racks, hosts, link bandwidth and latency per level) that groups "
    "hosts for hierarchical algorithms; see docs/topology.md"};
const Var kBraidTopoProbe = {
    "BRAID_TOPO_PROBE", "1000",
    "without a cluster map, spend at most this many milliseconds measuring a few host pairs to "
    "group hosts into racks by bandwidth (a probe under load, docs/adaptation.md rule 8, up to as "
    "much again); 0: no probe (hosts only)"};

List topoVariables() {
  static const Var* const kList[] = {&kNcclHostid, &kNcclTopoDumpFile, &kNcclTopoFile,
                                     &kBraidClusterFile, &kBraidTopoProbe};
  return kList;
}

}  // namespace braid::env
