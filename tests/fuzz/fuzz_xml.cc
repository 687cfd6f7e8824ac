// Fuzz target: the XML files Braid reads (NCCL_TOPO_FILE: topo/topo_xml.h; BRAID_CLUSTER_FILE:
// topo/cluster_map.h; both through topo/xml_source.h). The first byte picks:
//   0  a topology file; one that loads must dump to XML that loads back to the same dump
//   1  a cluster map; one that parses must answer lookups and describe itself
//   2  the attribute value parsers (integers, floats, hex)
#include <string>

#include "fuzz_common.h"
#include "topo/cluster_map.h"
#include "topo/topo_xml.h"
#include "topo/xml_source.h"

namespace braid {
namespace {

using fuzz::broken;
using fuzz::Input;

void topoFile(Input& in) {
  topo::HostTopology t;
  bool advisory = false;
  auto source = topo::XmlSource::fromText("fuzz.xml", std::string(in.rest()));
  if (!topo::parseTopoXml(source, &t, &advisory).ok()) return;
  const std::string dump = topo::topoXml(t);
  topo::HostTopology again;
  Status st = topo::parseTopoXml(topo::XmlSource::fromText("dump.xml", dump), &again, &advisory);
  if (!st.ok()) broken("a dumped topology does not load", st.message() + "\n" + dump);
  if (topo::topoXml(again) != dump) broken("dump -> load -> dump differs", dump);
}

void clusterMap(Input& in) {
  topo::ClusterMap map;
  if (!topo::parseClusterMap(topo::XmlSource::fromText("fuzz.xml", std::string(in.rest())), &map)
           .ok())
    return;
  if (map.levels.empty() || map.groups.size() != map.levels.size()) broken("map shape");
  (void)map.describe();
  for (size_t h = 0; h < map.groups[0].size(); ++h) {
    if (map.findHost(map.groups[0][h].name) < 0) broken("a host of the map is not found");
    for (size_t level = 0; level < map.levels.size(); ++level) {
      const int g = map.groupOf(static_cast<int>(h), static_cast<int>(level));
      if (g < 0 || static_cast<size_t>(g) >= map.groups[level].size()) broken("groupOf range");
    }
  }
  (void)map.findHost("node01.example");
}

void values(Input& in) {
  std::string_view text = in.rest();
  long long i = 0;
  double d = 0;
  (void)topo::parseInt(text, &i);
  (void)topo::parseFloat(text, &d);
  (void)topo::isHex(text);
}

}  // namespace

std::span<const fuzz::Decoder> fuzz::decoders() {
  static constexpr Decoder kDecoders[] = {topoFile, clusterMap, values};
  return kDecoders;
}

}  // namespace braid
