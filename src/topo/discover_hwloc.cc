// Host discovery with hwloc: NUMA nodes and their CPUs, the CPU's identity, and the PCI
// devices that matter to a collective library (NICs, InfiniBand HCAs, NVIDIA GPUs), each under
// the NUMA node hwloc places it near. Without hwloc the library reads /sys instead.
#include <unistd.h>

#include "base/log.h"
#include "topo/host_topology.h"
#include "topo/sysfs.h"

#ifdef BRAID_HAVE_HWLOC
#include <hwloc.h>

namespace braid::topo {
namespace {

std::vector<int> cpusOf(hwloc_const_bitmap_t set) {
  std::vector<int> cpus;
  for (int c = hwloc_bitmap_first(set); c != -1; c = hwloc_bitmap_next(set, c)) cpus.push_back(c);
  return cpus;
}

std::string info(hwloc_obj_t obj, const char* name) {
  const char* v = obj ? hwloc_obj_get_info_by_name(obj, name) : nullptr;
  return v ? v : "";
}

class Discovery {
 public:
  explicit Discovery(hwloc_topology_t t) : t_(t) {}

  void run(HostTopology* topo) {
    topo_ = topo;
    addCpus();
    for (hwloc_obj_t os = nullptr; (os = hwloc_get_next_osdev(t_, os));) {
      auto type = os->attr->osdev.type;
      if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
      bool ib = type == HWLOC_OBJ_OSDEV_OPENFABRICS;
      int& dev = ib ? ibDevs_ : netDevs_;
      // NICs without a PCI device (bonds, bridges) have no place near a CPU to report.
      if (!os->parent || os->parent->type != HWLOC_OBJ_PCI_DEVICE) continue;
      sysfs::fillNet(os->name, ib, dev++, &pciFor(os->parent).add("nic").add("net"));
    }
    int gpus = 0;
    for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_pcidev(t_, p));) {
      unsigned cls = p->attr->pcidev.class_id;
      if (p->attr->pcidev.vendor_id == 0x10de && (cls == 0x0300 || cls == 0x0302))
        pciFor(p).add("gpu").set("dev", std::to_string(gpus++));
    }
  }

 private:
  void addCpus() {
    hwloc_obj_t firstPackage = hwloc_get_obj_by_type(t_, HWLOC_OBJ_PACKAGE, 0);
    hwloc_obj_t root = hwloc_get_root_obj(t_);
    TopoNode fallback;  // /proc for whatever hwloc does not say
    sysfs::addCpuIdentity(&fallback);
    const std::string arch = info(root, "Architecture");
    int n = hwloc_get_nbobjs_by_type(t_, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t node = hwloc_get_obj_by_type(t_, HWLOC_OBJ_NUMANODE, i);
      if (!node->cpuset || hwloc_bitmap_iszero(node->cpuset)) continue;  // memory-only nodes
      TopoNode& cpu = topo_->system.add("cpu");
      cpu.set("numaid", std::to_string(node->os_index));
      cpu.set("affinity", cpuMask(cpusOf(node->cpuset)));
      cpu.set("arch", arch.empty() ? fallback.get("arch") : arch);
      // The package the node belongs to (sockets of one machine may in principle differ).
      hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t_, HWLOC_OBJ_PACKAGE, node);
      if (!pkg) pkg = firstPackage;
      for (auto [attr, key] : {std::pair{"vendor", "CPUVendor"},
                               {"familyid", "CPUFamilyNumber"},
                               {"modelid", "CPUModelNumber"}}) {
        std::string v = info(pkg, key);
        if (v.empty()) v = fallback.get(attr);
        if (!v.empty()) cpu.set(attr, v);
      }
    }
    if (topo_->system.children.empty()) {  // no NUMA information at all: one node of every CPU
      TopoNode& cpu = topo_->system.add("cpu");
      cpu.set("numaid", "0");
      cpu.set("affinity", cpuMask(cpusOf(hwloc_topology_get_topology_cpuset(t_))));
      sysfs::addCpuIdentity(&cpu);
    }
  }

  TopoNode& cpuNear(hwloc_obj_t pci) {
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t_, pci);
    int numa = anc && anc->nodeset ? hwloc_bitmap_first(anc->nodeset) : -1;
    for (TopoNode& c : topo_->system.children)
      if (c.tag == "cpu" && c.getInt("numaid", -1) == numa) return c;
    return topo_->system.children.front();
  }

  TopoNode& pciFor(hwloc_obj_t pci) {
    const auto& a = pci->attr->pcidev;
    std::string busId = strfmt("%04x:%02x:%02x.%01x", a.domain, a.bus, a.dev, a.func);
    TopoNode& cpu = cpuNear(pci);
    for (TopoNode& p : cpu.children)
      if (p.tag == "pci" && p.get("busid") == busId) return p;
    TopoNode& node = cpu.add("pci");
    node.set("busid", busId);
    // The kernel's class carries the programming interface hwloc drops ("0x030200").
    std::string cls = sysfs::firstLine("/sys/bus/pci/devices/" + busId + "/class");
    node.set("class", cls.empty() ? strfmt("0x%04x00", a.class_id) : cls);
    node.set("vendor", strfmt("0x%04x", a.vendor_id));
    node.set("device", strfmt("0x%04x", a.device_id));
    node.set("subsystem_vendor", strfmt("0x%04x", a.subvendor_id));
    node.set("subsystem_device", strfmt("0x%04x", a.subdevice_id));
    sysfs::addPciLink(busId, &node);
    return node;
  }

  hwloc_topology_t t_;
  HostTopology* topo_ = nullptr;
  int netDevs_ = 0;
  int ibDevs_ = 0;
};

}  // namespace

Status discoverHost(HostTopology* out) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0) return systemError("hwloc_topology_init failed");
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // The machine as it is, not as this process's cgroup sees it (like the /sys path, and like a
  // topology file); pinning intersects with the allowed CPUs itself.
  hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  // hwloc's GPU plugins would initialise CUDA, NVML, OpenCL or ROCm inside the application (a
  // context on every GPU, seconds of start-up, leaks in ICD loaders); Braid finds GPUs by PCI
  // class. The libpciaccess plugin leaks on every load; hwloc's Linux backend reads the same PCI
  // devices from /sys.
  for (const char* plugin : {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl", "pci"})
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, plugin);
  if (hwloc_topology_load(t) != 0) {
    hwloc_topology_destroy(t);
    BRAID_INFO(kGraph, "hwloc could not load the topology; reading /sys instead");
    return discoverHostSysfs(out);
  }
  HostTopology topo;
  topo.source = "hwloc";
  Discovery(t).run(&topo);
  hwloc_topology_destroy(t);
  *out = std::move(topo);
  return Status::Ok();
}

}  // namespace braid::topo

#else  // !BRAID_HAVE_HWLOC

namespace braid::topo {
Status discoverHost(HostTopology* out) { return discoverHostSysfs(out); }
}  // namespace braid::topo

#endif
