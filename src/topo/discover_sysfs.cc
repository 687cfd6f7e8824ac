// Host discovery from /sys, for builds without hwloc (and the attributes hwloc leaves out). It
// finds what the kernel exports plainly: NUMA nodes and their CPUs, NICs and InfiniBand HCAs
// with the PCI device they hang off, and NVIDIA GPUs by PCI class.
#include <algorithm>
#include <filesystem>

#include "topo/host_topology.h"
#include "topo/sysfs.h"
#include "topo/xml_source.h"

namespace braid::topo {
namespace {

namespace fs = std::filesystem;

TopoNode& cpuFor(HostTopology& topo, int numa) {
  for (TopoNode& c : topo.system.children)
    if (c.tag == "cpu" && c.getInt("numaid", -1) == numa) return c;
  return topo.system.children.front();  // numa_node -1: the kernel does not know; any will do
}

TopoNode& pciFor(TopoNode& cpu, const std::string& busId) {
  for (TopoNode& p : cpu.children)
    if (p.tag == "pci" && p.get("busid") == busId) return p;
  TopoNode& pci = cpu.add("pci");
  pci.set("busid", busId);
  std::string dir = "/sys/bus/pci/devices/" + busId + "/";
  for (const char* a : {"class", "vendor", "device", "subsystem_vendor", "subsystem_device"}) {
    std::string v = sysfs::firstLine(dir + a);
    if (isHex(v)) pci.set(a, v);
  }
  sysfs::addPciLink(busId, &pci);
  return pci;
}

// The PCI device a class device (/sys/class/net/eth0) sits on: the last bus id on its path
// (virtio NICs hang one level below theirs). Empty for virtual devices.
std::string pciOf(const fs::path& classDevice) {
  std::error_code ec;
  fs::path real = fs::canonical(classDevice / "device", ec);
  if (ec) return "";
  std::string busId;
  for (const fs::path& part : real)
    if (sysfs::isPciBusId(part.string())) busId = part.string();
  return busId;
}

int numaOf(const std::string& busId) {
  long long n;
  return parseInt(sysfs::firstLine("/sys/bus/pci/devices/" + busId + "/numa_node"), &n)
             ? static_cast<int>(n)
             : -1;
}

std::vector<fs::path> sortedEntries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void addNics(HostTopology& topo, const fs::path& classDir, bool infiniband) {
  int dev = 0;
  for (const fs::path& p : sortedEntries(classDir)) {
    std::string busId = pciOf(p);
    if (busId.empty()) continue;
    TopoNode& pci = pciFor(cpuFor(topo, numaOf(busId)), busId);
    sysfs::fillNet(p.filename().string(), infiniband, dev++, &pci.add("nic").add("net"));
  }
}

}  // namespace

Status discoverHostSysfs(HostTopology* out) {
  HostTopology topo;
  topo.source = "sysfs";
  std::vector<std::pair<int, std::vector<int>>> nodes;
  for (const fs::path& p : sortedEntries("/sys/devices/system/node")) {
    std::string name = p.filename().string();
    long long id;
    std::vector<int> cpus;
    if (!name.starts_with("node") || !parseInt(name.substr(4), &id)) continue;
    if (sysfs::parseCpuList(sysfs::firstLine((p / "cpulist").string()), &cpus) && !cpus.empty())
      nodes.emplace_back(static_cast<int>(id), std::move(cpus));
  }
  if (nodes.empty()) {
    std::vector<int> cpus;
    if (!sysfs::parseCpuList(sysfs::firstLine("/sys/devices/system/cpu/online"), &cpus) ||
        cpus.empty())
      cpus = {0};
    nodes.emplace_back(0, std::move(cpus));
  }
  std::sort(nodes.begin(), nodes.end());
  for (const auto& [id, cpus] : nodes) {
    TopoNode& cpu = topo.system.add("cpu");
    cpu.set("numaid", std::to_string(id));
    cpu.set("affinity", cpuMask(cpus));
    sysfs::addCpuIdentity(&cpu);
  }
  addNics(topo, "/sys/class/net", false);
  addNics(topo, "/sys/class/infiniband", true);
  int gpu = 0;
  for (const fs::path& p : sortedEntries("/sys/bus/pci/devices")) {
    std::string cls = sysfs::firstLine((p / "class").string());
    bool display = cls.starts_with("0x0300") || cls.starts_with("0x0302");
    if (!display || sysfs::firstLine((p / "vendor").string()) != "0x10de") continue;
    std::string busId = p.filename().string();
    pciFor(cpuFor(topo, numaOf(busId)), busId).add("gpu").set("dev", std::to_string(gpu++));
  }
  *out = std::move(topo);
  return Status::Ok();
}

}  // namespace braid::topo
