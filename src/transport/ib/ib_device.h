// Which RDMA device and port the ib transport uses, chosen as NCCL chooses (NCCL_IB_HCA,
// NCCL_IB_GID_INDEX), and the device opened once per process for every communicator in it.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace braid::transport::ib {

// NCCL_IB_HCA: a comma list of device names, each optionally with ":port". Names match as
// prefixes ("mlx5" takes mlx5_0 and mlx5_1) unless the list starts with '=' (exact names); a
// leading '^' (before any '=') turns the list into one of devices not to use. Empty: all.
struct HcaFilter {
  struct Item {
    std::string name;
    int port = -1;  // -1: every port
  };
  bool exclude = false;
  bool exact = false;
  std::vector<Item> items;

  bool allows(std::string_view device, int port) const;
};
Status parseHcaFilter(std::string_view spec, HcaFilter* out);

// The port chosen, as the connection handle and the logs describe it.
struct Port {
  std::string device;
  int number = 0;
  bool roce = false;  // Ethernet link layer: addressed by GID (RoCEv2), else InfiniBand by LID
  int gidIndex = 0;
  ibv_gid gid{};
  uint16_t lid = 0;
  ibv_mtu mtu = IBV_MTU_1024;
  double gbps = 0;  // active width x speed

  std::string describe() const;  // "rxe0:1 RoCEv2 GID 1 MTU 1024 10 Gbit/s"
};

// An open device with its protection domain, shared by every transport of the process on it
// and closed with the last.
struct Device {
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  Port port;
  ~Device();
};

// The first active port NCCL_IB_HCA allows (devices in the library's order, ports in number
// order), opened. `gidIndex` < 0 picks the port's RoCEv2 IPv4-mapped GID on Ethernet ports.
// Fails (with the reason) where libibverbs is missing or no port qualifies; the same device
// is handed to every caller while any holds it.
Status openDevice(const HcaFilter& filter, int gidIndex, std::shared_ptr<Device>* out);

// An active port's rate from ibv_port_attr's width and speed codes, in Gbit/s (0: unknown).
double portGbps(uint8_t activeWidth, uint8_t activeSpeed);
int mtuBytes(ibv_mtu mtu);

}  // namespace braid::transport::ib
