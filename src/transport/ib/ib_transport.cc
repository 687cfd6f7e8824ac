#include "transport/ib/ib_transport.h"

#include <atomic>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>

#include "base/log.h"
#include "base/strfmt.h"
#include "transport/ib/ib_device.h"
#include "transport/ib/ib_endpoint.h"
#include "transport/ib/verbs.h"

namespace braid::env {
const Var kNcclIbDisable = {"NCCL_IB_DISABLE", "0", "1: never use the ib (verbs) transport"};
const Var kNcclIbHca = {"NCCL_IB_HCA", nullptr,
                        "RDMA devices to use: prefixes with optional :port, comma separated; "
                        "'=' exact names, '^' all but these"};
const Var kNcclIbGidIndex = {
    "NCCL_IB_GID_INDEX", "-1",
    "GID index on RoCE ports; -1: the RoCEv2 GID carrying an IPv4 address"};
const Var kNcclIbTc = {"NCCL_IB_TC", "0", "traffic class of RoCE packets (0-255)"};
const Var kNcclIbSl = {"NCCL_IB_SL", "0", "InfiniBand service level (0-15)"};
const Var kNcclIbTimeout = {"NCCL_IB_TIMEOUT", "20",
                            "verbs ack timeout exponent: 4.096 us x 2^value before a retry (1-31)"};
const Var kNcclIbRetryCnt = {"NCCL_IB_RETRY_CNT", "7",
                             "verbs retries before a connection fails (0-7)"};
const Var kNcclIbQpsPerConnection = {
    "NCCL_IB_QPS_PER_CONNECTION", "1",
    "queue pairs per peer; fragments of large messages are spread over them (1-16)"};
const Var kNcclIbPkey = {"NCCL_IB_PKEY", "0", "partition key index (0-65535)"};
const Var kBraidIbSlotBytes = {
    "BRAID_IB_SLOT_BYTES", "262144",
    "ib transport: bytes of each of a connection's 8 receive slots, "
    "the largest piece a write through the slots carries (4096 to 64 MiB)"};
const Var kBraidIbDirectMinBytes = {
    "BRAID_IB_DIRECT_MIN_BYTES", "65536",
    "ib transport: messages of this size and more between buffers registered on both ranks "
    "(ncclCommRegister) are written straight into the receiver's buffer"};
}  // namespace braid::env

namespace braid::transport {
namespace {

using ib::Connection;
using ib::Device;
using ib::Handle;
using ib::IbEndpoint;
using ib::Settings;

Status readInt(const env::Var& var, int64_t lo, int64_t hi, int* out) {
  const int64_t v = env::getInt(var);
  if (v < lo || v > hi)
    return invalidArgument("%s=%lld: must be %lld to %lld", var.name, static_cast<long long>(v),
                           static_cast<long long>(lo), static_cast<long long>(hi));
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status settingsFromEnv(Settings* out) {
  Settings s;
  BRAID_TRY(readInt(env::kNcclIbGidIndex, -1, 255, &s.gidIndex));
  BRAID_TRY(readInt(env::kNcclIbTc, 0, 255, &s.trafficClass));
  BRAID_TRY(readInt(env::kNcclIbSl, 0, 15, &s.serviceLevel));
  BRAID_TRY(readInt(env::kNcclIbTimeout, 1, 31, &s.timeout));
  BRAID_TRY(readInt(env::kNcclIbRetryCnt, 0, 7, &s.retryCount));
  BRAID_TRY(readInt(env::kNcclIbQpsPerConnection, 1, Handle::kMaxQps, &s.qps));
  BRAID_TRY(readInt(env::kNcclIbPkey, 0, 65535, &s.pkeyIndex));
  int slot = 0;
  BRAID_TRY(readInt(env::kBraidIbSlotBytes, 4096, 64 << 20, &slot));
  s.slotBytes = static_cast<size_t>(slot);
  int directMin = 0;
  BRAID_TRY(readInt(env::kBraidIbDirectMinBytes, 0, INT32_MAX, &directMin));
  s.directMinBytes = static_cast<size_t>(directMin);
  *out = s;
  return Status::Ok();
}

class IbTransport final : public Transport {
 public:
  IbTransport(std::shared_ptr<Device> device, const Settings& settings)
      : device_(std::move(device)),
        settings_(settings),
        regions_(device_ ? std::make_shared<ib::MemoryRegions>(device_) : nullptr) {}

  std::string_view name() const override { return "ib"; }
  void advertise(PeerInfo* self) const override { self->ibPorts = device_ ? 1 : 0; }
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return device_ && self.ibPorts > 0 && peer.ibPorts > 0;
  }
  // The port's rate where it reports one; 2 us a message, the order of a verbs write's latency
  // on hardware.
  LinkCost linkCost() const override {
    const double gbps = device_ && device_->port.gbps > 0 ? device_->port.gbps : 100;
    return {2.0, 1.0 / (gbps * 125.0)};
  }

  // Any buffer can be registered (ncclCommRegister): one memory region on the device each.
  Status registerMemory(const void* base, size_t bytes, MemoryHandle* handle) override {
    if (!regions_) {
      *handle = {};
      return Status::Ok();
    }
    return regions_->add(base, bytes, handle);
  }
  void deregisterMemory(const MemoryHandle& handle) override {
    if (regions_) regions_->remove(handle);
  }

  Status listen(const PeerInfo& /*self*/, const PeerInfo& peer, Blob* handle) override {
    if (!device_) return systemError("ib: no RDMA port to listen on for rank %d", peer.rank);
    std::unique_ptr<Connection> c;
    BRAID_TRY(Connection::create(device_, settings_, peer.rank, &c));
    const Handle h = c->handle();
    handle->resize(sizeof h);
    std::memcpy(handle->data(), &h, sizeof h);
    std::lock_guard<std::mutex> lock(mu_);
    pending_[peer.rank] = std::move(c);
    return Status::Ok();
  }

  Status connect(const PeerInfo& /*self*/, const PeerInfo& peer, const Blob& peerHandle,
                 const Waiter& /*waiter*/, std::unique_ptr<Endpoint>* endpoint) override {
    Handle h;
    if (peerHandle.size() != sizeof h)
      return invalidArgument(
          "ib: rank %d's connection handle has %zu bytes, not %zu: not an ib "
          "handle of this Braid",
          peer.rank, peerHandle.size(), sizeof h);
    std::memcpy(&h, peerHandle.data(), sizeof h);
    if (h.magic != Handle::kMagic || h.version != Handle::kVersion)
      return invalidArgument("ib: rank %d's connection handle is not an ib handle of this Braid",
                             peer.rank);
    if (h.qps != static_cast<uint32_t>(settings_.qps) ||
        h.slots != static_cast<uint32_t>(settings_.slots) || h.slotBytes != settings_.slotBytes)
      return invalidArgument(
          "ib: rank %d uses %u queue pairs of %u x %llu-byte slots, this rank "
          "%d of %d x %zu: set NCCL_IB_QPS_PER_CONNECTION and "
          "BRAID_IB_SLOT_BYTES alike on every rank",
          peer.rank, h.qps, h.slots, static_cast<unsigned long long>(h.slotBytes), settings_.qps,
          settings_.slots, settings_.slotBytes);
    if (h.mtu < IBV_MTU_256 || h.mtu > IBV_MTU_4096 || h.roce != (device_->port.roce ? 1 : 0))
      return invalidArgument("ib: rank %d's port (%s, MTU code %u) cannot reach this one (%s)",
                             peer.rank, h.roce ? "RoCE" : "InfiniBand", h.mtu,
                             device_->port.describe().c_str());
    std::unique_ptr<Connection> c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.find(peer.rank);
      if (it == pending_.end())
        return invalidUsage("ib: connect to rank %d before listening for it", peer.rank);
      c = std::move(it->second);
      pending_.erase(it);
    }
    BRAID_TRY(c->connect(h));
    *endpoint = std::make_unique<IbEndpoint>(std::move(c), peer.rank, regions_);
    return Status::Ok();
  }

 private:
  std::shared_ptr<Device> device_;
  const Settings settings_;
  // Shared with the endpoints, which may outlive the transport.
  std::shared_ptr<ib::MemoryRegions> regions_;
  std::mutex mu_;
  std::map<int, std::unique_ptr<Connection>> pending_;
};

std::once_flag gLogged;

// The process's device as the environment asks; null, with `why`, where there is none.
std::shared_ptr<Device> openFromEnv(const ib::HcaFilter& filter, std::string* why) {
  if (env::getInt(env::kNcclIbDisable) != 0) {
    *why = "NCCL_IB_DISABLE is set";
    return nullptr;
  }
  std::shared_ptr<Device> device;
  Status st = ib::openDevice(filter, static_cast<int>(env::getInt(env::kNcclIbGidIndex)), &device);
  if (!st.ok()) *why = st.message();
  return device;
}

Status filterFromEnv(ib::HcaFilter* out) {
  const char* hca = env::get(env::kNcclIbHca);
  return ib::parseHcaFilter(hca ? hca : "", out);
}

Status createIbTransport(std::unique_ptr<Transport>* out) {
  Settings settings;
  BRAID_TRY(settingsFromEnv(&settings));
  ib::HcaFilter filter;
  BRAID_TRY(filterFromEnv(&filter));
  std::string why;
  std::shared_ptr<Device> device = openFromEnv(filter, &why);
  std::call_once(gLogged, [&] {
    if (device)
      BRAID_INFO(kNet, "NET/IB: using %s", device->port.describe().c_str());
    else
      BRAID_INFO(kNet, "NET/IB: off (%s)", why.c_str());
  });
  // Asked for by name, with nothing to fall back on between hosts: say why it cannot serve.
  const char* list = env::get(env::kBraidTransports);
  if (!device && list && *list && transportListAllows(list, "ib") &&
      !transportListAllows(list, "tcp"))
    return systemError(
        "BRAID_TRANSPORTS=%s asks for the ib transport, but no RDMA port can be "
        "used: %s",
        list, why.c_str());
  *out = std::make_unique<IbTransport>(std::move(device), settings);
  return Status::Ok();
}

const env::Var* const kIbVariables[] = {&env::kNcclIbDisable,
                                        &env::kNcclIbHca,
                                        &env::kNcclIbGidIndex,
                                        &env::kNcclIbTc,
                                        &env::kNcclIbSl,
                                        &env::kNcclIbTimeout,
                                        &env::kNcclIbRetryCnt,
                                        &env::kNcclIbQpsPerConnection,
                                        &env::kNcclIbPkey,
                                        &env::kBraidIbSlotBytes,
                                        &env::kBraidIbDirectMinBytes};

}  // namespace

bool ibPortAvailable() {
  ib::HcaFilter filter;
  std::string why;
  return filterFromEnv(&filter).ok() && openFromEnv(filter, &why) != nullptr;
}

const TransportEntry kIbTransport = {"ib", createIbTransport, kIbVariables};

}  // namespace braid::transport
