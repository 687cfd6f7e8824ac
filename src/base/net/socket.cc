#include "base/net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/env.h"
#include "base/log.h"
#include "base/net/tls.h"
#include "base/variables.h"

namespace braid::net {
namespace {

constexpr int kPollSliceMs = 50;

std::string errnoText(int err) { return std::strerror(err); }

Status makeSocket(int family, Fd* fd) {
  int s = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return systemError("socket(): %s", errnoText(errno).c_str());
  fd->reset(s);
  return Status::Ok();
}

// Errors that mean "the listener is not there (yet)": worth another try.
bool retryableConnectError(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ENETUNREACH || err == EHOSTUNREACH ||
         err == ECONNRESET || err == EAGAIN || err == ECONNABORTED;
}

bool isPeerGone(int err) { return err == EPIPE || err == ECONNRESET || err == ENOTCONN; }

}  // namespace

// ---- SocketAddress ----

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
}

socklen_t SocketAddress::length() const {
  if (family() == AF_INET) return sizeof(sockaddr_in);
  if (family() == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

bool SocketAddress::isLoopback() const {
  if (family() == AF_INET) {
    uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr);
    return (a >> 24) == 127;
  }
  if (family() == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr);
  return false;
}

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, host,
              sizeof(host));
    return strfmt("%s:%u", host, port());
  }
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, host,
              sizeof(host));
    return strfmt("[%s]:%u", host, port());
  }
  return "<no address>";
}

bool SocketAddress::operator==(const SocketAddress& other) const {
  uint8_t a[kWireBytes], b[kWireBytes];
  toWire(a);
  other.toWire(b);
  return std::memcmp(a, b, kWireBytes) == 0;
}

SocketAddress SocketAddress::fromSockaddr(const sockaddr* sa, socklen_t len) {
  SocketAddress out;
  if (sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) && len > 0 &&
      len <= static_cast<socklen_t>(sizeof(out.storage_))) {
    std::memcpy(&out.storage_, sa, static_cast<size_t>(len));
  }
  return out;
}

void SocketAddress::toWire(uint8_t* wire) const {
  std::memset(wire, 0, kWireBytes);
  uint16_t fam = family() == AF_INET ? 4 : family() == AF_INET6 ? 6 : 0;
  wire[0] = static_cast<uint8_t>(fam);
  wire[1] = static_cast<uint8_t>(fam >> 8);
  uint16_t p = port();
  wire[2] = static_cast<uint8_t>(p >> 8);
  wire[3] = static_cast<uint8_t>(p);
  if (family() == AF_INET)
    std::memcpy(wire + 4, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, 4);
  if (family() == AF_INET6)
    std::memcpy(wire + 4, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, 16);
}

Status SocketAddress::fromWire(const uint8_t* wire, SocketAddress* out) {
  uint16_t fam = static_cast<uint16_t>(wire[0] | (wire[1] << 8));
  uint16_t p = static_cast<uint16_t>((wire[2] << 8) | wire[3]);
  *out = SocketAddress();
  if (fam == 4) {
    for (size_t i = 8; i < kWireBytes; ++i)
      if (wire[i]) return invalidArgument("%s", "IPv4 address with non-zero padding");
    auto* sin = reinterpret_cast<sockaddr_in*>(&out->storage_);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(p);
    std::memcpy(&sin->sin_addr, wire + 4, 4);
  } else if (fam == 6) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out->storage_);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(p);
    std::memcpy(&sin6->sin6_addr, wire + 4, 16);
  } else {
    return invalidArgument("unknown address family %u", fam);
  }
  return Status::Ok();
}

Status SocketAddress::parse(std::string_view hostPort, SocketAddress* out) {
  std::string host, portText;
  if (!hostPort.empty() && hostPort.front() == '[') {
    size_t close = hostPort.find(']');
    if (close == std::string_view::npos || close + 1 >= hostPort.size() ||
        hostPort[close + 1] != ':')
      return invalidArgument("address '%.*s' is not [v6]:port", int(hostPort.size()),
                             hostPort.data());
    host = std::string(hostPort.substr(1, close - 1));
    portText = std::string(hostPort.substr(close + 2));
  } else {
    size_t colon = hostPort.rfind(':');
    if (colon == std::string_view::npos || hostPort.find(':') != colon)
      return invalidArgument("address '%.*s' is not host:port (IPv6 needs [addr]:port)",
                             int(hostPort.size()), hostPort.data());
    host = std::string(hostPort.substr(0, colon));
    portText = std::string(hostPort.substr(colon + 1));
  }
  if (host.empty())
    return invalidArgument("address '%.*s' has no host", int(hostPort.size()), hostPort.data());
  char* end = nullptr;
  unsigned long port = portText.empty() ? 70000 : std::strtoul(portText.c_str(), &end, 10);
  if (portText.empty() || *end != '\0' || port > 65535)
    return invalidArgument("address '%.*s' has a bad port", int(hostPort.size()), hostPort.data());

  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res)
    return invalidArgument("cannot resolve '%s': %s", host.c_str(), gai_strerror(rc));
  // IPv4 first: a host name with both usually means the IPv4 side is the configured one.
  const addrinfo* pick = nullptr;
  for (const addrinfo* ai = res; ai; ai = ai->ai_next)
    if (ai->ai_family == AF_INET) {
      pick = ai;
      break;
    }
  if (!pick)
    for (const addrinfo* ai = res; ai; ai = ai->ai_next)
      if (ai->ai_family == AF_INET6) {
        pick = ai;
        break;
      }
  if (pick) *out = fromSockaddr(pick->ai_addr, pick->ai_addrlen);
  freeaddrinfo(res);
  if (!out->valid()) return invalidArgument("'%s' has no IPv4 or IPv6 address", host.c_str());
  out->setPort(static_cast<uint16_t>(port));
  return Status::Ok();
}

// ---- interfaces ----

std::vector<Interface> listInterfaces() {
  std::vector<Interface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* ifa = list; ifa; ifa = ifa->ifa_next) {
    if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP)) continue;
    int fam = ifa->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    if (fam == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr)->sin6_addr))
      continue;
    socklen_t len = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    out.push_back({ifa->ifa_name, SocketAddress::fromSockaddr(ifa->ifa_addr, len)});
  }
  freeifaddrs(list);
  return out;
}

bool matchIfname(std::string_view spec, std::string_view name) {
  bool exclude = false, exact = false;
  if (!spec.empty() && spec.front() == '^') {
    exclude = true;
    spec.remove_prefix(1);
  }
  if (!spec.empty() && spec.front() == '=') {
    exact = true;
    spec.remove_prefix(1);
  }
  bool matched = false;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    if (exact ? name == item : name.substr(0, item.size()) == item) {
      matched = true;
      break;
    }
  }
  return exclude ? !matched : matched;
}

std::vector<Interface> selectInterfaces(const std::vector<Interface>& all, const char* ifname,
                                        int family) {
  auto pick = [&](std::string_view spec) {
    std::vector<Interface> v4, v6;
    for (const Interface& itf : all) {
      if (family != AF_UNSPEC && itf.address.family() != family) continue;
      if (!matchIfname(spec, itf.name)) continue;
      (itf.address.family() == AF_INET ? v4 : v6).push_back(itf);
    }
    v4.insert(v4.end(), v6.begin(), v6.end());
    return v4;
  };
  if (ifname && *ifname) return pick(ifname);
  // Same order of preference as NCCL: InfiniBand IPoIB, then any ordinary interface, then
  // docker bridges, then loopback as the last resort (single-host runs).
  for (const char* spec : {"ib", "^docker,lo", "docker", "lo"}) {
    std::vector<Interface> found = pick(spec);
    if (!found.empty()) return found;
  }
  return {};
}

int parseFamily(const char* value) {
  if (!value || !*value) return AF_UNSPEC;
  if (!std::strcmp(value, "AF_INET")) return AF_INET;
  if (!std::strcmp(value, "AF_INET6")) return AF_INET6;
  BRAID_WARN("NCCL_SOCKET_FAMILY=%s is neither AF_INET nor AF_INET6; ignoring it", value);
  return AF_UNSPEC;
}

Status chooseInterface(Interface* out) {
  const char* ifname = env::get(env::kNcclSocketIfname);
  int family = parseFamily(env::get(env::kNcclSocketFamily));
  std::vector<Interface> found = selectInterfaces(listInterfaces(), ifname, family);
  if (found.empty())
    return systemError(
        "no usable network interface (NCCL_SOCKET_IFNAME=%s NCCL_SOCKET_FAMILY=%s)",
        ifname ? ifname : "<unset>",
        env::get(env::kNcclSocketFamily) ? env::get(env::kNcclSocketFamily) : "<unset>");
  *out = found.front();
  out->address.setPort(0);
  return Status::Ok();
}

// ---- Fd and socket calls ----

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

int pollOne(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  int rc = ::poll(&p, 1, ms);
  return rc > 0 ? p.revents : 0;
}

void tuneForThroughput(int fd, int bufferBytes) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (bufferBytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof(bufferBytes));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufferBytes, sizeof(bufferBytes));
  }
}

Status listenOn(const SocketAddress& addr, Fd* fd, SocketAddress* bound) {
  if (!addr.valid()) return invalidArgument("%s", "listen: no address");
  Fd s;
  BRAID_TRY(makeSocket(addr.family(), &s));
  int one = 1;
  setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s.get(), addr.sa(), addr.length()) != 0)
    return systemError("bind(%s): %s", addr.toString().c_str(), errnoText(errno).c_str());
  if (::listen(s.get(), SOMAXCONN) != 0)
    return systemError("listen(%s): %s", addr.toString().c_str(), errnoText(errno).c_str());
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return systemError("getsockname: %s", errnoText(errno).c_str());
  *bound = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  *fd = std::move(s);
  return Status::Ok();
}

Status connectTo(const SocketAddress& addr, const Waiter& waiter, Fd* fd, int tuneBufferBytes) {
  if (!addr.valid() || addr.port() == 0)
    return invalidArgument("connect: bad address %s", addr.toString().c_str());
  int backoffMs = 1;
  for (;;) {
    BRAID_TRY(waiter.check(strfmt("connect to %s", addr.toString().c_str()).c_str()));
    Fd s;
    BRAID_TRY(makeSocket(addr.family(), &s));
    if (tuneBufferBytes >= 0) tuneForThroughput(s.get(), tuneBufferBytes);
    int err = 0;
    if (::connect(s.get(), addr.sa(), addr.length()) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) {
        int revents = 0;
        while (!(revents = pollOne(s.get(), POLLOUT, kPollSliceMs)))
          BRAID_TRY(waiter.check(strfmt("connect to %s", addr.toString().c_str()).c_str()));
        socklen_t len = sizeof(err);
        if (getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      *fd = std::move(s);
      return Status::Ok();
    }
    if (!retryableConnectError(err))
      return systemError("connect(%s): %s", addr.toString().c_str(), errnoText(err).c_str());
    // Refused: the listener may not be up yet. Back off a little, up to the poll slice.
    std::this_thread::sleep_for(std::chrono::milliseconds(backoffMs));
    backoffMs = std::min(backoffMs * 2, kPollSliceMs);
  }
}

Status acceptOne(int listenFd, const Waiter& waiter, int pollMs, Fd* fd) {
  BRAID_TRY(waiter.check("accept"));
  fd->reset();
  int s = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (s < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    if (!pollOne(listenFd, POLLIN, pollMs)) return Status::Ok();
    s = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  }
  if (s < 0) {
    int err = errno;
    // A connection that died in the backlog, or a transient shortage: not the caller's problem.
    if (err == EAGAIN || err == EWOULDBLOCK || err == ECONNABORTED || err == EINTR || err == EPROTO)
      return Status::Ok();
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
      // The listener stays readable, so without a pause the caller would spin.
      BRAID_WARN("accept: %s; retrying", errnoText(err).c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(pollMs, kPollSliceMs)));
      return Status::Ok();
    }
    return systemError("accept: %s", errnoText(err).c_str());
  }
  fd->reset(s);
  return Status::Ok();
}

namespace {

// A descriptor the caller owns, moved with the plain system calls.
struct RawFd {
  int fd;
  ssize_t send(const void* p, size_t n) { return ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT); }
  ssize_t recv(void* p, size_t n) { return ::recv(fd, p, n, MSG_DONTWAIT); }
  int get() const { return fd; }
  short pollEvents(short events) const { return events; }
  std::string errorText(int err) const { return errnoText(err); }
};

struct SocketIo {
  Socket& s;
  ssize_t send(const void* p, size_t n) { return s.send(p, n); }
  ssize_t recv(void* p, size_t n) { return s.recv(p, n); }
  int get() const { return s.fd(); }
  short pollEvents(short events) const { return s.pollEvents(events); }
  std::string errorText(int err) const { return s.errorText(err); }
};

template <class Io>
Status sendAllOn(Io io, const void* data, size_t bytes, const Waiter& waiter) {
  Waiter w = waiter;
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    ssize_t n = io.send(p, bytes);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      w.restart();
      continue;
    }
    int err = n < 0 ? errno : EAGAIN;
    if (err == EINTR) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) {
      if (isPeerGone(err)) return remoteError("%s", "send: peer closed the connection");
      if (err == EPROTO) return systemError("%s", io.errorText(err).c_str());
      return systemError("send: %s", io.errorText(err).c_str());
    }
    BRAID_TRY(w.check("send"));
    pollOne(io.get(), io.pollEvents(POLLOUT), kPollSliceMs);
  }
  return Status::Ok();
}

template <class Io>
Status recvAllOn(Io io, void* data, size_t bytes, const Waiter& waiter) {
  Waiter w = waiter;
  auto* p = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    ssize_t n = io.recv(p, bytes);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      w.restart();
      continue;
    }
    if (n == 0) return remoteError("%s", "recv: peer closed the connection");
    int err = errno;
    if (err == EINTR) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) {
      if (isPeerGone(err)) return remoteError("%s", "recv: peer reset the connection");
      if (err == EPROTO) return systemError("%s", io.errorText(err).c_str());
      return systemError("recv: %s", io.errorText(err).c_str());
    }
    BRAID_TRY(w.check("recv"));
    pollOne(io.get(), io.pollEvents(POLLIN), kPollSliceMs);
  }
  return Status::Ok();
}

}  // namespace

Status sendAll(int fd, const void* data, size_t bytes, const Waiter& waiter) {
  return sendAllOn(RawFd{fd}, data, bytes, waiter);
}
Status recvAll(int fd, void* data, size_t bytes, const Waiter& waiter) {
  return recvAllOn(RawFd{fd}, data, bytes, waiter);
}
Status sendAll(Socket& s, const void* data, size_t bytes, const Waiter& waiter) {
  return sendAllOn(SocketIo{s}, data, bytes, waiter);
}
Status recvAll(Socket& s, void* data, size_t bytes, const Waiter& waiter) {
  return recvAllOn(SocketIo{s}, data, bytes, waiter);
}

// ---- Socket ----

Socket::Socket() = default;
Socket::Socket(Fd fd) : fd_(std::move(fd)) {}
Socket::Socket(Socket&& other) noexcept = default;
Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    tls_ = std::move(other.tls_);  // the session goes first: it talks over the descriptor
    fd_ = std::move(other.fd_);
  }
  return *this;
}
Socket::~Socket() { reset(); }

void Socket::reset() {
  tls_.reset();
  fd_.reset();
}

Status Socket::open(Fd fd, Role role, Socket* out) {
  std::shared_ptr<const TlsContext> context;
  BRAID_TRY(currentTlsContext(&context));
  Socket s(std::move(fd));
  if (context)
    BRAID_TRY(TlsSession::create(
        std::move(context), s.fd(),
        role == Role::Client ? TlsSession::Role::Client : TlsSession::Role::Server, s.peerName(),
        &s.tls_));
  *out = std::move(s);
  return Status::Ok();
}

ssize_t Socket::sendv(const iovec* iov, size_t count) {
  if (tls_) return tls_->sendv(iov, count);
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = count;
  return ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

ssize_t Socket::recvv(const iovec* iov, size_t count) {
  if (tls_) return tls_->recvv(iov, count);
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = count;
  return ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT);
}

ssize_t Socket::send(const void* data, size_t bytes) {
  if (!tls_) return ::send(fd_.get(), data, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
  iovec iov{const_cast<void*>(data), bytes};
  return tls_->sendv(&iov, 1);
}

ssize_t Socket::recv(void* data, size_t bytes) {
  if (!tls_) return ::recv(fd_.get(), data, bytes, MSG_DONTWAIT);
  iovec iov{data, bytes};
  return tls_->recvv(&iov, 1);
}

void Socket::ackNow() {
  const int one = 1;
  (void)setsockopt(fd_.get(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

bool Socket::pending() const { return tls_ && tls_->pending(); }

bool Socket::peerSentPlaintext() const { return tls_ && tls_->peerSentPlaintext(); }

short Socket::pollEvents(short events) const { return tls_ ? tls_->pollEvents(events) : events; }

std::string Socket::errorText(int err) const {
  if (err == EPROTO && tls_ && !tls_->error().empty()) return tls_->error();
  return errnoText(err);
}

std::string Socket::peerName() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (!fd_.valid() || ::getpeername(fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return "<unknown peer>";
  SocketAddress a = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  return a.valid() ? a.toString() : std::string("<unknown peer>");
}

Status Socket::handshakeStep(bool* done) {
  *done = true;
  if (!tls_) return Status::Ok();
  const int r = tls_->step();
  if (r < 0) return systemError("%s", tls_->error().c_str());
  *done = r == 1;
  return Status::Ok();
}

Status Socket::handshake(const Waiter& waiter) {
  Waiter w = waiter;
  for (;;) {
    bool done = false;
    BRAID_TRY(handshakeStep(&done));
    if (done) return Status::Ok();
    BRAID_TRY(w.check(strfmt("TLS handshake with %s", peerName().c_str()).c_str()));
    pollOne(fd_.get(), pollEvents(POLLIN), kPollSliceMs);
  }
}

Status connectTo(const SocketAddress& addr, const Waiter& waiter, Socket* out,
                 int tuneBufferBytes) {
  Fd fd;
  BRAID_TRY(connectTo(addr, waiter, &fd, tuneBufferBytes));
  Socket s;
  BRAID_TRY(Socket::open(std::move(fd), Socket::Role::Client, &s));
  BRAID_TRY(s.handshake(waiter));
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace braid::net
