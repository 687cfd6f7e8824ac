// Pinning a thread near a NIC or NUMA node (progress threads). The CPU set comes from the host
// model, so a NCCL_TOPO_FILE steers it too; hwloc applies it when Braid is built with hwloc.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "base/log.h"
#include "topo/host_topology.h"

#ifdef BRAID_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace braid::topo {
namespace {

// CPUs the process may run on (the main thread's set, which taskset and cgroups shape).
std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(getpid(), sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

#ifdef BRAID_HAVE_HWLOC
// One topology for every pin; CPUs only (no I/O), which loads in a few milliseconds.
hwloc_topology_t pinTopology() {
  static hwloc_topology_t topo = [] {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0) return static_cast<hwloc_topology_t>(nullptr);
    if (hwloc_topology_load(t) != 0) {
      hwloc_topology_destroy(t);
      return static_cast<hwloc_topology_t>(nullptr);
    }
    return t;
  }();
  return topo;
}
#endif

Status bindThread(const std::vector<int>& cpus) {
#ifdef BRAID_HAVE_HWLOC
  if (hwloc_topology_t t = pinTopology()) {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int c : cpus) hwloc_bitmap_set(set, static_cast<unsigned>(c));
    int rc = hwloc_set_cpubind(t, set, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(set);
    if (rc == 0) return Status::Ok();
    return systemError("hwloc_set_cpubind to %zu CPUs failed", cpus.size());
  }
#endif
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); rc != 0)
    return systemError("pthread_setaffinity_np to %zu CPUs failed (error %d)", cpus.size(), rc);
  return Status::Ok();
}

Status pinTo(const NumaInfo& numa, const std::string& why) {
  std::vector<int> allowed = allowedCpus(), cpus;
  std::set_intersection(numa.cpus.begin(), numa.cpus.end(), allowed.begin(), allowed.end(),
                        std::back_inserter(cpus));
  if (cpus.empty()) {
    BRAID_INFO(kGraph, "%s: NUMA node %d has no CPU this process may use; thread left unpinned",
               why.c_str(), numa.id);
    return Status::Ok();
  }
  BRAID_TRY(bindThread(cpus));
  BRAID_INFO(kGraph, "%s: thread pinned to %zu CPUs of NUMA node %d", why.c_str(), cpus.size(),
             numa.id);
  return Status::Ok();
}

}  // namespace

Status pinThreadToNuma(const HostTopology& topo, int numa) {
  for (const NumaInfo& n : summarize(topo).numa)
    if (n.id == numa) return pinTo(n, strfmt("pin to NUMA node %d", numa));
  return invalidArgument("pin: no NUMA node %d in the host topology (from %s)", numa,
                         topo.source.c_str());
}

Status pinThreadNearNic(const HostTopology& topo, std::string_view nic) {
  HostSummary sum = summarize(topo);
  for (const NicInfo& n : sum.nics) {
    if (n.name != nic) continue;
    for (const NumaInfo& numa : sum.numa)
      if (numa.id == n.numa) return pinTo(numa, strfmt("pin near NIC %s", n.name.c_str()));
    // A NIC whose NUMA node is unknown: any node is as near as another, so leave the thread be.
    return Status::Ok();
  }
  std::string known;
  for (const NicInfo& n : sum.nics) known += (known.empty() ? "" : ", ") + n.name;
  return invalidArgument("pin: no NIC named %.*s in the host topology (from %s; it has: %s)",
                         static_cast<int>(nic.size()), nic.data(), topo.source.c_str(),
                         known.empty() ? "none" : known.c_str());
}

}  // namespace braid::topo
