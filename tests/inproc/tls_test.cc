// TLS on net::Socket (base/net/tls.h): both ends of socket pairs driven from one thread, so
// every would-block path of the non-blocking handshake and record layer runs. The key, the
// wrong key and plaintext on either side; large transfers whose iovecs change shape between
// calls (a record that would block must be offered again from the stage).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/net/socket.h"
#include "base/net/tls.h"

namespace braid::net {
namespace {

constexpr const char* kKey = "0123456789abcdef0123456789abcdef-test-key";
constexpr const char* kOtherKey = "fedcba9876543210fedcba9876543210-other-key";

struct Pair {
  Fd a, b;
};

// A connected pair with small kernel buffers, so that large transfers block often.
Pair socketPair(int bufferBytes = 64 << 10) {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  for (int fd : sv) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof(bufferBytes));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufferBytes, sizeof(bufferBytes));
  }
  return {Fd(sv[0]), Fd(sv[1])};
}

Socket openWith(const char* key, Fd fd, Socket::Role role) {
  EXPECT_TRUE(setEncryption(key ? kEncryptionPsk : kEncryptionNone, key).ok());
  Socket s;
  Status st = Socket::open(std::move(fd), role, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  return s;
}

// Steps both handshakes until both are done or one failed; returns both outcomes.
void handshakeBoth(Socket& c, Socket& s, Status* client, Status* server) {
  bool cd = false, sd = false;
  *client = Status::Ok();
  *server = Status::Ok();
  for (int i = 0; i < 10000 && !(cd && sd); ++i) {
    if (!cd && client->ok()) *client = c.handshakeStep(&cd);
    if (!sd && server->ok()) *server = s.handshakeStep(&sd);
    if (!client->ok() && !server->ok()) return;
    if ((!client->ok() && sd) || (!server->ok() && cd)) return;
    if (!client->ok() || !server->ok()) {
      // The other side learns of the failure from the alert or the close that follows.
      if (i > 200) return;
    }
    usleep(100);
  }
}

class Tls : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(setEncryption(kEncryptionNone, nullptr).ok()); }
};

TEST_F(Tls, EnvironmentKeyIsReadAndValidated) {
  // Without a setEncryption call the environment decides. Declared first: every test's
  // TearDown calls setEncryption, after which the environment is not read.
  setenv("BRAID_TLS_PSK", "too short", 1);
  bool on = false;
  Status st = encryptionEnabled(&on);
  unsetenv("BRAID_TLS_PSK");
  // Another test of this binary may have called setEncryption first (which wins): then the
  // environment is not read at all.
  if (st.ok()) GTEST_SKIP() << "setEncryption already decided for this process";
  EXPECT_NE(st.message().find("BRAID_TLS_PSK is 9 bytes"), std::string::npos) << st.message();
}

TEST_F(Tls, KeysAreValidatedNamingTheArgument) {
  Status st = setEncryption(kEncryptionPsk, nullptr);
  EXPECT_EQ(st.code(), ncclInvalidArgument);
  EXPECT_NE(st.message().find("psk is null"), std::string::npos) << st.message();
  st = setEncryption(kEncryptionPsk, "");
  EXPECT_NE(st.message().find("psk is empty"), std::string::npos) << st.message();
  st = setEncryption(kEncryptionPsk, "short key");
  EXPECT_NE(st.message().find("psk is 9 bytes: a pre-shared key needs at least 32"),
            std::string::npos)
      << st.message();
  st = setEncryption(7, kKey);
  EXPECT_NE(st.message().find("mode 7 is neither NONE (0) nor PSK (1)"), std::string::npos)
      << st.message();
  EXPECT_TRUE(setEncryption(kEncryptionPsk, kKey).ok());
  bool on = false;
  ASSERT_TRUE(encryptionEnabled(&on).ok());
  EXPECT_TRUE(on);
  EXPECT_TRUE(setEncryption(kEncryptionNone, nullptr).ok());
  ASSERT_TRUE(encryptionEnabled(&on).ok());
  EXPECT_FALSE(on);
}

TEST_F(Tls, HandshakeThenBytesBothWays) {
  Pair p = socketPair();
  Socket c = openWith(kKey, std::move(p.a), Socket::Role::Client);
  Socket s = openWith(kKey, std::move(p.b), Socket::Role::Server);
  EXPECT_TRUE(c.encrypted() && s.encrypted());
  Status cs, ss;
  handshakeBoth(c, s, &cs, &ss);
  ASSERT_TRUE(cs.ok()) << cs.message();
  ASSERT_TRUE(ss.ok()) << ss.message();
  const Waiter w(10000, nullptr);
  ASSERT_TRUE(sendAll(c, "ping", 4, w).ok());
  char buf[4];
  ASSERT_TRUE(recvAll(s, buf, 4, w).ok());
  EXPECT_EQ(std::string(buf, 4), "ping");
  ASSERT_TRUE(sendAll(s, "pong", 4, w).ok());
  ASSERT_TRUE(recvAll(c, buf, 4, w).ok());
  EXPECT_EQ(std::string(buf, 4), "pong");
  // A peer that goes away reads as closed.
  c.reset();
  ssize_t n = -1;
  for (int i = 0; i < 1000 && n < 0; ++i) {
    n = s.recv(buf, sizeof(buf));
    if (n < 0) usleep(1000);
  }
  EXPECT_EQ(n, 0);
}

TEST_F(Tls, WrongKeyIsRefusedOnBothSidesAndNoByteArrives) {
  Pair p = socketPair();
  Socket c = openWith(kKey, std::move(p.a), Socket::Role::Client);
  Socket s = openWith(kOtherKey, std::move(p.b), Socket::Role::Server);
  // The client's data waits behind its handshake; it never reaches the server.
  const char secret[] = "must not arrive";
  EXPECT_LT(c.send(secret, sizeof(secret)), 0);
  Status cs, ss;
  handshakeBoth(c, s, &cs, &ss);
  ASSERT_FALSE(ss.ok());
  EXPECT_NE(ss.message().find("wrong pre-shared key?"), std::string::npos) << ss.message();
  EXPECT_NE(ss.message().find("TLS with "), std::string::npos) << ss.message();
  ASSERT_FALSE(cs.ok());
  EXPECT_NE(cs.message().find("wrong pre-shared key"), std::string::npos) << cs.message();
  char buf[64];
  EXPECT_LT(s.recv(buf, sizeof(buf)), 0);
  EXPECT_EQ(errno, EPROTO);
  EXPECT_NE(s.errorText(EPROTO).find("wrong pre-shared key?"), std::string::npos);
}

TEST_F(Tls, PlaintextClientIsRefused) {
  Pair p = socketPair();
  Socket c(std::move(p.a));  // plaintext
  Socket s = openWith(kKey, std::move(p.b), Socket::Role::Server);
  // Something shaped like a Braid hello: a magic, then a rank.
  const uint8_t hello[16] = {0x5a, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 1, 0, 0, 0};
  ASSERT_TRUE(sendAll(c, hello, sizeof(hello), Waiter(5000, nullptr)).ok());
  char buf[16];
  ssize_t n = -1;
  int err = 0;
  for (int i = 0; i < 1000; ++i) {
    n = s.recv(buf, sizeof(buf));
    err = errno;
    if (n >= 0 || err != EAGAIN) break;
    usleep(1000);
  }
  EXPECT_EQ(n, -1);
  EXPECT_EQ(err, EPROTO);
  EXPECT_NE(s.errorText(err).find("peer sent plaintext, not TLS"), std::string::npos)
      << s.errorText(err);
}

TEST_F(Tls, PlaintextServerIsRefused) {
  // A plaintext Braid root answers a stranger with a refusal that echoes its first 8 bytes.
  Pair p = socketPair();
  Socket c = openWith(kKey, std::move(p.a), Socket::Role::Client);
  Socket s(std::move(p.b));  // plaintext
  bool done = false;
  ASSERT_TRUE(c.handshakeStep(&done).ok());  // the ClientHello goes out
  EXPECT_FALSE(done);
  uint8_t got[8];
  ASSERT_TRUE(recvAll(s, got, sizeof(got), Waiter(5000, nullptr)).ok());
  std::vector<uint8_t> reply(got, got + 8);
  const char text[] = "\x01\x00\x00\x00wrong magic: refused";
  reply.insert(reply.end(), text, text + sizeof(text));
  ASSERT_TRUE(sendAll(s, reply.data(), reply.size(), Waiter(5000, nullptr)).ok());
  s.reset();
  Status st = c.handshake(Waiter(5000, nullptr));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("plaintext"), std::string::npos) << st.message();
}

TEST_F(Tls, ServerThatClosesFailsTheClientsHandshake) {
  Pair p = socketPair();
  Socket c = openWith(kKey, std::move(p.a), Socket::Role::Client);
  bool done = false;
  ASSERT_TRUE(c.handshakeStep(&done).ok());
  p.b.reset();
  Status st = c.handshake(Waiter(5000, nullptr));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("during the TLS handshake"), std::string::npos) << st.message();
}

TEST_F(Tls, HandshakeIsBoundedByTheWaiter) {
  Pair p = socketPair();  // nobody answers at the other end
  Socket c = openWith(kKey, std::move(p.a), Socket::Role::Client);
  Status st = c.handshake(Waiter(200, nullptr));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("TLS handshake with"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("timeout"), std::string::npos) << st.message();
}

// Moves `total` bytes one way with sendv/recvv, both non-blocking from one thread, cutting the
// data into iovecs of changing shapes on each call.
void transfer(Socket& from, Socket& to, size_t total) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> src(total), dst(total, 0);
  for (size_t i = 0; i < total; i += 8) {
    const uint64_t v = rng();
    std::memcpy(src.data() + i, &v, std::min<size_t>(8, total - i));
  }
  size_t sent = 0, got = 0;
  const size_t cuts[] = {1, 16, 100, 4095, 16384, 16385, 70000, 1 << 20};
  size_t calls = 0;
  for (int idle = 0; (sent < total || got < total) && idle < 20000;) {
    bool moved = false;
    if (sent < total) {
      iovec iov[4];
      size_t count = 0, at = sent;
      for (; count < 4 && at < total; ++count) {
        const size_t len = std::min(cuts[(calls + count) % 8], total - at);
        iov[count] = {src.data() + at, len};
        at += len;
      }
      ++calls;
      const ssize_t n = from.sendv(iov, count);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        moved = true;
      } else {
        ASSERT_EQ(errno, EAGAIN) << from.errorText(errno);
      }
    }
    if (got < total) {
      iovec iov[3];
      size_t count = 0, at = got;
      for (; count < 3 && at < total; ++count) {
        const size_t len = std::min(cuts[(calls * 3 + count) % 8], total - at);
        iov[count] = {dst.data() + at, len};
        at += len;
      }
      const ssize_t n = to.recvv(iov, count);
      if (n > 0) {
        got += static_cast<size_t>(n);
        moved = true;
      } else {
        ASSERT_NE(n, 0) << "closed early";
        ASSERT_EQ(errno, EAGAIN) << to.errorText(errno);
        if (!to.pending()) {
          pollfd fds[2] = {{to.fd(), to.pollEvents(POLLIN), 0},
                           {from.fd(), from.pollEvents(POLLOUT), 0}};
          ::poll(fds, 2, 1);
        }
      }
    }
    idle = moved ? 0 : idle + 1;
  }
  ASSERT_EQ(sent, total);
  ASSERT_EQ(got, total);
  EXPECT_TRUE(src == dst);
}

TEST_F(Tls, LargeTransfersThroughTheNonBlockingPath) {
  Pair p = socketPair(32 << 10);
  Socket c = openWith(kKey, std::move(p.a), Socket::Role::Client);
  Socket s = openWith(kKey, std::move(p.b), Socket::Role::Server);
  Status cs, ss;
  handshakeBoth(c, s, &cs, &ss);
  ASSERT_TRUE(cs.ok() && ss.ok()) << cs.message() << ss.message();
  transfer(c, s, (48u << 20) + 13);
  transfer(s, c, (8u << 20) + 5);
}

// Braid's record layer against OpenSSL's, each way, with a KeyUpdate every 7 records: the
// records Braid seals are TLS 1.3's as OpenSSL reads them (its KeyUpdates included), and Braid
// reads OpenSSL's.
TEST_F(Tls, BraidsRecordLayerAndOpenSslsReadEachOther) {
  setRecordsPerKeyForTests(7);
  for (const bool braidClient : {true, false}) {
    Pair p = socketPair(32 << 10);
    setenv("BRAID_TLS_RECORDS", braidClient ? "braid" : "openssl", 1);
    Socket c = openWith(kKey, std::move(p.a), Socket::Role::Client);
    setenv("BRAID_TLS_RECORDS", braidClient ? "openssl" : "braid", 1);
    Socket s = openWith(kKey, std::move(p.b), Socket::Role::Server);
    unsetenv("BRAID_TLS_RECORDS");
    Status cs, ss;
    handshakeBoth(c, s, &cs, &ss);
    ASSERT_TRUE(cs.ok() && ss.ok()) << cs.message() << ss.message();
    EXPECT_EQ(c.tls()->ownRecords(), braidClient);
    EXPECT_EQ(s.tls()->ownRecords(), !braidClient);
    // Who seals, for the log: Braid or OpenSSL over a socket pair; where the kernel has TLS,
    // OpenSSL, which hands the kernel only TCP sockets (tests/rdma's ktls runs this there).
    std::printf("records: client sealed by %s, opened by %s; server sealed by %s, opened by %s\n",
                c.tls()->whoSeals(), c.tls()->whoOpens(), s.tls()->whoSeals(), s.tls()->whoOpens());
    transfer(c, s, (3u << 20) + 7);
    transfer(s, c, (2u << 20) + 1);
    // Either one's close_notify reads as a close on the other.
    c.reset();
    char b;
    ssize_t n = -1;
    for (int i = 0; i < 1000 && n < 0; ++i) {
      n = s.recv(&b, 1);
      if (n < 0) usleep(1000);
    }
    EXPECT_EQ(n, 0) << s.errorText(errno);
  }
  setRecordsPerKeyForTests(0);
}

// Moves what `from` has to `to`, changing the byte at offset `flip` of the stream (counted in
// *seen) if it passes now.
void relay(int from, int to, size_t* seen, size_t flip) {
  uint8_t buf[65536];
  const ssize_t n = ::recv(from, buf, sizeof(buf), MSG_DONTWAIT);
  if (n <= 0) return;
  if (flip >= *seen && flip < *seen + static_cast<size_t>(n)) buf[flip - *seen] ^= 0x20;
  *seen += static_cast<size_t>(n);
  for (ssize_t off = 0; off < n;) {
    const ssize_t w = ::send(to, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
    ASSERT_GT(w, 0) << std::strerror(errno);
    off += w;
  }
}

// A byte changed on the way after the handshake: the receiver fails with TLS's verdict instead
// of handing over the changed bytes, whichever record layer opens them.
TEST_F(Tls, AByteChangedOnTheWayFailsTheReceiverSayingSo) {
  for (const char* layer : {"braid", "openssl"}) {
    setenv("BRAID_TLS_RECORDS", layer, 1);
    Pair near = socketPair(1 << 20), far = socketPair(1 << 20);
    Socket c = openWith(kKey, std::move(near.a), Socket::Role::Client);
    Socket s = openWith(kKey, std::move(far.b), Socket::Role::Server);
    unsetenv("BRAID_TLS_RECORDS");
    size_t up = 0, down = 0;  // bytes relayed each way
    bool cd = false, sd = false;
    for (int i = 0; i < 10000 && !(cd && sd); ++i) {
      if (!cd) ASSERT_TRUE(c.handshakeStep(&cd).ok());
      if (!sd) ASSERT_TRUE(s.handshakeStep(&sd).ok());
      relay(near.b.get(), far.a.get(), &up, SIZE_MAX);
      relay(far.a.get(), near.b.get(), &down, SIZE_MAX);
    }
    ASSERT_TRUE(cd && sd);
    std::vector<uint8_t> data(40000, 0x11), got(data.size());
    const Waiter w(10000, nullptr);
    ASSERT_TRUE(sendAll(c, data.data(), data.size(), w).ok());
    relay(near.b.get(), far.a.get(), &up, up + 20000);  // inside the second record
    ssize_t n = 0;
    size_t total = 0;
    for (int i = 0; i < 1000 && n >= 0; ++i) {
      n = s.recv(got.data() + total, got.size() - total);
      if (n > 0) total += static_cast<size_t>(n);
      if (n < 0 && errno == EAGAIN) {
        n = 0;
        usleep(1000);
      }
    }
    ASSERT_LT(n, 0) << layer << ": the changed record was accepted";
    EXPECT_EQ(errno, EPROTO) << layer;
    EXPECT_LE(total, 16384u) << layer << ": bytes of the changed record reached the caller";
    const std::string text = s.errorText(EPROTO);
    std::printf("%s: %s\n", layer, text.c_str());
    EXPECT_TRUE(text.find("failed authentication") != std::string::npos ||
                text.find("bad record mac") != std::string::npos)
        << layer << ": " << text;
  }
}

TEST_F(Tls, AnUnknownRecordLayerIsRefusedNamingTheVariable) {
  Pair p = socketPair();
  ASSERT_TRUE(setEncryption(kEncryptionPsk, kKey).ok());
  setenv("BRAID_TLS_RECORDS", "kernel", 1);
  Socket s;
  const Status st = Socket::open(std::move(p.a), Socket::Role::Client, &s);
  unsetenv("BRAID_TLS_RECORDS");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("BRAID_TLS_RECORDS is 'kernel': braid or openssl"), std::string::npos)
      << st.message();
}

TEST_F(Tls, PlaintextSocketsStayPlaintext) {
  Pair p = socketPair();
  Socket c = openWith(nullptr, std::move(p.a), Socket::Role::Client);
  Socket s = openWith(nullptr, std::move(p.b), Socket::Role::Server);
  EXPECT_FALSE(c.encrypted() || s.encrypted());
  transfer(c, s, (4u << 20) + 3);
}

}  // namespace
}  // namespace braid::net
