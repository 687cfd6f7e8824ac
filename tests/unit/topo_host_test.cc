// Host discovery on the machine running the tests (hwloc when built with it, /sys otherwise),
// and pinning a thread near a NUMA node or NIC. The VM may have one NUMA node and two cores:
// the checks are that discovery finds that much and that pinning succeeds and lands inside the
// node it names.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <thread>

#include "topo/host_topology.h"
#include "topo/sysfs.h"
#include "topo/topo_xml.h"

namespace braid::topo {
namespace {

std::vector<int> threadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

void expectSane(const HostTopology& t) {
  HostSummary sum = summarize(t);
  ASSERT_GE(sum.numa.size(), 1u) << topoXml(t);
  EXPECT_GE(sum.cpuCount(), 1) << topoXml(t);
  for (const NumaInfo& n : sum.numa) {
    EXPECT_GE(n.id, 0);
    EXPECT_FALSE(n.cpus.empty()) << "NUMA node " << n.id;
  }
  // Every CPU this thread may run on belongs to some node.
  for (int c : threadCpus()) {
    bool found = false;
    for (const NumaInfo& n : sum.numa) found |= std::count(n.cpus.begin(), n.cpus.end(), c) > 0;
    EXPECT_TRUE(found) << "CPU " << c << " is in no NUMA node";
  }
}

// Cache sizes as the kernel writes them under /sys/devices/system/cpu/cpu*/cache/index*/size.
TEST(TopoHost, CacheSizesParse) {
  EXPECT_EQ(sysfs::parseCacheSize("32768K"), size_t{32} << 20);
  EXPECT_EQ(sysfs::parseCacheSize("1M"), size_t{1} << 20);
  EXPECT_EQ(sysfs::parseCacheSize("512"), 512u);
  EXPECT_EQ(sysfs::parseCacheSize(""), 0u);
  EXPECT_EQ(sysfs::parseCacheSize("K"), 0u);
  EXPECT_EQ(sysfs::parseCacheSize("12X"), 0u);
  EXPECT_EQ(sysfs::parseCacheSize("99999999999999999999K"), 0u);
  EXPECT_EQ(sysfs::parseCacheSize("99999999999999G"), 0u);  // past size_t once shifted
  // On a machine that reports its caches, the last level is at least as large as any other.
  const size_t llc = sysfs::lastLevelCacheBytes();
  const size_t l1 =
      sysfs::parseCacheSize(sysfs::firstLine("/sys/devices/system/cpu/cpu0/cache/index0/size"));
  if (llc == 0 || l1 == 0) GTEST_SKIP() << "this kernel reports no cache sizes";
  EXPECT_GE(llc, l1);
}

TEST(TopoHost, DiscoveryFindsCpusAndNumaNodes) {
  HostTopology t;
  ASSERT_TRUE(discoverHost(&t).ok());
#ifdef BRAID_HAVE_HWLOC
  EXPECT_EQ(t.source, "hwloc");
#endif
  expectSane(t);
}

TEST(TopoHost, SysfsDiscoveryFindsCpusAndNumaNodes) {
  HostTopology t;
  ASSERT_TRUE(discoverHostSysfs(&t).ok());
  EXPECT_EQ(t.source, "sysfs");
  expectSane(t);
}

TEST(TopoHost, BothDiscoveriesAgreeOnNumaNodes) {
  HostTopology a, b;
  ASSERT_TRUE(discoverHost(&a).ok());
  ASSERT_TRUE(discoverHostSysfs(&b).ok());
  HostSummary sa = summarize(a), sb = summarize(b);
  ASSERT_EQ(sa.numa.size(), sb.numa.size());
  for (size_t i = 0; i < sa.numa.size(); ++i) {
    EXPECT_EQ(sa.numa[i].id, sb.numa[i].id);
    EXPECT_EQ(sa.numa[i].cpus, sb.numa[i].cpus);
  }
  std::vector<std::string> na, nb;
  for (const NicInfo& n : sa.nics) na.push_back(n.name);
  for (const NicInfo& n : sb.nics) nb.push_back(n.name);
  std::sort(na.begin(), na.end());
  std::sort(nb.begin(), nb.end());
  EXPECT_EQ(na, nb);
}

TEST(TopoHost, DetectedTopologyRoundTrips) {
  HostTopology t, again;
  ASSERT_TRUE(discoverHost(&t).ok());
  bool advisory = false;
  Status s = parseTopoXml(XmlSource::fromText("detected", topoXml(t)), &again, &advisory);
  ASSERT_TRUE(s.ok()) << s.message() << "\n" << topoXml(t);
  EXPECT_EQ(again.system, t.system);
}

// Runs `body` on a fresh thread so the test's own affinity is untouched.
template <typename F>
void onThread(F body) {
  std::thread(body).join();
}

TEST(TopoHost, PinToEachNumaNodeStaysInsideIt) {
  HostTopology t;
  ASSERT_TRUE(discoverHost(&t).ok());
  for (const NumaInfo& n : summarize(t).numa) {
    onThread([&] {
      std::vector<int> before = threadCpus();
      Status s = pinThreadToNuma(t, n.id);
      ASSERT_TRUE(s.ok()) << s.message();
      std::vector<int> after = threadCpus();
      ASSERT_FALSE(after.empty());
      for (int c : after) EXPECT_TRUE(std::count(n.cpus.begin(), n.cpus.end(), c)) << "CPU " << c;
      for (int c : after) EXPECT_TRUE(std::count(before.begin(), before.end(), c)) << "CPU " << c;
    });
  }
}

TEST(TopoHost, PinNearEachDetectedNic) {
  HostTopology t;
  ASSERT_TRUE(discoverHost(&t).ok());
  for (const NicInfo& nic : summarize(t).nics)
    onThread([&] {
      Status s = pinThreadNearNic(t, nic.name);
      EXPECT_TRUE(s.ok()) << nic.name << ": " << s.message();
    });
}

TEST(TopoHost, PinNearNicOfAFileUsesItsNumaNode) {
  // A described machine whose node 0 holds CPU 0, which every machine has: pinning lands there.
  HostTopology t;
  bool advisory = false;
  ASSERT_TRUE(parseTopoXml(XmlSource::fromText("m", R"(<system version="1">
  <cpu numaid="0" affinity="00000001"><nic><net name="ib7" dev="0"/></nic></cpu>
  <cpu numaid="1" affinity="fffffffe"/>
</system>)"),
                           &t, &advisory)
                  .ok());
  onThread([&] {
    std::vector<int> before = threadCpus();
    ASSERT_TRUE(pinThreadNearNic(t, "ib7").ok());
    if (std::count(before.begin(), before.end(), 0)) {
      EXPECT_EQ(threadCpus(), std::vector<int>{0});
    } else {
      EXPECT_EQ(threadCpus(), before) << "CPU 0 not allowed: the thread stays as it was";
    }
  });
}

TEST(TopoHost, PinRefusesWhatTheTopologyDoesNotHave) {
  HostTopology t;
  ASSERT_TRUE(discoverHost(&t).ok());
  Status s = pinThreadNearNic(t, "no-such-nic0");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no-such-nic0"), std::string::npos) << s.message();
  s = pinThreadToNuma(t, 4242);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("4242"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace braid::topo
