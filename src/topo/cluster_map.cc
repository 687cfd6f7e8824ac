#include "topo/cluster_map.h"

#include <functional>
#include <map>

namespace braid::topo {

algos::LinkCost ClusterLevel::link() const {
  // Gbit/s to microseconds per byte: 8 bits / (bw * 1e9 bit/s) = 8e-3 / bw us.
  return {latencyUs, 8e-3 / bwGbps, burstKib * 1024, cpuNsPerByte * 1e-3};
}

namespace {

class Parser {
 public:
  Parser(const XmlSource& src, ClusterMap* map) : src_(src), map_(map) {}

  Status run(const pugi::xml_node& root) {
    if (std::string_view(root.name()) != "cluster")
      return src_.error(root, strfmt("root element <%s>; expected <cluster>", root.name()));
    BRAID_TRY(onlyAttributes(root, {"version", "local_cpu_ns_per_byte"}));
    if (pugi::xml_attribute v = root.attribute("version"); v && std::string_view(v.value()) != "1")
      return src_.error(root,
                        strfmt("<cluster version=\"%s\">; expected version=\"1\"", v.value()));
    if (root.attribute("local_cpu_ns_per_byte"))
      BRAID_TRY(number(root, "local_cpu_ns_per_byte", false, &map_->localCpuNsPerByte));
    for (pugi::xml_node n : root.children("level")) BRAID_TRY(level(n));
    if (map_->levels.empty())
      return src_.error(
          root, "<cluster> declares no <level>; expected at least <level name=\"host\" ...>");
    map_->groups.assign(map_->levels.size(), {});
    const int top = static_cast<int>(map_->levels.size()) - 1;
    for (pugi::xml_node n : root.children()) {
      BRAID_TRY(noText(n, root));
      if (n.type() != pugi::node_element || std::string_view(n.name()) == "level") continue;
      BRAID_TRY(group(n, top, -1));
    }
    if (map_->groups[0].empty())
      return src_.error(root, "<cluster> names no <host>; expected at least one");
    return Status::Ok();
  }

 private:
  Status onlyAttributes(const pugi::xml_node& n, std::initializer_list<std::string_view> allowed) {
    for (pugi::xml_attribute a : n.attributes()) {
      bool ok = false;
      for (std::string_view name : allowed) ok |= name == a.name();
      if (ok) continue;
      std::string list;
      for (std::string_view name : allowed) list.append(list.empty() ? "" : ", ").append(name);
      return src_.error(
          n, strfmt("<%s> has an attribute %s; expected only %s", n.name(), a.name(), list.c_str()),
          a.name());
    }
    return Status::Ok();
  }

  Status noText(const pugi::xml_node& n, const pugi::xml_node& parent) {
    if (n.type() == pugi::node_pcdata &&
        std::string_view(n.value()).find_first_not_of(" \t\r\n") != std::string_view::npos)
      return src_.error(n, strfmt("text inside <%s>; expected only elements", parent.name()));
    return Status::Ok();
  }

  Status number(const pugi::xml_node& n, const char* attr, bool positive, double* out) {
    pugi::xml_attribute a = n.attribute(attr);
    if (!a)
      return src_.error(
          n, strfmt("<%s> has no %s attribute; expected %s=\"<number>\"", n.name(), attr, attr));
    if (!parseFloat(a.value(), out) || (positive ? *out <= 0 : *out < 0))
      return src_.error(n,
                        strfmt("<%s %s=\"%s\">: expected a %s number", n.name(), attr, a.value(),
                               positive ? "positive" : "non-negative"),
                        attr);
    return Status::Ok();
  }

  Status level(const pugi::xml_node& n) {
    BRAID_TRY(onlyAttributes(n, {"name", "bw_gbps", "latency_us", "burst_kib", "cpu_ns_per_byte"}));
    ClusterLevel l;
    l.name = n.attribute("name").value();
    if (l.name.empty())
      return src_.error(n, "<level> has no name; expected name=\"host\", \"rack\", ...");
    if (map_->levels.empty() && l.name != "host")
      return src_.error(
          n,
          strfmt(
              "first <level> is \"%s\"; expected name=\"host\" (levels go from the host outwards)",
              l.name.c_str()));
    if (l.name == "cluster" || l.name == "level")
      return src_.error(n,
                        strfmt("<level name=\"%s\">: expected a name other than cluster or level",
                               l.name.c_str()));
    for (const ClusterLevel& seen : map_->levels)
      if (seen.name == l.name)
        return src_.error(
            n, strfmt("level \"%s\" declared twice; expected each level once", l.name.c_str()));
    BRAID_TRY(number(n, "bw_gbps", true, &l.bwGbps));
    BRAID_TRY(number(n, "latency_us", false, &l.latencyUs));
    if (n.attribute("burst_kib")) BRAID_TRY(number(n, "burst_kib", false, &l.burstKib));
    if (n.attribute("cpu_ns_per_byte"))
      BRAID_TRY(number(n, "cpu_ns_per_byte", false, &l.cpuNsPerByte));
    map_->levels.push_back(std::move(l));
    return Status::Ok();
  }

  // `n` must be a group of level `level` (the element named after it) inside group `parent`.
  Status group(const pugi::xml_node& n, int level, int parent) {
    const std::string& expected = map_->levels[static_cast<size_t>(level)].name;
    if (expected != n.name()) {
      std::string inside =
          parent < 0 ? "<cluster>" : "<" + map_->levels[static_cast<size_t>(level) + 1].name + ">";
      std::string where = "directly inside " + inside;
      for (size_t l = 0; l < map_->levels.size(); ++l)
        if (map_->levels[l].name == n.name())
          return src_.error(n, strfmt("<%s> %s; expected <%s> there (each level nests in the next)",
                                      n.name(), where.c_str(), expected.c_str()));
      return src_.error(n, strfmt("<%s> is not a declared level; expected <%s> %s", n.name(),
                                  expected.c_str(), where.c_str()));
    }
    BRAID_TRY(onlyAttributes(n, {"name"}));
    std::string name = n.attribute("name").value();
    if (name.empty())
      return src_.error(n, strfmt("<%s> has no name; expected name=\"...\"", n.name()));
    auto& seen = names_[static_cast<size_t>(level)];
    int line = src_.lineOf(n);
    if (auto it = seen.find(name); it != seen.end())
      return src_.error(n, strfmt("duplicate %s \"%s\" (first at line %d); expected each %s once",
                                  n.name(), name.c_str(), it->second, n.name()));
    seen[name] = line;
    auto& list = map_->groups[static_cast<size_t>(level)];
    list.push_back({name, parent, line});
    const int self = static_cast<int>(list.size()) - 1;
    for (pugi::xml_node c : n.children()) {
      BRAID_TRY(noText(c, n));
      if (c.type() != pugi::node_element) continue;
      if (level == 0)
        return src_.error(c, strfmt("<%s> inside <host>; expected <host> to be empty", c.name()));
      BRAID_TRY(group(c, level - 1, self));
    }
    return Status::Ok();
  }

  const XmlSource& src_;
  ClusterMap* map_;
  std::map<size_t, std::map<std::string, int>> names_;  // level -> name -> line
};

std::string shortName(std::string_view name) { return std::string(name.substr(0, name.find('.'))); }

}  // namespace

Status parseClusterMap(const XmlSource& source, ClusterMap* out) {
  pugi::xml_document doc;
  BRAID_TRY(source.parse(&doc));
  ClusterMap map;
  map.path = source.path();
  BRAID_TRY(Parser(source, &map).run(doc.document_element()));
  *out = std::move(map);
  return Status::Ok();
}

Status loadClusterMap(const std::string& path, ClusterMap* out) {
  XmlSource source;
  BRAID_TRY(XmlSource::read(path, &source));
  return parseClusterMap(source, out);
}

int ClusterMap::findHost(std::string_view name) const {
  if (groups.empty()) return -1;
  const std::vector<ClusterGroup>& hosts = groups[0];
  for (size_t h = 0; h < hosts.size(); ++h)
    if (hosts[h].name == name) return static_cast<int>(h);
  int found = -1;
  for (size_t h = 0; h < hosts.size(); ++h) {
    if (shortName(hosts[h].name) != shortName(name)) continue;
    if (found >= 0) return -1;  // ambiguous: better unknown than wrong
    found = static_cast<int>(h);
  }
  return found;
}

int ClusterMap::groupOf(int host, int level) const {
  int g = host;
  for (int l = 0; l < level; ++l) g = groups[static_cast<size_t>(l)][static_cast<size_t>(g)].parent;
  return g;
}

std::string ClusterMap::describe() const {
  std::string out = strfmt("cluster map %s: %zu hosts, %zu levels\n", path.c_str(),
                           groups.empty() ? 0 : groups[0].size(), levels.size());
  for (size_t l = 0; l < levels.size(); ++l) {
    const std::string outer = l + 1 < levels.size() ? levels[l + 1].name : "cluster";
    out += strfmt("  level %zu %s: %zu groups; two %ss of one %s: %.3g Gbit/s, %.3g us\n", l,
                  levels[l].name.c_str(), groups[l].size(), levels[l].name.c_str(), outer.c_str(),
                  levels[l].bwGbps, levels[l].latencyUs);
  }
  // Outermost groups first, each followed by what it holds, indented by depth.
  std::function<void(size_t, int, int)> show = [&](size_t level, int index, int depth) {
    const ClusterGroup& g = groups[level][static_cast<size_t>(index)];
    out +=
        std::string(static_cast<size_t>(2 * depth), ' ') + levels[level].name + " " + g.name + "\n";
    if (level == 0) return;
    for (size_t c = 0; c < groups[level - 1].size(); ++c)
      if (groups[level - 1][c].parent == index) show(level - 1, static_cast<int>(c), depth + 1);
  };
  const size_t top = levels.size() - 1;
  for (size_t g = 0; g < groups[top].size(); ++g) show(top, static_cast<int>(g), 2);
  return out;
}

}  // namespace braid::topo
