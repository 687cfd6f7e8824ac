// The host topology: one machine's CPUs (one <cpu> per NUMA node), PCI devices, NICs and GPUs,
// held as the element tree of NCCL's topology XML (shared/reference/nccl-abi.md). Detection
// (hwloc, or /sys without it) builds the same tree NCCL_TOPO_FILE loads, so one dump format and
// one set of queries serve both, and a file names nothing the model cannot hold: elements and
// attributes Braid does not know are kept and written back unchanged.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace braid::topo {

struct XmlAttr {
  std::string name;
  std::string value;
  bool operator==(const XmlAttr&) const = default;
};

struct TopoNode {
  std::string tag;
  std::vector<XmlAttr> attrs;  // in file order, so a dump reproduces a load
  std::vector<TopoNode> children;

  const std::string* find(std::string_view name) const;
  std::string get(std::string_view name, std::string_view fallback = "") const;
  long long getInt(std::string_view name, long long fallback) const;
  void set(std::string_view name, std::string value);  // replaces, or appends in order
  TopoNode& add(std::string tag);
  bool operator==(const TopoNode&) const = default;
};

struct HostTopology {
  TopoNode system{"system", {{"version", "1"}}, {}};
  std::string source;  // "hwloc", "sysfs" or the NCCL_TOPO_FILE path: for logs
};

// What consumers ask of the tree, flattened.
struct NumaInfo {
  int id = -1;
  std::vector<int> cpus;  // from the <cpu affinity> mask
};
struct NicInfo {
  std::string name;   // <net name>: interface ("eth0") or HCA ("mlx5_0")
  int numa = -1;      // enclosing <cpu numaid>
  std::string busId;  // enclosing <pci busid>, empty for a NIC outside PCI
  long long speedMbps = 0;
};
struct GpuInfo {
  int dev = -1;
  int numa = -1;
  std::string busId;
};
struct HostSummary {
  std::vector<NumaInfo> numa;
  std::vector<NicInfo> nics;
  std::vector<GpuInfo> gpus;
  int pciDevices = 0;
  int cpuCount() const;
};
HostSummary summarize(const HostTopology& topo);

// A summary line, then the tree one element per line ("cpu numaid=0 affinity=..."), for
// braid-topo and the GRAPH log.
std::string describeHost(const HostTopology& topo);

// NCCL's affinity mask: 32-bit hex words, most significant first, comma separated
// ("ffffffff,0000ffff"). Returns false on anything else.
std::string cpuMask(const std::vector<int>& cpus);
bool parseCpuMask(std::string_view mask, std::vector<int>* cpus);

// Detection: hwloc when built with it, else /sys. Never fails for lack of information: a
// machine that hides its NUMA nodes gets one <cpu> with every online CPU.
Status discoverHost(HostTopology* out);
Status discoverHostSysfs(HostTopology* out);

// The topology Braid uses: NCCL_TOPO_FILE when set and usable (docs/topology.md says when a bad
// file is skipped and when it fails), else detection; written to NCCL_TOPO_DUMP_FILE when set.
Status hostTopology(HostTopology* out);

// Pins the calling thread to the CPUs of the NUMA node nearest the NIC named `nic` (or of NUMA
// node `numa`), intersected with the CPUs this process may use; leaves the thread as it is when
// that set is empty (a file describing another machine). For progress threads.
Status pinThreadNearNic(const HostTopology& topo, std::string_view nic);
Status pinThreadToNuma(const HostTopology& topo, int numa);

}  // namespace braid::topo
