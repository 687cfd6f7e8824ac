#include "topo/host_topology.h"

#include <algorithm>
#include <cctype>

#include "base/env.h"
#include "base/log.h"
#include "topo/topo_xml.h"
#include "topo/variables.h"

namespace braid::topo {

const std::string* TopoNode::find(std::string_view name) const {
  for (const XmlAttr& a : attrs)
    if (a.name == name) return &a.value;
  return nullptr;
}

std::string TopoNode::get(std::string_view name, std::string_view fallback) const {
  const std::string* v = find(name);
  return v ? *v : std::string(fallback);
}

long long TopoNode::getInt(std::string_view name, long long fallback) const {
  const std::string* v = find(name);
  long long x;
  return v && parseInt(*v, &x) ? x : fallback;
}

void TopoNode::set(std::string_view name, std::string value) {
  for (XmlAttr& a : attrs)
    if (a.name == name) {
      a.value = std::move(value);
      return;
    }
  attrs.push_back({std::string(name), std::move(value)});
}

TopoNode& TopoNode::add(std::string childTag) {
  children.push_back({std::move(childTag), {}, {}});
  return children.back();
}

int HostSummary::cpuCount() const {
  std::vector<int> all;
  for (const NumaInfo& n : numa) all.insert(all.end(), n.cpus.begin(), n.cpus.end());
  std::sort(all.begin(), all.end());
  return static_cast<int>(std::unique(all.begin(), all.end()) - all.begin());
}

namespace {

void walk(const TopoNode& node, int numa, const std::string& busId, HostSummary* out) {
  for (const TopoNode& c : node.children) {
    if (c.tag == "pci") {
      ++out->pciDevices;
      walk(c, numa, c.get("busid"), out);
    } else if (c.tag == "gpu") {
      out->gpus.push_back({static_cast<int>(c.getInt("dev", -1)), numa, busId});
    } else if (c.tag == "nic") {
      for (const TopoNode& net : c.children)
        if (net.tag == "net")
          out->nics.push_back({net.get("name"), numa, busId, net.getInt("speed", 0)});
    }
  }
}

}  // namespace

HostSummary summarize(const HostTopology& topo) {
  HostSummary out;
  for (const TopoNode& cpu : topo.system.children) {
    if (cpu.tag != "cpu") continue;
    NumaInfo numa;
    numa.id = static_cast<int>(cpu.getInt("numaid", -1));
    parseCpuMask(cpu.get("affinity"), &numa.cpus);
    out.numa.push_back(std::move(numa));
    walk(cpu, out.numa.back().id, "", &out);
  }
  return out;
}

namespace {

void describeNode(const TopoNode& node, int depth, std::string* out) {
  out->append(static_cast<size_t>(2 * depth), ' ').append(node.tag);
  for (const XmlAttr& a : node.attrs)
    out->append(1, ' ').append(a.name).append(1, '=').append(a.value);
  out->append(1, '\n');
  for (const TopoNode& c : node.children) describeNode(c, depth + 1, out);
}

}  // namespace

std::string describeHost(const HostTopology& topo) {
  HostSummary sum = summarize(topo);
  std::string out =
      strfmt("host topology from %s: %zu NUMA nodes, %d CPUs, %d PCI devices, %zu NICs, %zu GPUs\n",
             topo.source.c_str(), sum.numa.size(), sum.cpuCount(), sum.pciDevices, sum.nics.size(),
             sum.gpus.size());
  for (const TopoNode& c : topo.system.children) describeNode(c, 1, &out);
  return out;
}

std::string cpuMask(const std::vector<int>& cpus) {
  int top = 0;
  for (int c : cpus) top = std::max(top, c);
  std::vector<uint32_t> words(static_cast<size_t>(top / 32 + 1), 0);
  for (int c : cpus)
    if (c >= 0) words[static_cast<size_t>(c / 32)] |= 1u << (c % 32);
  std::string out;
  for (size_t w = words.size(); w-- > 0;) {
    if (!out.empty()) out += ',';
    out += strfmt("%08x", words[w]);
  }
  return out;
}

bool parseCpuMask(std::string_view mask, std::vector<int>* cpus) {
  cpus->clear();
  std::vector<std::string_view> words;
  while (true) {
    size_t comma = mask.find(',');
    words.push_back(mask.substr(0, comma));
    if (comma == std::string_view::npos) break;
    mask.remove_prefix(comma + 1);
  }
  // Least significant word last; each word at most 32 bits.
  int base = 0;
  for (size_t i = words.size(); i-- > 0; base += 32) {
    std::string_view w = words[i];
    if (w.starts_with("0x")) w.remove_prefix(2);
    if (w.empty() || w.size() > 8 || !isHex(w)) return false;
    uint32_t bits = static_cast<uint32_t>(std::stoul(std::string(w), nullptr, 16));
    for (int b = 0; b < 32; ++b)
      if (bits & (1u << b)) cpus->push_back(base + b);
  }
  std::sort(cpus->begin(), cpus->end());
  return true;
}

Status hostTopology(HostTopology* out) {
  const char* file = env::get(env::kNcclTopoFile);
  bool loaded = false;
  if (file && *file) {
    bool advisory = false;
    Status s = loadTopoFile(file, out, &advisory);
    if (s.ok()) {
      loaded = true;
    } else if (advisory) {
      BRAID_WARN("NCCL_TOPO_FILE ignored, using the detected topology: %s", s.message().c_str());
    } else {
      return s.withContext("NCCL_TOPO_FILE");
    }
  }
  if (!loaded) BRAID_TRY(discoverHost(out));
  if (log::enabled(log::Level::Info, log::kGraph)) {
    std::string text = describeHost(*out);
    BRAID_INFO(kGraph, "%s", text.substr(0, text.find('\n')).c_str());
  }
  if (const char* dump = env::get(env::kNcclTopoDumpFile); dump && *dump) {
    BRAID_TRY(dumpTopoFile(*out, dump));
    BRAID_INFO(kGraph, "host topology written to %s", dump);
  }
  return Status::Ok();
}

}  // namespace braid::topo
