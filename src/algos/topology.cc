#include "algos/topology.h"

#include <algorithm>

#include "base/strfmt.h"

namespace braid::algos {

int Topology::commonLevel(int a, int b) const {
  for (int l = 0; l < levels(); ++l)
    if (groupOf[l][a] == groupOf[l][b]) return l;
  return levels();
}

Topology Topology::flat(int nranks, LinkCost link) {
  Topology t;
  std::vector<int> hosts(nranks);
  for (int r = 0; r < nranks; ++r) hosts[r] = r;
  t.groupOf.push_back(std::move(hosts));
  t.link = {link, link};
  return t;
}

Topology Topology::hostsAndRacks(const std::vector<int>& hostOfRank,
                                 const std::vector<int>& rackOfHost, LinkCost intraHost,
                                 LinkCost intraRack, LinkCost interRack) {
  Topology t;
  t.groupOf.push_back(hostOfRank);
  if (rackOfHost.empty()) {
    t.link = {intraHost, intraRack};
    return t;
  }
  std::vector<int> rack(hostOfRank.size());
  for (size_t r = 0; r < hostOfRank.size(); ++r)
    rack[r] = rackOfHost[static_cast<size_t>(hostOfRank[r])];
  t.groupOf.push_back(std::move(rack));
  t.link = {intraHost, intraRack, interRack};
  return t;
}

int Topology::groups(int level) const {
  if (level < 0) return nranks();
  if (level >= levels()) return 1;
  int count = 0;
  for (int g : groupOf[static_cast<size_t>(level)]) count = std::max(count, g + 1);
  return count;
}

std::string Topology::describe() const {
  auto cost = [](const LinkCost& c) {
    return strfmt("link alpha %.2f us beta %.3g us/B", c.alphaUs, c.betaUsPerByte) +
           (c.cpuUsPerByte > 0 ? strfmt(" CPU %.3g ns/B", c.cpuUsPerByte * 1e3) : "");
  };
  std::string out;
  for (int l = 0; l < levels(); ++l) {
    out += strfmt("level %d (%s): %d groups, %s\n", l,
                  l == 0   ? "host"
                  : l == 1 ? "rack"
                           : "switch",
                  groups(l), cost(link[l]).c_str());
  }
  out += strfmt("top: %s\n", cost(link.back()).c_str());
  if (alphaScale != 1.0)
    out += strfmt("ranks outnumber cores: every alpha priced x%.2f (ranks per core)\n", alphaScale);
  return out;
}

}  // namespace braid::algos
