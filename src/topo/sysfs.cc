#include "topo/sysfs.h"

#include <sys/utsname.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <fstream>

#include "topo/xml_source.h"

namespace braid::topo::sysfs {

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

size_t parseCacheSize(const std::string& text) {
  size_t value = 0, i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    if (value > (SIZE_MAX >> 4) / 10) return 0;
    value = value * 10 + static_cast<size_t>(text[i] - '0');
  }
  if (i == 0) return 0;
  const std::string unit = text.substr(i);
  const int shift = unit.empty() ? 0 : unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
  if (shift < 0 || value > (SIZE_MAX >> shift)) return 0;
  return value << shift;
}

size_t lastLevelCacheBytes() {
  int bestLevel = 0;
  size_t bytes = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const std::string level = firstLine(dir + "level");
    if (level.empty()) break;
    const int l = std::atoi(level.c_str());
    if (firstLine(dir + "type") == "Instruction" || l < bestLevel) continue;
    const size_t size = parseCacheSize(firstLine(dir + "size"));
    if (size > 0) bestLevel = l, bytes = size;
  }
  return bytes;
}

bool parseCpuList(const std::string& list, std::vector<int>* cpus) {
  cpus->clear();
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    std::string item =
        list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t dash = item.find('-');
    long long lo, hi;
    if (!parseInt(item.substr(0, dash), &lo)) return false;
    hi = lo;
    if (dash != std::string::npos && !parseInt(item.substr(dash + 1), &hi)) return false;
    for (long long c = lo; c <= hi; ++c) cpus->push_back(static_cast<int>(c));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return true;
}

void addCpuIdentity(TopoNode* cpu) {
  utsname u{};
  if (uname(&u) == 0) cpu->set("arch", u.machine);
  std::ifstream in("/proc/cpuinfo");
  std::string line, vendor, family, model;
  // The first processor block describes them all on the machines Braid targets.
  while (std::getline(in, line) && !line.empty()) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "vendor_id")
      vendor = value;
    else if (key == "cpu family")
      family = value;
    else if (key == "model")
      model = value;
  }
  long long n;
  if (!vendor.empty()) cpu->set("vendor", vendor);
  if (parseInt(family, &n)) cpu->set("familyid", family);
  if (parseInt(model, &n)) cpu->set("modelid", model);
}

void addPciLink(const std::string& busId, TopoNode* pci) {
  std::string dir = "/sys/bus/pci/devices/" + busId + "/";
  std::string speed = firstLine(dir + "current_link_speed");
  std::string width = firstLine(dir + "current_link_width");
  long long n;
  if (!speed.empty() && speed != "Unknown") pci->set("link_speed", speed);
  if (parseInt(width, &n) && n > 0) pci->set("link_width", width);
}

void fillNet(const std::string& name, bool infiniband, int dev, TopoNode* net) {
  net->set("name", name);
  net->set("dev", std::to_string(dev));
  long long mbps = 0;
  if (infiniband) {
    // ports/1/rate reads "100 Gb/sec (4X EDR)".
    std::string rate = firstLine("/sys/class/infiniband/" + name + "/ports/1/rate");
    long long gbps;
    if (parseInt(rate.substr(0, rate.find(' ')), &gbps)) mbps = gbps * 1000;
  } else {
    parseInt(firstLine("/sys/class/net/" + name + "/speed"), &mbps);  // -1 on virtual NICs
  }
  if (mbps > 0) net->set("speed", std::to_string(mbps));
  net->set("port", "1");
}

bool isPciBusId(const std::string& t) {
  // dddd:bb:dd.f
  if (t.size() != 12 || t[4] != ':' || t[7] != ':' || t[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11})
    if (!std::isxdigit(static_cast<unsigned char>(t[i]))) return false;
  return true;
}

}  // namespace braid::topo::sysfs
