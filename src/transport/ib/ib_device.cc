#include "transport/ib/ib_device.h"

#include <arpa/inet.h>

#include <cstring>
#include <fstream>
#include <mutex>

#include "base/strfmt.h"
#include "transport/ib/verbs.h"

namespace braid::transport::ib {

bool HcaFilter::allows(std::string_view device, int port) const {
  if (items.empty()) return true;
  bool listed = false;
  for (const Item& it : items) {
    const bool name = exact ? device == it.name : device.substr(0, it.name.size()) == it.name;
    if (name && (it.port < 0 || it.port == port)) listed = true;
  }
  return listed != exclude;
}

Status parseHcaFilter(std::string_view spec, HcaFilter* out) {
  HcaFilter f;
  if (!spec.empty() && spec.front() == '^') f.exclude = true, spec.remove_prefix(1);
  if (!spec.empty() && spec.front() == '=') f.exact = true, spec.remove_prefix(1);
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty()) continue;
    HcaFilter::Item it;
    const size_t colon = item.find(':');
    it.name = std::string(item.substr(0, colon));
    if (colon != std::string_view::npos) {
      const std::string port(item.substr(colon + 1));
      char* end = nullptr;
      const long p = std::strtol(port.c_str(), &end, 10);
      if (port.empty() || *end || p < 1 || p > 255)
        return invalidArgument("NCCL_IB_HCA: \"%.*s\": the port must be a number from 1 to 255",
                               static_cast<int>(item.size()), item.data());
      it.port = static_cast<int>(p);
    }
    if (it.name.empty())
      return invalidArgument("NCCL_IB_HCA: \"%.*s\" names no device", static_cast<int>(item.size()),
                             item.data());
    f.items.push_back(std::move(it));
  }
  *out = std::move(f);
  return Status::Ok();
}

double portGbps(uint8_t activeWidth, uint8_t activeSpeed) {
  double lanes = 0;
  switch (activeWidth) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: break;
  }
  double lane = 0;  // Gbit/s per lane: SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR
  switch (activeSpeed) {
    case 1: lane = 2.5; break;
    case 2: lane = 5; break;
    case 4: lane = 10; break;
    case 8: lane = 10; break;
    case 16: lane = 14; break;
    case 32: lane = 25; break;
    case 64: lane = 50; break;
    case 128: lane = 100; break;
    case 255: lane = 200; break;
    default: break;
  }
  return lanes * lane;
}

int mtuBytes(ibv_mtu mtu) { return 128 << static_cast<int>(mtu); }  // IBV_MTU_256 is 1

std::string Port::describe() const {
  std::string s = strfmt("%s:%d %s", device.c_str(), number, roce ? "RoCE" : "IB");
  if (roce)
    s += strfmt(" GID %d", gidIndex);
  else
    s += strfmt(" LID %u", lid);
  s += strfmt(" MTU %d", mtuBytes(mtu));
  if (gbps > 0) s += strfmt(" %g Gbit/s", gbps);
  return s;
}

Device::~Device() {
  const Verbs* v = verbs();
  if (!v) return;
  if (pd) v->deallocPd(pd);
  if (context) v->closeDevice(context);
}

namespace {

bool ipv4Mapped(const ibv_gid& gid) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, prefix, sizeof prefix) == 0;
}

// The kernel's name for a GID's type ("RoCE v2", "IB/RoCE v1"), empty where it says none.
std::string gidType(const std::string& device, int port, int index) {
  std::ifstream in(
      strfmt("/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d", device.c_str(), port, index));
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  return line;
}

// The RoCEv2 GID carrying an IPv4 address, else any IPv4-mapped one; -1 where there is none.
int pickGid(const Verbs& v, ibv_context* ctx, const std::string& device, int port, int tableLen) {
  int mapped = -1;
  for (int i = 0; i < tableLen; ++i) {
    ibv_gid gid{};
    if (v.queryGid(ctx, static_cast<uint8_t>(port), i, &gid) != 0 || !ipv4Mapped(gid)) continue;
    if (gidType(device, port, i) == "RoCE v2") return i;
    if (mapped < 0) mapped = i;
  }
  return mapped;
}

std::mutex gMu;
std::weak_ptr<Device> gOpen;  // the process's device while any transport holds it

Status openFirst(const HcaFilter& filter, int gidIndex, std::shared_ptr<Device>* out) {
  std::string why;
  const Verbs* v = verbs(&why);
  if (!v) return systemError("libibverbs is not available: %s", why.c_str());
  int count = 0;
  ibv_device** list = v->getDeviceList(&count);
  if (!list) return systemError("ibv_get_device_list: %s", std::strerror(errno));
  std::string seen;
  for (int d = 0; d < count && !*out; ++d) {
    const std::string name = v->getDeviceName(list[d]);
    ibv_context* ctx = v->openDevice(list[d]);
    if (!ctx) {
      seen += strfmt("%s%s: cannot be opened (%s)", seen.empty() ? "" : "; ", name.c_str(),
                     std::strerror(errno));
      continue;
    }
    ibv_device_attr dev{};
    bool kept = false;
    if (v->queryDevice(ctx, &dev) == 0) {
      for (int p = 1; p <= dev.phys_port_cnt && !kept; ++p) {
        ibv_port_attr attr{};
        if (v->queryPort(ctx, static_cast<uint8_t>(p), &attr) != 0) continue;
        if (!filter.allows(name, p)) {
          seen += strfmt("%s%s:%d: not in NCCL_IB_HCA", seen.empty() ? "" : "; ", name.c_str(), p);
          continue;
        }
        if (attr.state != IBV_PORT_ACTIVE) {
          seen += strfmt("%s%s:%d: not active", seen.empty() ? "" : "; ", name.c_str(), p);
          continue;
        }
        Port port;
        port.device = name;
        port.number = p;
        port.roce = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
        port.lid = attr.lid;
        port.mtu = attr.active_mtu;
        port.gbps = portGbps(attr.active_width, attr.active_speed);
        port.gidIndex = gidIndex >= 0 ? gidIndex
                        : port.roce   ? pickGid(*v, ctx, name, p, attr.gid_tbl_len)
                                      : 0;
        if (port.gidIndex < 0 || port.gidIndex >= attr.gid_tbl_len ||
            v->queryGid(ctx, static_cast<uint8_t>(p), port.gidIndex, &port.gid) != 0) {
          seen += strfmt("%s%s:%d: %s", seen.empty() ? "" : "; ", name.c_str(), p,
                         gidIndex >= 0 ? "NCCL_IB_GID_INDEX is not in its GID table"
                                       : "no IPv4 RoCE GID (does its netdev have an address?)");
          continue;
        }
        auto device = std::make_shared<Device>();
        device->context = ctx;
        device->pd = v->allocPd(ctx);
        device->port = port;
        if (!device->pd) {
          device->context = nullptr;
          seen += strfmt("%s%s: ibv_alloc_pd: %s", seen.empty() ? "" : "; ", name.c_str(),
                         std::strerror(errno));
          continue;
        }
        *out = std::move(device);
        kept = true;
      }
    }
    if (!kept) v->closeDevice(ctx);
  }
  v->freeDeviceList(list);
  if (*out) return Status::Ok();
  return count == 0 ? systemError("%s", "no RDMA device found")
                    : systemError("no usable RDMA port: %s", seen.c_str());
}

}  // namespace

Status openDevice(const HcaFilter& filter, int gidIndex, std::shared_ptr<Device>* out) {
  std::lock_guard<std::mutex> lock(gMu);
  if (auto open = gOpen.lock()) {
    *out = std::move(open);
    return Status::Ok();
  }
  out->reset();
  BRAID_TRY(openFirst(filter, gidIndex, out));
  gOpen = *out;
  return Status::Ok();
}

}  // namespace braid::transport::ib
