#include "transport/shm/shm_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "base/env.h"
#include "base/log.h"
#include "transport/shm/ring_endpoint.h"

namespace braid::env {
const Var kNcclShmDisable = {"NCCL_SHM_DISABLE", "0",
                             "1: never use shared memory between processes; use TCP"};
const Var kBraidShmBuffsize = {"BRAID_SHM_BUFFSIZE", "1048576",
                               "bytes of each shared-memory ring between two local ranks"};
const Var kBraidShmCmaMinBytes = {
    "BRAID_SHM_CMA_MIN_BYTES", "0",
    "between processes, messages from this size are read once with process_vm_readv where the "
    "kernel allows it; smaller ones go through the ring. 0 (default): always the ring, which was "
    "faster at every size where measured (bench/micro/shm_pingpong)"};
const Var kBraidShmZerocopyMinBytes = {
    "BRAID_SHM_ZEROCOPY_MIN_BYTES", "262144",
    "between processes, messages from this size whose buffer lies in ncclMemAlloc memory go by "
    "reference: the receiver maps the sender's pages and copies or reduces straight out of them "
    "(0: never)"};
}  // namespace braid::env

namespace braid::transport {
namespace {

constexpr uint64_t kBlobMagic = 0x6272616964534842ull;  // "braidSHB"
constexpr size_t kNameBytes = 96;

// Fixed layout: both sides run the same build (a version mismatch is caught by the magic).
struct ShmBlob {
  uint64_t magic;
  int32_t pid;
  uint32_t reserved;
  uint64_t segmentBytes;
  uint64_t probeAddr;  // a word in the listener's memory the connector tries to read directly
  uint64_t probeValue;
  char name[kNameBytes];
};

// What the probe reads. Lives as long as the process, so a late connect still finds it.
const uint64_t gProbeWord = 0x5ca1ab1e0ddba11ull ^ static_cast<uint64_t>(getpid());

class ShmPeer final : public PeerAccess {
 public:
  // `watch`: the pid names the peer in our pid namespace (see probePeer).
  ShmPeer(pid_t pid, bool watch) : pid_(pid), watch_(watch) {
    // A pidfd becomes readable when the process exits, zombie or not, and cannot be confused by
    // a recycled pid; kill(pid, 0) is the fallback on kernels without it.
    if (watch_) pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  }
  ~ShmPeer() override {
    if (pidfd_ >= 0) close(pidfd_);
    for (auto& [id, m] : maps_) munmap(m.ptr, m.size);
  }

  // The peer's shared allocation, mapped through its memfd (/proc/<pid>/fd/<fd>) on first use
  // and kept: allocation ids are never reused, so a cached mapping is never stale.
  const void* mapped(const MemoryHandle& region, uint64_t addr) override {
    if (addr < region.base || addr >= region.base + region.size) return nullptr;
    auto it = maps_.find(region.id);
    if (it == maps_.end()) {
      if (maps_.size() >= kMaxMaps) {  // forget the oldest allocation's mapping
        munmap(maps_.begin()->second.ptr, maps_.begin()->second.size);
        maps_.erase(maps_.begin());
      }
      const std::string path =
          strfmt("/proc/%d/fd/%lld", static_cast<int>(pid_), static_cast<long long>(region.key));
      int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return nullptr;
      void* p = mmap(nullptr, region.size, PROT_READ, MAP_SHARED, fd, 0);
      close(fd);
      if (p == MAP_FAILED) return nullptr;
      BRAID_INFO(
          kShm, "SHM: mapped pid %d's shared allocation %llu (%llu bytes) for single-copy receives",
          static_cast<int>(pid_), static_cast<unsigned long long>(region.id),
          static_cast<unsigned long long>(region.size));
      it = maps_.emplace(region.id, Mapping{static_cast<char*>(p), region.size}).first;
    }
    return it->second.ptr + (addr - region.base);
  }

  Status read(uint64_t addr, void* dst, size_t n) override {
    while (n > 0) {
      iovec local{dst, n}, remote{reinterpret_cast<void*>(addr), n};
      ssize_t got = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
      if (got <= 0) {
        int err = got < 0 ? errno : EFAULT;
        if (err == EINTR) continue;
        return remoteError("process_vm_readv of %zu bytes from pid %d failed: %s", n,
                           static_cast<int>(pid_), std::strerror(err));
      }
      dst = static_cast<char*>(dst) + got;
      addr += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
    return Status::Ok();
  }

  bool gone() override {
    if (!watch_) return false;
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      return poll(&p, 1, 0) > 0;
    }
    return kill(pid_, 0) != 0 && errno == ESRCH;
  }

  std::string describe() const override { return strfmt("pid %d", static_cast<int>(pid_)); }

 private:
  struct Mapping {
    char* ptr;
    size_t size;
  };
  static constexpr size_t kMaxMaps = 64;
  pid_t pid_;
  bool watch_;
  int pidfd_ = -1;
  std::map<uint64_t, Mapping> maps_;  // by allocation id, oldest first
};

enum class Probe { kVerified, kNotVisible, kUnverified };

// Reads the word the peer published in its handle straight out of its memory. Success proves
// both that the pid is the peer's in our namespace and that process_vm_readv works; ESRCH means
// the pid is not ours to watch (another pid namespace sharing /dev/shm).
Probe probePeer(pid_t pid, uint64_t addr, uint64_t expected) {
  uint64_t got = 0;
  iovec local{&got, sizeof got}, remote{reinterpret_cast<void*>(addr), sizeof got};
  ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (n == static_cast<ssize_t>(sizeof got) && got == expected) return Probe::kVerified;
  const int err = n < 0 ? errno : 0;
  BRAID_INFO(kShm, "SHM: process_vm_readv from pid %d unavailable (%s)", static_cast<int>(pid),
             err ? std::strerror(err) : "wrong data");
  if (err == ESRCH || (err == 0 && kill(pid, 0) != 0)) return Probe::kNotVisible;
  return Probe::kUnverified;
}

class ShmTransport final : public Transport {
 public:
  std::string_view name() const override { return "SHM"; }

  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return env::getInt(env::kNcclShmDisable) != 1 && self.hostHash == peer.hostHash &&
           self.processHash != peer.processHash;
  }

  LinkCost linkCost() const override { return kShmLinkCost; }

  // Memory a peer on this host can map is what ncclMemAlloc hands out (shared_memory.h), each
  // allocation registered from birth: a buffer inside one has that allocation's handle.
  Status registerMemory(const void* base, size_t bytes, MemoryHandle* handle) override {
    if (!findShared(base, bytes, handle)) *handle = {};
    return Status::Ok();
  }

  Status listen(const PeerInfo& self, const PeerInfo& peer, Blob* handle) override {
    return noThrow("SHM listen", [&] { return listenImpl(self, peer, handle); });
  }
  Status connect(const PeerInfo& self, const PeerInfo& peer, const Blob& peerHandle,
                 const Waiter& waiter, std::unique_ptr<Endpoint>* endpoint) override {
    return noThrow("SHM connect", [&] { return connectImpl(self, peer, peerHandle, endpoint); });
  }

  Status finishConnect() override {
    for (auto& weak : created_)
      if (auto seg = weak.lock()) seg->unlink();
    created_.clear();
    return Status::Ok();
  }

 private:
  Status listenImpl(const PeerInfo& self, const PeerInfo& peer, Blob* handle) {
    if (listens_.count(peer.rank))
      return invalidUsage("SHM listen: rank %d already has a pending listen for rank %d", self.rank,
                          peer.rank);
    const size_t capacity = Ring::roundCapacity(
        static_cast<size_t>(std::max<int64_t>(0, env::getInt(env::kBraidShmBuffsize))));
    auto seg = std::make_shared<Segment>();
    const std::string segName = uniqueSegmentName("shm");
    BRAID_TRY(
        Segment::create(segName, Ring::bytesFor(capacity), seg.get()).withContext("SHM listen"));
    Ring ring;
    BRAID_TRY(Ring::init(seg->data(), seg->size(), capacity, &ring));
    ring.ctl()->consumerPid = static_cast<int32_t>(getpid());

    ShmBlob blob{};
    blob.magic = kBlobMagic;
    blob.pid = static_cast<int32_t>(getpid());
    blob.segmentBytes = seg->size();
    blob.probeAddr = reinterpret_cast<uint64_t>(&gProbeWord);
    blob.probeValue = gProbeWord;
    std::snprintf(blob.name, sizeof blob.name, "%s", segName.c_str());
    handle->assign(reinterpret_cast<const uint8_t*>(&blob),
                   reinterpret_cast<const uint8_t*>(&blob) + sizeof blob);
    listens_[peer.rank] = seg;
    created_.push_back(seg);
    BRAID_INFO(kShm, "SHM: rank %d listens for rank %d on /dev/shm/%s (%zu KiB ring)", self.rank,
               peer.rank, segName.c_str(), capacity >> 10);
    return Status::Ok();
  }

  // Needs nothing from the peer beyond its handle, so it never waits.
  Status connectImpl(const PeerInfo& self, const PeerInfo& peer, const Blob& peerHandle,
                     std::unique_ptr<Endpoint>* endpoint) {
    ShmBlob blob;
    if (peerHandle.size() != sizeof blob)
      return invalidArgument("SHM connect: rank %d's handle has %zu bytes, expected %zu", peer.rank,
                             peerHandle.size(), sizeof blob);
    std::memcpy(&blob, peerHandle.data(), sizeof blob);
    if (blob.magic != kBlobMagic || blob.pid <= 0 || blob.name[kNameBytes - 1] != '\0' ||
        std::strncmp(blob.name, "braid-", 6) != 0 || std::strchr(blob.name, '/') ||
        blob.segmentBytes < Ring::bytesFor(Ring::kAlign) || blob.segmentBytes > (size_t{1} << 36))
      return invalidArgument("SHM connect: rank %d's handle is not a Braid SHM handle", peer.rank);
    auto it = listens_.find(peer.rank);
    if (it == listens_.end())
      return invalidUsage("SHM connect: rank %d connects to rank %d without listening first",
                          self.rank, peer.rank);

    auto tx = std::make_shared<Segment>();
    BRAID_TRY(Segment::open(blob.name, blob.segmentBytes, tx.get()).withContext("SHM connect"));
    // Nobody else will open it: remove the name now so that even a crash cannot leave it behind.
    shm_unlink((std::string("/") + blob.name).c_str());

    std::shared_ptr<Segment> rx = it->second;
    Ring rxRing;
    BRAID_TRY(Ring::attach(rx->data(), rx->size(), &rxRing));
    // Tell the peer, which produces into our ring, whether we can read its buffers directly.
    const int64_t directMin = env::getInt(env::kBraidShmCmaMinBytes);
    const Probe probe = probePeer(blob.pid, blob.probeAddr, blob.probeValue);
    const bool direct = directMin > 0 && probe == Probe::kVerified;
    rxRing.ctl()->directOk.store(direct ? Ring::kDirectYes : Ring::kDirectNo,
                                 std::memory_order_release);
    // Mapping the peer's memfds needs the same permission as reading its memory.
    const int64_t zeroCopyMin = env::getInt(env::kBraidShmZerocopyMinBytes);
    rxRing.ctl()->mapOk.store(zeroCopyMin > 0 && probe == Probe::kVerified ? 1 : 0,
                              std::memory_order_release);
    if (probe == Probe::kNotVisible)
      BRAID_INFO(kShm, "SHM: pid %d is not visible here; a dead peer is noticed only if it closed",
                 static_cast<int>(blob.pid));

    RingEndpointConfig config;
    config.txMemory = std::move(tx);
    config.rxMemory = rx;
    config.peer = std::make_unique<ShmPeer>(blob.pid, probe != Probe::kNotVisible);
    config.directMinBytes = directMin > 0 ? static_cast<size_t>(directMin) : 0;
    config.zeroCopyMinBytes = zeroCopyMin > 0 ? static_cast<size_t>(zeroCopyMin) : 0;
    config.registered = findShared;
    config.name = "SHM";
    BRAID_TRY(RingEndpoint::create(std::move(config), endpoint).withContext("SHM connect"));
    listens_.erase(it);
    BRAID_INFO(kShm, "SHM: rank %d connected to rank %d: %s", self.rank, peer.rank,
               (*endpoint)->describe().c_str());
    return Status::Ok();
  }

  std::map<int, std::shared_ptr<Segment>> listens_;  // by peer rank, until connect
  std::vector<std::weak_ptr<Segment>> created_;      // names to unlink at finishConnect
};

}  // namespace

std::unique_ptr<Transport> makeShmTransport() { return std::make_unique<ShmTransport>(); }

namespace {
const env::Var* const kShmVariables[] = {&env::kNcclShmDisable, &env::kBraidShmBuffsize,
                                         &env::kBraidShmCmaMinBytes,
                                         &env::kBraidShmZerocopyMinBytes};
}  // namespace

const TransportEntry kShmTransport = {"shm",
                                      [](std::unique_ptr<Transport>* out) {
                                        *out = makeShmTransport();
                                        return Status::Ok();
                                      },
                                      kShmVariables};

}  // namespace braid::transport
