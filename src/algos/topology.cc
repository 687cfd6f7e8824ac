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
  std::string out;
  for (int l = 0; l < levels(); ++l) {
    out += strfmt("level %d (%s): %d groups, link alpha %.2f us beta %.3g us/B\n", l,
                  l == 0   ? "host"
                  : l == 1 ? "rack"
                           : "switch",
                  groups(l), link[l].alphaUs, link[l].betaUsPerByte);
  }
  out += strfmt("top: link alpha %.2f us beta %.3g us/B\n", link.back().alphaUs,
                link.back().betaUsPerByte);
  if (alphaScale != 1.0)
    out += strfmt("ranks outnumber cores: every alpha priced x%.2f (ranks per core)\n", alphaScale);
  return out;
}

}  // namespace braid::algos
