// Small readers of /proc and /sys that both discovery paths share: hwloc finds the devices and
// their NUMA nodes, and these fill in the attributes NCCL's schema writes as the kernel shows
// them (link_speed "16.0 GT/s PCIe", a NIC's speed in Mbit/s).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "topo/host_topology.h"

namespace braid::topo::sysfs {

std::string firstLine(const std::string& path);                      // empty when unreadable
bool parseCpuList(const std::string& list, std::vector<int>* cpus);  // "0-3,8"

// <cpu> attributes after numaid and affinity: arch, vendor, familyid, modelid.
void addCpuIdentity(TopoNode* cpu);
// link_speed and link_width of a PCI device, when the kernel reports them.
void addPciLink(const std::string& busId, TopoNode* pci);
// The <net> of an interface ("eth0") or an InfiniBand HCA ("mlx5_0"): name, dev, speed, port.
void fillNet(const std::string& name, bool infiniband, int dev, TopoNode* net);
// "0000:00:03.0"-shaped path component.
bool isPciBusId(const std::string& text);
// The size in bytes of CPU 0's highest-level cache (/sys/devices/system/cpu/cpu0/cache), 0 when
// the kernel does not say.
size_t lastLevelCacheBytes();
// A cache size as sysfs writes it ("32768K", "1M", "512"), in bytes; 0 when unreadable.
size_t parseCacheSize(const std::string& text);

}  // namespace braid::topo::sysfs
