// BRAID_CLUSTER_FILE: the map's format, its located errors, and the algos::Topology built from
// it for a communicator's per-rank host names.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/log.h"

#include "topo/cluster_map.h"
#include "topo/comm_topology.h"

namespace braid::topo {
namespace {

std::string fixture(const std::string& name) {
  return std::string(BRAID_SOURCE_DIR) + "/tests/fixtures/topo/" + name;
}

ClusterMap load(const std::string& name) {
  ClusterMap map;
  Status s = loadClusterMap(fixture(name), &map);
  EXPECT_TRUE(s.ok()) << s.message();
  return map;
}

Status parse(const std::string& text) {
  ClusterMap map;
  return parseClusterMap(XmlSource::fromText("map.xml", text), &map);
}

TEST(ClusterMap, TwoRacks) {
  ClusterMap map = load("cluster_two_racks.xml");
  ASSERT_EQ(map.levels.size(), 2u);
  EXPECT_EQ(map.levels[0].name, "host");
  EXPECT_EQ(map.levels[1].name, "rack");
  EXPECT_DOUBLE_EQ(map.levels[1].latencyUs, 8.5);
  EXPECT_DOUBLE_EQ(map.levels[1].link().betaUsPerByte, 8e-3 / 25);  // 25 Gbit/s = 3125 B/us
  ASSERT_EQ(map.groups[0].size(), 8u);
  ASSERT_EQ(map.groups[1].size(), 2u);
  EXPECT_EQ(map.groups[1][1].name, "r1");
  EXPECT_EQ(map.groupOf(map.findHost("node06.example.org"), 1), 1);
  EXPECT_EQ(map.groupOf(map.findHost("node02.example.org"), 1), 0);
  EXPECT_EQ(map.groups[0][4].line, 12);
}

// A shaped level declares its token bucket, and a level may declare the CPU a byte costs; the
// others have neither. The map may declare one for a byte between two ranks of a host too,
// which the topology puts on its link inside a host (the caller's otherwise).
TEST(ClusterMap, LevelsCarryTheirBurstAndCpuPerByte) {
  ClusterMap map;
  ASSERT_TRUE(parseClusterMap(XmlSource::fromText("t", R"(<cluster local_cpu_ns_per_byte="0.3">
    <level name="host" bw_gbps="2" latency_us="0" cpu_ns_per_byte="1.5"/>
    <level name="rack" bw_gbps="0.667" latency_us="0" burst_kib="81.5"/>
    <rack name="r0"><host name="a"/></rack></cluster>)"),
                              &map)
                  .ok());
  EXPECT_EQ(map.levels[0].link().burstBytes, 0);
  EXPECT_DOUBLE_EQ(map.levels[1].link().burstBytes, 81.5 * 1024);
  EXPECT_DOUBLE_EQ(map.levels[0].link().cpuUsPerByte, 1.5e-3);
  EXPECT_EQ(map.levels[1].link().cpuUsPerByte, 0);
  EXPECT_DOUBLE_EQ(map.localCpuNsPerByte, 0.3);
  const algos::LinkCost shm{0.3, 1e-5};
  CommTopology t;
  ASSERT_TRUE(topologyFromClusterMap(map, {"a", "a"}, shm, &t).ok());
  EXPECT_DOUBLE_EQ(t.topology.link[0].alphaUs, 0.3);
  EXPECT_DOUBLE_EQ(t.topology.link[0].betaUsPerByte, 1e-5);
  EXPECT_DOUBLE_EQ(t.topology.link[0].cpuUsPerByte, 0.3e-3);
  EXPECT_NE(t.describe().find("0.3 ns of CPU per byte"), std::string::npos) << t.describe();
  map.localCpuNsPerByte = 0;  // not declared: the caller's link as it is
  ASSERT_TRUE(topologyFromClusterMap(map, {"a", "a"}, {0.3, 1e-5, 0, 2e-4}, &t).ok());
  EXPECT_DOUBLE_EQ(t.topology.link[0].cpuUsPerByte, 2e-4);
}

TEST(ClusterMap, HostsMatchByFullOrShortName) {
  ClusterMap map = load("cluster_two_racks.xml");
  EXPECT_EQ(map.findHost("node03.example.org"), 2);
  EXPECT_EQ(map.findHost("node03"), 2);
  EXPECT_EQ(map.findHost("node03.other.net"), 2);
  EXPECT_EQ(map.findHost("node09"), -1);
  ClusterMap twins;
  ASSERT_TRUE(parseClusterMap(XmlSource::fromText(
                                  "t", R"(<cluster><level name="host" bw_gbps="1" latency_us="1"/>
    <host name="a.x"/><host name="a.y"/></cluster>)"),
                              &twins)
                  .ok());
  EXPECT_EQ(twins.findHost("a.y"), 1);
  EXPECT_EQ(twins.findHost("a"), -1) << "two hosts share the short name: no guess";
}

TEST(ClusterMap, ThreeLevelsBuildTheTopology) {
  ClusterMap map = load("cluster_three_levels.xml");
  // Two ranks on a, one on b, c, d and e each; ranks listed out of map order.
  std::vector<std::string> hosts = {"d", "a", "a", "e", "b", "c"};
  CommTopology t;
  algos::LinkCost shm{0.3, 1e-5};
  ASSERT_TRUE(topologyFromClusterMap(map, hosts, shm, &t).ok());
  const algos::Topology& topo = t.topology;
  ASSERT_EQ(topo.levels(), 3);
  ASSERT_EQ(topo.link.size(), 4u);
  EXPECT_EQ(topo.groupOf[0], (std::vector<int>{0, 1, 1, 2, 3, 4}));  // hosts in order of first rank
  EXPECT_EQ(topo.groupOf[1], (std::vector<int>{0, 1, 1, 0, 1, 2}));  // w0, e0, e1
  EXPECT_EQ(topo.groupOf[2], (std::vector<int>{0, 1, 1, 0, 1, 1}));  // west, east
  EXPECT_EQ(t.groupNames[1], (std::vector<std::string>{"w0", "e0", "e1"}));
  EXPECT_DOUBLE_EQ(topo.link[0].alphaUs, 0.3);
  EXPECT_DOUBLE_EQ(topo.link[1].alphaUs, 1.5);  // hosts of one rack
  EXPECT_DOUBLE_EQ(topo.link[2].alphaUs, 4);    // racks of one pod
  EXPECT_DOUBLE_EQ(topo.link[3].alphaUs, 20);   // pods
  EXPECT_DOUBLE_EQ(topo.link[3].betaUsPerByte, 8e-3 / 12.5);
  EXPECT_EQ(topo.commonLevel(1, 2), 0);
  EXPECT_EQ(topo.commonLevel(1, 4), 1);
  EXPECT_EQ(topo.commonLevel(1, 5), 2);
  EXPECT_EQ(topo.commonLevel(0, 1), 3);
  std::string text = t.describe();
  EXPECT_NE(text.find("pod east: ranks 1-2,4-5"), std::string::npos) << text;
  EXPECT_NE(text.find("host a: ranks 1-2"), std::string::npos) << text;
  EXPECT_NE(text.find("between pods: 20 us, 12.5 Gbit/s"), std::string::npos) << text;
}

TEST(ClusterMap, RankOnAnUnknownHostFails) {
  ClusterMap map = load("cluster_two_racks.xml");
  CommTopology t;
  Status s = topologyFromClusterMap(map, {"node01", "node99"}, {}, &t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cluster_two_racks.xml: rank 1 runs on host \"node99\""),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("expected a <host name=\"node99\">"), std::string::npos)
      << s.message();
}

TEST(ClusterMap, FixtureErrorsNameLineAndExpectation) {
  ClusterMap map;
  Status s = loadClusterMap(fixture("cluster_bad_duplicate_host.xml"), &map);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cluster_bad_duplicate_host.xml:10: duplicate host \"h1\" (first at "
                             "line 6); expected each host once"),
            std::string::npos)
      << s.message();
  s = loadClusterMap(fixture("cluster_bad_missing_bw.xml"), &map);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cluster_bad_missing_bw.xml:3: <level> has no bw_gbps attribute; "
                             "expected bw_gbps=\"<number>\""),
            std::string::npos)
      << s.message();
}

TEST(ClusterMap, InlineErrorsNameLineAndExpectation) {
  const std::string levels =
      "<cluster>\n<level name=\"host\" bw_gbps=\"100\" latency_us=\"2\"/>\n"
      "<level name=\"rack\" bw_gbps=\"10\" latency_us=\"9\"/>\n";
  struct Case {
    std::string text;
    const char* expected;
  } cases[] = {
      {"<racks/>", "map.xml:1: root element <racks>; expected <cluster>"},
      {"<cluster>\n<rack/>\n</cluster>", "map.xml:1: <cluster> declares no <level>"},
      {"<cluster>\n<level name=\"rack\" bw_gbps=\"1\" latency_us=\"1\"/>\n</cluster>",
       "map.xml:2: first <level> is \"rack\"; expected name=\"host\""},
      {levels + "<host name=\"h0\"/>\n</cluster>",
       "map.xml:4: <host> directly inside <cluster>; expected <rack> there"},
      {levels + "<rack name=\"r\">\n<switch name=\"s\"/></rack>\n</cluster>",
       "map.xml:5: <switch> is not a declared level; expected <host> directly inside <rack>"},
      {levels + "<rack>\n<host name=\"h\"/></rack>\n</cluster>",
       "map.xml:4: <rack> has no name; expected name="},
      {levels + "<rack name=\"r\"><host name=\"h\" ip=\"10.0.0.1\"/></rack>\n</cluster>",
       "map.xml:4: <host> has an attribute ip; expected only name"},
      {levels + "<rack name=\"r\"><host name=\"h\"><gpu/></host></rack>\n</cluster>",
       "map.xml:4: <gpu> inside <host>; expected <host> to be empty"},
      {"<cluster>\n<level name=\"host\" bw_gbps=\"fast\" latency_us=\"2\"/>\n</cluster>",
       "map.xml:2: <level bw_gbps=\"fast\">: expected a positive number"},
      {"<cluster>\n<level name=\"host\" bw_gbps=\"0\" latency_us=\"2\"/>\n</cluster>",
       "map.xml:2: <level bw_gbps=\"0\">: expected a positive number"},
      {"<cluster>\n<level name=\"host\"\n       latency_us=\"2\"\n       "
       "bw_gbps=\"x\"/>\n</cluster>",
       "map.xml:4: <level bw_gbps=\"x\">: expected a positive number"},  // the attribute's own line
      {"<cluster>\n<level name=\"host\" bw_gbps=\"1\" latency_us=\"-1\"/>\n</cluster>",
       "map.xml:2: <level latency_us=\"-1\">: expected a non-negative number"},
      {"<cluster>\n<level name=\"host\" bw_gbps=\"1\"/>\n</cluster>",
       "map.xml:2: <level> has no latency_us attribute"},
      {"<cluster>\n<level name=\"host\" bw_gbps=\"1\" latency_us=\"1\" "
       "burst_kib=\"-4\"/>\n</cluster>",
       "map.xml:2: <level burst_kib=\"-4\">: expected a non-negative number"},
      {"<cluster>\n<level name=\"host\" bw_gbps=\"1\" latency_us=\"1\" "
       "cpu_ns_per_byte=\"-0.5\"/>\n</cluster>",
       "map.xml:2: <level cpu_ns_per_byte=\"-0.5\">: expected a non-negative number"},
      {"<cluster local_cpu_ns_per_byte=\"x\">\n<level name=\"host\" bw_gbps=\"1\" "
       "latency_us=\"1\"/>\n</cluster>",
       "map.xml:1: <cluster local_cpu_ns_per_byte=\"x\">: expected a non-negative number"},
      {levels + "<level name=\"rack\" bw_gbps=\"1\" latency_us=\"1\"/></cluster>",
       "map.xml:4: level \"rack\" declared twice"},
      {levels + "<rack name=\"r\"/><rack name=\"r\"/></cluster>",
       "map.xml:4: duplicate rack \"r\" (first at line 4)"},
      {levels + "<rack name=\"r\"/>\n</cluster>", "map.xml:1: <cluster> names no <host>"},
      {"<cluster version=\"2\"><level name=\"host\" bw_gbps=\"1\" latency_us=\"1\"/></cluster>",
       "map.xml:1: <cluster version=\"2\">; expected version=\"1\""},
      {levels + "<rack name=\"r\">\n<host name=\"h\"/>\n</rack", "map.xml:6: malformed XML"},
  };
  for (const Case& c : cases) {
    Status s = parse(c.text);
    EXPECT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << c.text << "\n -> " << s.message();
  }
}

TEST(ClusterMap, OneLevelMapHasHostsAtTheTop) {
  ClusterMap map;
  ASSERT_TRUE(parseClusterMap(XmlSource::fromText("flat", R"(<cluster version="1">
  <level name="host" bw_gbps="10" latency_us="5"/>
  <host name="x"/><host name="y"/>
</cluster>)"),
                              &map)
                  .ok());
  CommTopology t;
  ASSERT_TRUE(topologyFromClusterMap(map, {"x", "y", "x"}, {}, &t).ok());
  EXPECT_EQ(t.topology.levels(), 1);
  EXPECT_EQ(t.topology.groupOf[0], (std::vector<int>{0, 1, 0}));
  EXPECT_DOUBLE_EQ(t.topology.link[1].alphaUs, 5);
}

class ClusterEnv : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("BRAID_CLUSTER_FILE"); }
};

TEST_F(ClusterEnv, BuildUsesTheMapFromTheEnvironment) {
  setenv("BRAID_CLUSTER_FILE", fixture("cluster_two_racks.xml").c_str(), 1);
  CommTopologyInputs in;
  in.rankHosts = {"node01", "node05", "node02", "node06"};
  in.measure = [](int, int, LinkSample*) { return internalError("the map wins: no probe"); };
  CommTopology t;
  Status s = buildCommTopology(in, &t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.source, "cluster map " + fixture("cluster_two_racks.xml"));
  EXPECT_EQ(t.topology.groupOf[1], (std::vector<int>{0, 1, 0, 1}));
}

TEST_F(ClusterEnv, TheMapIsLoggedUnderGraph) {
  std::string logPath = ::testing::TempDir() + "braid_topo_graph.log";
  setenv("BRAID_CLUSTER_FILE", fixture("cluster_two_racks.xml").c_str(), 1);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "GRAPH", 1);
  setenv("NCCL_DEBUG_FILE", logPath.c_str(), 1);
  log::reset();
  CommTopologyInputs in;
  in.rankHosts = {"node01", "node05", "node02", "node06"};
  CommTopology t;
  Status s = buildCommTopology(in, &t);
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_SUBSYS");
  unsetenv("NCCL_DEBUG_FILE");
  log::reset();
  log::enabled(log::Level::Info, log::kGraph);  // re-reads the settings, closing the file
  ASSERT_TRUE(s.ok()) << s.message();
  std::ifstream in2(logPath);
  std::stringstream text;
  text << in2.rdbuf();
  std::remove(logPath.c_str());
  EXPECT_NE(text.str().find("NCCL INFO topology from cluster map"), std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("NCCL INFO   rack r1: ranks 1,3\n"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("NCCL INFO     host node05.example.org: ranks 1\n"), std::string::npos)
      << text.str();
}

TEST_F(ClusterEnv, ABrokenMapFailsTheBuild) {
  setenv("BRAID_CLUSTER_FILE", fixture("cluster_bad_missing_bw.xml").c_str(), 1);
  CommTopologyInputs in;
  in.rankHosts = {"h0"};
  CommTopology t;
  Status s = buildCommTopology(in, &t);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("BRAID_CLUSTER_FILE: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("cluster_bad_missing_bw.xml:3:"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace braid::topo
