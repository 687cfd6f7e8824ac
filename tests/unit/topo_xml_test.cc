// NCCL_TOPO_FILE handling: fixtures in NCCL's schema load, dump and reload to the same model and
// the same bytes; bad files fail with the file, the line and what was expected, and the
// advisory/required rule decides whether Braid falls back to detection.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "topo/host_topology.h"
#include "topo/topo_xml.h"

namespace braid::topo {
namespace {

std::string fixture(const std::string& name) {
  return std::string(BRAID_SOURCE_DIR) + "/tests/fixtures/topo/" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

HostTopology load(const std::string& name) {
  HostTopology t;
  bool advisory = false;
  Status s = loadTopoFile(fixture(name), &t, &advisory);
  EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

class GoodFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(GoodFixture, DumpLoadDumpIsIdentical) {
  HostTopology first = load(GetParam());
  std::string dump1 = topoXml(first);
  HostTopology second;
  bool advisory = false;
  ASSERT_TRUE(parseTopoXml(XmlSource::fromText("dump1", dump1), &second, &advisory).ok());
  EXPECT_EQ(first.system, second.system);
  EXPECT_EQ(topoXml(second), dump1);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoodFixture,
                         ::testing::Values("two_socket.xml", "minimal.xml", "unknown_parts.xml"));

TEST(TopoXml, CanonicalFileDumpsToItsOwnBytes) {
  // two_socket.xml is written the way Braid dumps: reading it and writing it changes nothing.
  EXPECT_EQ(topoXml(load("two_socket.xml")), slurp(fixture("two_socket.xml")));
}

TEST(TopoXml, SummaryFindsNumaNicsAndGpus) {
  HostSummary sum = summarize(load("two_socket.xml"));
  ASSERT_EQ(sum.numa.size(), 2u);
  EXPECT_EQ(sum.numa[0].cpus.size(), 16u);
  EXPECT_EQ(sum.numa[1].cpus.front(), 16);
  EXPECT_EQ(sum.numa[1].cpus.back(), 63);
  EXPECT_EQ(sum.cpuCount(), 64);
  ASSERT_EQ(sum.nics.size(), 2u);
  EXPECT_EQ(sum.nics[0].name, "mlx5_0");
  EXPECT_EQ(sum.nics[0].numa, 0);
  EXPECT_EQ(sum.nics[0].busId, "0000:17:00.0");
  EXPECT_EQ(sum.nics[0].speedMbps, 400000);
  EXPECT_EQ(sum.nics[1].name, "eth0");
  EXPECT_EQ(sum.nics[1].numa, 1);
  EXPECT_EQ(sum.nics[1].busId, "");
  ASSERT_EQ(sum.gpus.size(), 2u);
  EXPECT_EQ(sum.gpus[1].dev, 1);
  EXPECT_EQ(sum.gpus[1].busId, "0000:9a:00.0");
  EXPECT_EQ(sum.pciDevices, 4);
}

TEST(TopoXml, UnknownElementsAndAttributesAreKept) {
  std::string dump = topoXml(load("unknown_parts.xml"));
  EXPECT_NE(dump.find("<nvswitch id=\"3\" lanes=\"18\""), std::string::npos) << dump;
  EXPECT_NE(dump.find("fabric=\"ethernet\""), std::string::npos) << dump;
  EXPECT_NE(dump.find("origin=\"a later NCCL\""), std::string::npos) << dump;
}

struct BadCase {
  const char* file;
  bool advisory;
  const char* where;     // "file:line"
  const char* expected;  // part of the message
};

class BadFixture : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadFixture, FailsWithLineAndExpectation) {
  const BadCase& c = GetParam();
  HostTopology t;
  bool advisory = !c.advisory;
  Status s = loadTopoFile(fixture(c.file), &t, &advisory);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(advisory, c.advisory);
  EXPECT_NE(s.message().find(c.where), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, BadFixture,
    ::testing::Values(BadCase{"bad_malformed.xml", true,
                              "bad_malformed.xml:4:", "expected a well-formed XML document"},
                      BadCase{"bad_gpu_outside_pci.xml", false, "bad_gpu_outside_pci.xml:5:",
                              "<gpu> inside <cpu>; expected it inside <pci>"},
                      BadCase{"bad_speed.xml", false,
                              "bad_speed.xml:6:", "<net speed=\"fast\">: expected an integer"},
                      BadCase{"bad_root.xml", false,
                              "bad_root.xml:1:", "root element <topology>; expected <system>"},
                      BadCase{"no_such_file.xml", true, "no_such_file.xml", "cannot open"}));

TEST(TopoXml, BadValuesOfEachKindAreRefused) {
  struct Case {
    const char* xml;
    const char* expected;
  } cases[] = {
      {"<system version=\"one\"/>", "<system version=\"one\">: expected an integer"},
      {"<system>\n<cpu affinity=\"0000fffg\"/></system>",
       ":2: <cpu affinity=\"0000fffg\">: expected a CPU mask"},
      {"<system><cpu><pci class=\"0x03\"/></cpu></system>", "<pci> has no busid attribute"},
      {"<system><cpu><pci busid=\"0000:01:00.0\" class=\"vga\"/></cpu></system>",
       "expected a hexadecimal number"},
      {"<system><cpu><pci busid=\"b\"><gpu><c2c bw=\"x\"/></gpu></pci></cpu></system>",
       "<c2c bw=\"x\">: expected a number"},
      {"<system><nic/></system>", "<nic> inside <system>; expected it inside <cpu> or <pci>"},
      {"<system><cpu>words</cpu></system>", "text inside <cpu>; expected only elements"},
      {"<cpu/>", "<cpu> at the top of the document; expected it inside <system>"},
  };
  for (const Case& c : cases) {
    HostTopology t;
    bool advisory = true;
    Status s = parseTopoXml(XmlSource::fromText("inline.xml", c.xml), &t, &advisory);
    EXPECT_FALSE(s.ok()) << c.xml;
    EXPECT_FALSE(advisory) << c.xml;
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << c.xml << " -> " << s.message();
    EXPECT_EQ(s.message().rfind("inline.xml:", 0), 0u) << s.message();
  }
}

TEST(TopoXml, SpecialCharactersSurviveTheRoundTrip) {
  HostTopology t;
  bool advisory = false;
  ASSERT_TRUE(
      parseTopoXml(XmlSource::fromText(
                       "x", "<system><cpu vendor=\"A&amp;B &quot;q&quot; &lt;t&gt;\"/></system>"),
                   &t, &advisory)
          .ok());
  EXPECT_EQ(t.system.children.at(0).get("vendor"), "A&B \"q\" <t>");
  HostTopology again;
  ASSERT_TRUE(parseTopoXml(XmlSource::fromText("y", topoXml(t)), &again, &advisory).ok());
  EXPECT_EQ(again.system, t.system);
}

TEST(TopoXml, CpuMaskRoundTrips) {
  std::vector<int> cpus;
  ASSERT_TRUE(parseCpuMask("ffffffff,0000ffff", &cpus));
  EXPECT_EQ(cpus.size(), 48u);
  EXPECT_EQ(cpuMask(cpus), "ffffffff,0000ffff");
  EXPECT_EQ(cpuMask({0, 1}), "00000003");
  EXPECT_EQ(cpuMask({33}), "00000002,00000000");
  EXPECT_FALSE(parseCpuMask("", &cpus));
  EXPECT_FALSE(parseCpuMask("123456789", &cpus));
  EXPECT_FALSE(parseCpuMask("ff,,ff", &cpus));
}

// NCCL_TOPO_FILE through hostTopology(): advisory failures fall back to detection, required ones
// fail; NCCL_TOPO_DUMP_FILE receives what was used.
class TopoEnv : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("NCCL_TOPO_FILE");
    unsetenv("NCCL_TOPO_DUMP_FILE");
  }
};

TEST_F(TopoEnv, FileIsUsedAndDumped) {
  std::string dump = ::testing::TempDir() + "braid_topo_dump.xml";
  setenv("NCCL_TOPO_FILE", fixture("two_socket.xml").c_str(), 1);
  setenv("NCCL_TOPO_DUMP_FILE", dump.c_str(), 1);
  HostTopology t;
  ASSERT_TRUE(hostTopology(&t).ok());
  EXPECT_EQ(t.source, fixture("two_socket.xml"));
  EXPECT_EQ(slurp(dump), slurp(fixture("two_socket.xml")));
  std::remove(dump.c_str());
}

TEST_F(TopoEnv, MalformedFileFallsBackToDetection) {
  setenv("NCCL_TOPO_FILE", fixture("bad_malformed.xml").c_str(), 1);
  HostTopology t;
  Status s = hostTopology(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NE(t.source, fixture("bad_malformed.xml"));
  EXPECT_FALSE(summarize(t).numa.empty());
}

TEST_F(TopoEnv, SchemaViolationFails) {
  setenv("NCCL_TOPO_FILE", fixture("bad_gpu_outside_pci.xml").c_str(), 1);
  HostTopology t;
  Status s = hostTopology(&t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("NCCL_TOPO_FILE: "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(":5:"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace braid::topo
