#include "topo/topo_xml.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <string_view>

#include "base/log.h"

namespace braid::topo {
namespace {

// What each attribute must look like. Text is anything; the others are checked so that a
// typo ("speed=fast") fails at load instead of becoming a zero somewhere later.
enum class Kind { Text, Int, Float, Hex, Mask };

struct AttrSpec {
  std::string_view name;
  Kind kind;
  bool required = false;
};

struct ElementSpec {
  std::string_view tag;
  std::initializer_list<std::string_view> parents;  // empty: the root
  std::initializer_list<AttrSpec> attrs;
};

// The schema of shared/reference/nccl-abi.md: where each element may stand and what its
// attributes hold. Attributes not listed are kept as text.
const ElementSpec kSchema[] = {
    {"system", {}, {{"version", Kind::Int}}},
    {"cpu",
     {"system"},
     {{"numaid", Kind::Int},
      {"affinity", Kind::Mask},
      {"arch", Kind::Text},
      {"vendor", Kind::Text},
      {"familyid", Kind::Int},
      {"modelid", Kind::Int}}},
    {"pci",
     {"cpu", "pci"},
     {{"busid", Kind::Text, true},
      {"class", Kind::Hex},
      {"vendor", Kind::Hex},
      {"device", Kind::Hex},
      {"subsystem_vendor", Kind::Hex},
      {"subsystem_device", Kind::Hex},
      {"link_speed", Kind::Text},
      {"link_width", Kind::Int}}},
    {"gpu",
     {"pci"},
     {{"dev", Kind::Int}, {"sm", Kind::Int}, {"rank", Kind::Int}, {"gdr", Kind::Int}}},
    {"nvlink",
     {"gpu"},
     {{"target", Kind::Text, true}, {"count", Kind::Int}, {"tclass", Kind::Hex}}},
    {"c2c", {"gpu"}, {{"count", Kind::Int}, {"bw", Kind::Float}}},
    {"nic", {"cpu", "pci"}, {}},
    {"net",
     {"nic"},
     {{"name", Kind::Text, true},
      {"dev", Kind::Int},
      {"speed", Kind::Int},
      {"port", Kind::Int},
      {"latency", Kind::Float},
      {"guid", Kind::Hex},
      {"maxconn", Kind::Int},
      {"gdr", Kind::Int},
      {"coll", Kind::Int}}},
    {"pcilink", {"pci"}, {{"target", Kind::Text, true}}},
};

const ElementSpec* specOf(std::string_view tag) {
  for (const ElementSpec& e : kSchema)
    if (e.tag == tag) return &e;
  return nullptr;
}

const char* describeKind(Kind kind) {
  switch (kind) {
    case Kind::Int: return "an integer";
    case Kind::Float: return "a number";
    case Kind::Hex: return "a hexadecimal number (0x15b3)";
    case Kind::Mask: return "a CPU mask of comma-separated hex words (ffffffff,0000ffff)";
    case Kind::Text: break;
  }
  return "text";
}

bool valueFits(Kind kind, std::string_view value) {
  long long i;
  double f;
  std::vector<int> cpus;
  switch (kind) {
    case Kind::Int: return parseInt(value, &i);
    case Kind::Float: return parseFloat(value, &f);
    case Kind::Hex: return isHex(value);
    case Kind::Mask: return parseCpuMask(value, &cpus);
    case Kind::Text: return true;
  }
  return false;
}

std::string joinParents(const ElementSpec& spec) {
  std::string out;
  for (std::string_view p : spec.parents) {
    if (!out.empty()) out += " or ";
    out.append("<").append(p).append(">");
  }
  return out;
}

Status convert(const XmlSource& src, const pugi::xml_node& xml, TopoNode* out) {
  out->tag = xml.name();
  const ElementSpec* spec = specOf(out->tag);
  if (spec) {
    std::string_view parent = xml.parent().type() == pugi::node_element ? xml.parent().name() : "";
    bool placed = spec->parents.size() == 0 ? parent.empty()
                                            : std::find(spec->parents.begin(), spec->parents.end(),
                                                        parent) != spec->parents.end();
    if (!placed) {
      std::string found =
          parent.empty() ? "at the top of the document" : "inside <" + std::string(parent) + ">";
      std::string expected = spec->parents.size() == 0 ? "only as the document's root"
                                                       : "inside " + joinParents(*spec);
      return src.error(xml, strfmt("<%s> %s; expected it %s", out->tag.c_str(), found.c_str(),
                                   expected.c_str()));
    }
    for (const AttrSpec& a : spec->attrs) {
      pugi::xml_attribute attr = xml.attribute(std::string(a.name).c_str());
      if (!attr && a.required)
        return src.error(
            xml, strfmt("<%s> has no %s attribute; expected one", out->tag.c_str(), a.name.data()));
      if (attr && !valueFits(a.kind, attr.value()))
        return src.error(xml,
                         strfmt("<%s %s=\"%s\">: expected %s", out->tag.c_str(), attr.name(),
                                attr.value(), describeKind(a.kind)),
                         attr.name());
    }
  } else if (!xml.parent().parent()) {
    return src.error(xml, strfmt("root element <%s>; expected <system>", out->tag.c_str()));
  } else {
    BRAID_INFO(kGraph, "%s: <%s> is not in NCCL's topology schema as Braid knows it; kept as is",
               src.where(xml).c_str(), out->tag.c_str());
  }
  for (pugi::xml_attribute a : xml.attributes()) out->attrs.push_back({a.name(), a.value()});
  for (pugi::xml_node child : xml.children()) {
    if (child.type() == pugi::node_pcdata &&
        std::string_view(child.value()).find_first_not_of(" \t\r\n") != std::string_view::npos)
      return src.error(child, strfmt("text inside <%s>; expected only elements", out->tag.c_str()));
    if (child.type() != pugi::node_element) continue;
    BRAID_TRY(convert(src, child, &out->children.emplace_back()));
  }
  return Status::Ok();
}

// Written by hand rather than with pugixml's writer for NCCL's own layout ("<gpu dev="0"/>", no
// space before "/>"), so Braid's dumps diff cleanly against NCCL's.
void escape(std::string_view text, std::string* out) {
  for (char c : text) {
    switch (c) {
      case '&': *out += "&amp;"; break;
      case '<': *out += "&lt;"; break;
      case '>': *out += "&gt;"; break;
      case '"': *out += "&quot;"; break;
      case '\n': *out += "&#10;"; break;
      case '\t': *out += "&#9;"; break;
      default: *out += c;
    }
  }
}

void write(const TopoNode& node, int depth, std::string* out) {
  out->append(static_cast<size_t>(2 * depth), ' ').append(1, '<').append(node.tag);
  for (const XmlAttr& a : node.attrs) {
    out->append(1, ' ').append(a.name).append("=\"");
    escape(a.value, out);
    out->append(1, '"');
  }
  if (node.children.empty()) {
    out->append("/>\n");
    return;
  }
  out->append(">\n");
  for (const TopoNode& c : node.children) write(c, depth + 1, out);
  out->append(static_cast<size_t>(2 * depth), ' ').append("</").append(node.tag).append(">\n");
}

}  // namespace

Status parseTopoXml(const XmlSource& source, HostTopology* out, bool* advisory) {
  *advisory = true;
  pugi::xml_document doc;
  BRAID_TRY(source.parse(&doc));
  *advisory = false;
  HostTopology topo;
  topo.source = source.path();
  topo.system = {};
  BRAID_TRY(convert(source, doc.document_element(), &topo.system));
  *out = std::move(topo);
  return Status::Ok();
}

Status loadTopoFile(const std::string& path, HostTopology* out, bool* advisory) {
  *advisory = true;
  XmlSource source;
  BRAID_TRY(XmlSource::read(path, &source));
  return parseTopoXml(source, out, advisory);
}

std::string topoXml(const HostTopology& topo) {
  std::string out;
  write(topo.system, 0, &out);
  return out;
}

Status dumpTopoFile(const HostTopology& topo, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return systemError("NCCL_TOPO_DUMP_FILE %s: cannot write (%s)", path.c_str(),
                       std::strerror(errno));
  out << topoXml(topo);
  if (!out.flush())
    return systemError("NCCL_TOPO_DUMP_FILE %s: write failed (%s)", path.c_str(),
                       std::strerror(errno));
  return Status::Ok();
}

}  // namespace braid::topo
