// A small socket toolkit shared by the bootstrap and the TCP transport: addresses, interface
// selection (NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY), and socket calls whose every wait is
// bounded by a Waiter. All sockets it creates are non-blocking and close-on-exec.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/waiter.h"

namespace braid::net {

class SocketAddress {
 public:
  // Fixed-size encoding used in unique ids and handles: family (u16, 4 or 6), port (big-endian
  // u16), then 16 address bytes (an IPv4 address uses the first 4).
  static constexpr size_t kWireBytes = 20;

  SocketAddress() = default;
  // "1.2.3.4:5", "[::1]:5", "host:5" (resolved; IPv4 preferred). Port 0 is allowed.
  static Status parse(std::string_view hostPort, SocketAddress* out);
  static SocketAddress fromSockaddr(const sockaddr* sa, socklen_t len);
  static Status fromWire(const uint8_t* wire, SocketAddress* out);
  void toWire(uint8_t* wire) const;

  bool valid() const { return storage_.ss_family == AF_INET || storage_.ss_family == AF_INET6; }
  int family() const { return storage_.ss_family; }
  uint16_t port() const;
  void setPort(uint16_t port);
  bool isLoopback() const;
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t length() const;
  std::string toString() const;  // "1.2.3.4:5" or "[::1]:5"
  bool operator==(const SocketAddress& other) const;

 private:
  sockaddr_storage storage_{};
};

struct Interface {
  std::string name;
  SocketAddress address;
};

// The machine's usable addresses (interfaces up; IPv6 link-local skipped: it needs a scope).
std::vector<Interface> listInterfaces();

// NCCL_SOCKET_IFNAME semantics on a given list, kept pure so tests can feed synthetic lists.
// `ifname` null or empty: automatic (non-loopback, non-docker first, then docker, then lo).
// `family`: AF_INET, AF_INET6 or AF_UNSPEC. Within an interface IPv4 comes before IPv6.
std::vector<Interface> selectInterfaces(const std::vector<Interface>& all, const char* ifname,
                                        int family);
// True when `name` passes the NCCL_SOCKET_IFNAME-style `spec` (prefix list, ^ excludes, = exact).
bool matchIfname(std::string_view spec, std::string_view name);
// Parses NCCL_SOCKET_FAMILY ("AF_INET", "AF_INET6", unset); anything else warns, gives AF_UNSPEC.
int parseFamily(const char* value);
// The interface this process uses for bootstrap and TCP traffic, from the environment.
Status chooseInterface(Interface* out);

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

class TlsSession;  // tls.h

// A connected stream socket, plaintext or TLS (tls.h), as the process's encryption setting was
// when it was opened. Its calls look like the system calls they replace, so callers move bytes
// the same way over either: bytes moved; 0 when the peer closed (receives); -1 with errno
// EAGAIN (would block: poll fd() for pollEvents()), EPIPE / ECONNRESET (peer gone) or EPROTO
// (TLS failed: errorText says why, naming the peer). Non-blocking, never SIGPIPE.
class Socket {
 public:
  enum class Role { Client, Server };  // who dialed: the TLS client is the side that connected

  Socket();
  explicit Socket(Fd fd);  // plaintext whatever the setting (socket pairs in tests)
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  ~Socket();

  // A connected socket under the current setting. With encryption the TLS handshake runs in
  // the first sends and receives, or in handshake().
  static Status open(Fd fd, Role role, Socket* out);

  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  bool encrypted() const { return tls_ != nullptr; }
  const TlsSession* tls() const { return tls_.get(); }  // null: plaintext
  void reset();

  ssize_t sendv(const iovec* iov, size_t count);
  ssize_t recvv(const iovec* iov, size_t count);
  ssize_t send(const void* data, size_t bytes);
  ssize_t recv(void* data, size_t bytes);
  // Acknowledges what the kernel has received now, rather than on its delayed-ACK timer (up to
  // 40 ms on Linux): TCP_QUICKACK, which lasts only until the kernel next decides to delay. A
  // socket that carries data both ways is taken for an interactive one and delays its ACKs, so a
  // sender whose window the unacknowledged tail of its last message fills waits for that timer
  // (docs/net.md). A no-op for anything but TCP.
  void ackNow();
  // Received bytes held in user space (TLS) that a poll on fd() would not announce.
  bool pending() const;
  // The events to poll fd() for when a call would block and the caller wants `events`.
  short pollEvents(short events) const;
  // The text of a failure errno (EPROTO: the TLS failure).
  std::string errorText(int err) const;
  // A TLS socket whose peer spoke plaintext: its bytes are still unread on fd().
  bool peerSentPlaintext() const;
  // The peer's address, for messages ("1.2.3.4:5").
  std::string peerName() const;
  // Completes the TLS handshake (nothing to do in plaintext), bounded by the waiter.
  Status handshake(const Waiter& waiter);
  // One step of it without waiting: true when done (or plaintext), false to be called again
  // once fd() is ready for pollEvents(POLLIN); a failure is the error.
  Status handshakeStep(bool* done);

 private:
  Fd fd_;
  std::unique_ptr<TlsSession> tls_;
};

// Listens on `addr` (port 0: ephemeral); `bound` receives the actual address.
Status listenOn(const SocketAddress& addr, Fd* fd, SocketAddress* bound);
// Connects, retrying refused or unreachable attempts until the waiter stops it (the peer's
// listener may not exist yet). `tuneBufferBytes` >= 0 applies tuneForThroughput before the
// handshake, so that the window scale reflects the buffer size.
Status connectTo(const SocketAddress& addr, const Waiter& waiter, Fd* fd, int tuneBufferBytes = -1);
// The same, then a Socket under the current encryption setting, its handshake done.
Status connectTo(const SocketAddress& addr, const Waiter& waiter, Socket* out,
                 int tuneBufferBytes = -1);
// Waits for one connection; Ok with an invalid fd when `pollMs` passed without one, so callers
// can interleave other work. The waiter is checked first.
Status acceptOne(int listenFd, const Waiter& waiter, int pollMs, Fd* fd);
// Waits up to the waiter's limit for the whole buffer to go out / come in. A closed peer is
// ncclRemoteError.
Status sendAll(int fd, const void* data, size_t bytes, const Waiter& waiter);
Status recvAll(int fd, void* data, size_t bytes, const Waiter& waiter);
Status sendAll(Socket& s, const void* data, size_t bytes, const Waiter& waiter);
Status recvAll(Socket& s, void* data, size_t bytes, const Waiter& waiter);

// Throughput settings for data sockets: TCP_NODELAY and (when > 0) large kernel buffers.
void tuneForThroughput(int fd, int bufferBytes);
// Polls one fd for `events` for at most `ms`; returns the revents (0 on timeout).
int pollOne(int fd, short events, int ms);

// Little helpers for the fixed-layout wire messages both users of this toolkit speak.
inline void putU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint64_t getU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
inline void putU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint32_t getU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace braid::net
