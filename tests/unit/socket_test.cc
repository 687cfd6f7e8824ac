#include "base/net/socket.h"

#include <gtest/gtest.h>

#include <cstring>

namespace braid::net {
namespace {

SocketAddress addr(const char* text) {
  SocketAddress a;
  Status st = SocketAddress::parse(text, &a);
  EXPECT_TRUE(st.ok()) << text << ": " << st.message();
  return a;
}

TEST(SocketAddress, ParsesIpv4AndIpv6) {
  SocketAddress a = addr("10.1.2.3:4567");
  EXPECT_EQ(a.family(), AF_INET);
  EXPECT_EQ(a.port(), 4567);
  EXPECT_EQ(a.toString(), "10.1.2.3:4567");
  EXPECT_FALSE(a.isLoopback());

  SocketAddress b = addr("[::1]:80");
  EXPECT_EQ(b.family(), AF_INET6);
  EXPECT_EQ(b.port(), 80);
  EXPECT_EQ(b.toString(), "[::1]:80");
  EXPECT_TRUE(b.isLoopback());

  SocketAddress c = addr("[fd00::2]:0");
  EXPECT_EQ(c.toString(), "[fd00::2]:0");
  EXPECT_TRUE(addr("127.0.0.5:1").isLoopback());
}

TEST(SocketAddress, ResolvesHostnames) {
  SocketAddress a = addr("localhost:1234");
  EXPECT_TRUE(a.isLoopback());
  EXPECT_EQ(a.port(), 1234);
}

TEST(SocketAddress, RejectsMalformedText) {
  for (const char* bad : {"", "1.2.3.4", "1.2.3.4:", ":80", "1.2.3.4:65536", "1.2.3.4:12x",
                          "::1:80", "[::1]80", "[::1", "[]:80", "no.such.host.invalid:80"}) {
    SocketAddress a;
    EXPECT_FALSE(SocketAddress::parse(bad, &a).ok()) << bad;
  }
}

TEST(SocketAddress, WireRoundTrip) {
  for (const char* text : {"192.168.7.9:65535", "[2001:db8::17]:9", "127.0.0.1:0"}) {
    SocketAddress a = addr(text), b;
    uint8_t wire[SocketAddress::kWireBytes];
    a.toWire(wire);
    ASSERT_TRUE(SocketAddress::fromWire(wire, &b).ok());
    EXPECT_EQ(a, b);
    EXPECT_EQ(b.toString(), text);
  }
  uint8_t junk[SocketAddress::kWireBytes];
  std::memset(junk, 0xab, sizeof(junk));
  SocketAddress c;
  EXPECT_FALSE(SocketAddress::fromWire(junk, &c).ok());
  addr("1.2.3.4:5").toWire(junk);
  junk[12] = 1;  // padding after an IPv4 address must be zero
  EXPECT_FALSE(SocketAddress::fromWire(junk, &c).ok());
}

TEST(Ifname, PrefixExcludeAndExactRules) {
  EXPECT_TRUE(matchIfname("eth", "eth0"));
  EXPECT_TRUE(matchIfname("ib,eth", "eth1"));
  EXPECT_FALSE(matchIfname("ib,eth", "enp3s0"));
  EXPECT_FALSE(matchIfname("^docker,lo", "docker0"));
  EXPECT_FALSE(matchIfname("^docker,lo", "lo"));
  EXPECT_TRUE(matchIfname("^docker,lo", "eth0"));
  EXPECT_TRUE(matchIfname("=eth0", "eth0"));
  EXPECT_FALSE(matchIfname("=eth0", "eth01"));
  EXPECT_FALSE(matchIfname("^=eth0", "eth0"));
  EXPECT_TRUE(matchIfname("^=eth0", "eth01"));
  EXPECT_FALSE(matchIfname("", "eth0"));
}

std::vector<Interface> synthetic() {
  return {{"lo", addr("127.0.0.1:0")},       {"lo", addr("[::1]:0")},
          {"docker0", addr("172.17.0.1:0")}, {"eth0", addr("[fd00::2]:0")},
          {"eth0", addr("192.0.2.2:0")},     {"ib0", addr("10.0.0.2:0")},
          {"eth1", addr("198.51.100.7:0")}};
}

std::vector<std::string> names(const std::vector<Interface>& v) {
  std::vector<std::string> out;
  for (const Interface& i : v) out.push_back(i.name + "=" + i.address.toString());
  return out;
}

TEST(Ifname, AutomaticSelectionPrefersIbThenOrdinaryThenDockerThenLoopback) {
  auto all = synthetic();
  EXPECT_EQ(names(selectInterfaces(all, nullptr, AF_UNSPEC)),
            std::vector<std::string>{"ib0=10.0.0.2:0"});
  all.erase(all.begin() + 5);  // no ib0
  EXPECT_EQ(
      names(selectInterfaces(all, "", AF_UNSPEC)),
      (std::vector<std::string>{"eth0=192.0.2.2:0", "eth1=198.51.100.7:0", "eth0=[fd00::2]:0"}));
  EXPECT_EQ(names(selectInterfaces(all, nullptr, AF_INET6)),
            std::vector<std::string>{"eth0=[fd00::2]:0"});
  std::vector<Interface> onlyLocal = {all[0], all[1], all[2]};
  EXPECT_EQ(names(selectInterfaces(onlyLocal, nullptr, AF_UNSPEC)),
            std::vector<std::string>{"docker0=172.17.0.1:0"});
  onlyLocal.pop_back();
  EXPECT_EQ(names(selectInterfaces(onlyLocal, nullptr, AF_UNSPEC)),
            (std::vector<std::string>{"lo=127.0.0.1:0", "lo=[::1]:0"}));
  EXPECT_EQ(names(selectInterfaces(onlyLocal, nullptr, AF_INET6)),
            std::vector<std::string>{"lo=[::1]:0"});
}

TEST(Ifname, ExplicitListsAreObeyed) {
  auto all = synthetic();
  EXPECT_EQ(names(selectInterfaces(all, "lo", AF_INET)),
            std::vector<std::string>{"lo=127.0.0.1:0"});
  EXPECT_EQ(names(selectInterfaces(all, "^eth,ib,lo", AF_UNSPEC)),
            std::vector<std::string>{"docker0=172.17.0.1:0"});
  EXPECT_EQ(names(selectInterfaces(all, "=eth1", AF_UNSPEC)),
            std::vector<std::string>{"eth1=198.51.100.7:0"});
  EXPECT_TRUE(selectInterfaces(all, "=eth", AF_UNSPEC).empty());
  EXPECT_TRUE(selectInterfaces(all, "eth1", AF_INET6).empty());
}

TEST(Ifname, FamilyParsing) {
  EXPECT_EQ(parseFamily(nullptr), AF_UNSPEC);
  EXPECT_EQ(parseFamily("AF_INET"), AF_INET);
  EXPECT_EQ(parseFamily("AF_INET6"), AF_INET6);
  EXPECT_EQ(parseFamily("inet7"), AF_UNSPEC);
}

TEST(Ifname, MachineHasLoopback) {
  auto lo = selectInterfaces(listInterfaces(), "=lo", AF_INET);
  ASSERT_FALSE(lo.empty());
  EXPECT_TRUE(lo.front().address.isLoopback());
}

}  // namespace
}  // namespace braid::net
