// Threads as ranks over the real bootstrap, on loopback only.
#include "core/bootstrap/bootstrap.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "base/net/socket.h"
#include "common/loopback_only.h"
#include "core/bootstrap/bootstrap_root.h"

namespace braid {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kTimeoutMs = 20000;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Runs fn(rank) on nranks threads; each thread's bootstrap is created first.
void runRanks(const ncclUniqueId& id, int nranks, const std::function<void(Bootstrap&)>& fn,
              int hostRootRank = -1) {
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> b;
      Status st =
          Bootstrap::create(id, r, nranks, r == hostRootRank, Waiter(kTimeoutMs, nullptr), &b);
      ASSERT_TRUE(st.ok()) << "rank " << r << ": " << st.message();
      ASSERT_EQ(b->rank(), r);
      ASSERT_EQ(b->nranks(), nranks);
      fn(*b);
    });
  }
  for (auto& t : threads) t.join();
}

void collectivesAndP2P(Bootstrap& b) {
  const int n = b.nranks(), r = b.rank();
  std::vector<uint64_t> data(n, 0);
  data[r] = 1000 + r;
  ASSERT_TRUE(b.allGather(data.data(), sizeof(uint64_t)).ok());
  for (int i = 0; i < n; ++i) EXPECT_EQ(data[i], 1000u + i) << "rank " << r;
  ASSERT_TRUE(b.barrier().ok());

  // Two tags sent in one order and received in the other exercise the unexpected queue.
  int next = (r + 1) % n, prev = (r + n - 1) % n;
  uint32_t a = 7000 + r, c = 9000 + r;
  ASSERT_TRUE(b.send(next, 7, &a, sizeof(a)).ok());
  ASSERT_TRUE(b.send(next, 9, &c, sizeof(c)).ok());
  ASSERT_TRUE(b.send(r, 3, &a, 0).ok());
  uint32_t got9 = 0, got7 = 0;
  ASSERT_TRUE(b.recv(prev, 9, &got9, sizeof(got9)).ok());
  ASSERT_TRUE(b.recv(prev, 7, &got7, sizeof(got7)).ok());
  ASSERT_TRUE(b.recv(r, 3, nullptr, 0).ok());
  EXPECT_EQ(got7, 7000u + prev);
  EXPECT_EQ(got9, 9000u + prev);
  ASSERT_TRUE(b.barrier().ok());
}

TEST(Bootstrap, CollectivesAndP2PFor1To16Ranks) {
  for (int n : {1, 2, 3, 5, 8, 16}) {
    SCOPED_TRACE(n);
    ncclUniqueId id;
    ASSERT_TRUE(createUniqueId(&id).ok());
    ASSERT_TRUE(validateUniqueId(id).ok());
    runRanks(id, n, collectivesAndP2P);
  }
}

TEST(Bootstrap, WorksOverIpv6Loopback) {
  setenv("NCCL_SOCKET_FAMILY", "AF_INET6", 1);
  ncclUniqueId id;
  Status st = createUniqueId(&id);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_NE(describeUniqueId(id).find("[::1]"), std::string::npos) << describeUniqueId(id);
  runRanks(id, 3, collectivesAndP2P);
  setenv("NCCL_SOCKET_FAMILY", "AF_INET", 1);
}

TEST(Bootstrap, LargeAllGatherDoesNotDeadlock) {
  ncclUniqueId id;
  ASSERT_TRUE(createUniqueId(&id).ok());
  runRanks(id, 4, [](Bootstrap& b) {
    const size_t slice = 3 << 20;  // beyond socket buffers: send and receive must overlap
    std::vector<uint8_t> data(slice * 4);
    for (size_t i = 0; i < slice; ++i) data[b.rank() * slice + i] = uint8_t(i * 7 + b.rank());
    ASSERT_TRUE(b.allGather(data.data(), slice).ok());
    for (int r = 0; r < 4; ++r)
      for (size_t i = 0; i < slice; i += 4099) ASSERT_EQ(data[r * slice + i], uint8_t(i * 7 + r));
  });
}

TEST(Bootstrap, RecvSizeMismatchIsAnError) {
  ncclUniqueId id;
  ASSERT_TRUE(createUniqueId(&id).ok());
  runRanks(id, 2, [](Bootstrap& b) {
    uint64_t v = 5;
    if (b.rank() == 0) {
      ASSERT_TRUE(b.send(1, 1, &v, sizeof(v)).ok());
      ASSERT_TRUE(b.send(1, 2, &v, sizeof(v)).ok());
    } else {
      uint32_t small = 0;
      EXPECT_FALSE(b.recv(0, 1, &small, sizeof(small)).ok());
      ASSERT_TRUE(b.recv(0, 2, &v, sizeof(v)).ok());  // the stream stays in step
      EXPECT_EQ(v, 5u);
    }
  });
}

TEST(Bootstrap, CommIdModeWithRankZeroHostingTheRoot) {
  net::Fd probe;
  net::SocketAddress any, bound;
  ASSERT_TRUE(net::SocketAddress::parse("127.0.0.1:0", &any).ok());
  ASSERT_TRUE(net::listenOn(any, &probe, &bound).ok());
  probe.reset();  // a port that was free a moment ago
  std::string commId = bound.toString();
  ncclUniqueId id, again;
  ASSERT_TRUE(uniqueIdFromCommId(commId.c_str(), &id).ok());
  ASSERT_TRUE(uniqueIdFromCommId(commId.c_str(), &again).ok());
  EXPECT_EQ(std::memcmp(&id, &again, sizeof(id)), 0);
  ASSERT_TRUE(validateUniqueId(id).ok());
  EXPECT_NE(describeUniqueId(id).find(commId), std::string::npos);
  runRanks(id, 3, collectivesAndP2P, /*hostRootRank=*/0);
}

TEST(Bootstrap, NoMatchingInterfaceIsAnError) {
  setenv("NCCL_SOCKET_IFNAME", "=no_such_if0", 1);
  ncclUniqueId id;
  Status st = createUniqueId(&id);
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  EXPECT_EQ(st.code(), ncclSystemError);
  EXPECT_NE(st.message().find("no_such_if0"), std::string::npos) << st.message();
}

TEST(Bootstrap, InvalidIdsAreRejected) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  EXPECT_FALSE(validateUniqueId(id).ok());
  std::mt19937_64 rng(42);
  for (int i = 0; i < 100; ++i) {
    for (auto& c : id.internal) c = char(rng());
    EXPECT_FALSE(validateUniqueId(id).ok());
  }
  ncclUniqueId good;
  ASSERT_TRUE(uniqueIdFromCommId("127.0.0.1:29500", &good).ok());
  ASSERT_TRUE(validateUniqueId(good).ok());
  id = good;
  id.internal[8] = 5;  // address family neither 4 nor 6
  EXPECT_FALSE(validateUniqueId(id).ok());
  id = good;
  id.internal[100] = 1;  // padding
  EXPECT_FALSE(validateUniqueId(id).ok());
  id = good;
  std::memset(id.internal, 0, 8);  // no magic
  EXPECT_FALSE(validateUniqueId(id).ok());
  EXPECT_FALSE(uniqueIdFromCommId("127.0.0.1:0", &id).ok());
  EXPECT_FALSE(uniqueIdFromCommId("nonsense", &id).ok());
  std::unique_ptr<Bootstrap> b;
  std::memset(&id, 0, sizeof(id));
  EXPECT_FALSE(Bootstrap::create(id, 0, 1, false, Waiter(1000, nullptr), &b).ok());
  EXPECT_FALSE(Bootstrap::create(good, 2, 2, false, Waiter(1000, nullptr), &b).ok());
}

net::Fd dialRoot(const ncclUniqueId& id) {
  bootstrap::IdContents c;
  EXPECT_TRUE(bootstrap::decodeUniqueId(id, &c).ok());
  net::Fd fd;
  EXPECT_TRUE(net::connectTo(c.root, Waiter(5000, nullptr), &fd).ok());
  return fd;
}

void sendRaw(int fd, const void* p, size_t n) {
  EXPECT_TRUE(net::sendAll(fd, p, n, Waiter(5000, nullptr)).ok());
}

std::vector<uint8_t> fakeHello(uint64_t magic, uint32_t rank, uint32_t nranks,
                               uint32_t version = bootstrap::kWireVersion) {
  bootstrap::RootHello h;
  h.magic = magic;
  h.version = version;
  h.rank = rank;
  h.nranks = nranks;
  EXPECT_TRUE(net::SocketAddress::parse("127.0.0.1:9", &h.address).ok());
  std::vector<uint8_t> out(bootstrap::kRootHelloBytes);
  bootstrap::encodeRootHello(h, out.data());
  return out;
}

// Reads the root's reply to a hello: Ok for a table, else the refusal's error.
Status readReply(int fd, uint64_t magic, uint32_t nranks) {
  uint8_t header[bootstrap::kRootReplyHeaderBytes];
  BRAID_TRY(net::recvAll(fd, header, sizeof(header), Waiter(10000, nullptr)));
  bootstrap::ReplyHeader h;
  BRAID_TRY(bootstrap::decodeReplyHeader(header, magic, nranks, &h));
  std::vector<uint8_t> body(h.bodyBytes);
  BRAID_TRY(net::recvAll(fd, body.data(), body.size(), Waiter(10000, nullptr)));
  if (h.kind == bootstrap::kReplyRefusal) return bootstrap::decodeRefusal(body.data(), body.size());
  return Status::Ok();
}

TEST(Bootstrap, RootSurvivesGarbageAndStillCompletesQuickly) {
  ncclUniqueId id;
  ASSERT_TRUE(createUniqueId(&id).ok());
  bootstrap::IdContents c;
  ASSERT_TRUE(bootstrap::decodeUniqueId(id, &c).ok());
  const int n = 4;

  std::vector<net::Fd> junk;
  junk.push_back(dialRoot(id));  // sends nothing, stays open throughout
  {
    auto h = fakeHello(c.magic ^ 1, 0, n);  // wrong magic
    net::Fd fd = dialRoot(id);
    sendRaw(fd.get(), h.data(), h.size());
    junk.push_back(std::move(fd));
  }
  {
    auto h = fakeHello(c.magic, 0, n);  // truncated, then closed
    net::Fd fd = dialRoot(id);
    sendRaw(fd.get(), h.data(), 12);
  }
  {
    std::mt19937 rng(7);
    std::vector<uint8_t> noise(4096);
    for (auto& b : noise) b = uint8_t(rng());
    net::Fd fd = dialRoot(id);
    sendRaw(fd.get(), noise.data(), noise.size());
    junk.push_back(std::move(fd));
  }
  {
    std::vector<uint8_t> ones(bootstrap::kRootHelloBytes, 0xff);  // every length field huge
    net::Fd fd = dialRoot(id);
    sendRaw(fd.get(), ones.data(), ones.size());
    junk.push_back(std::move(fd));
  }
  {
    auto h = fakeHello(c.magic ^ 1, 0, n);  // half of a stranger's hello, left open
    net::Fd fd = dialRoot(id);
    sendRaw(fd.get(), h.data(), h.size() / 2);
    junk.push_back(std::move(fd));
  }

  // Ranks 1..3 arrive first, then rank 0.
  auto start = Clock::now();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  auto runRank = [&](int r) {
    std::unique_ptr<Bootstrap> b;
    Status st = Bootstrap::create(id, r, n, false, Waiter(kTimeoutMs, nullptr), &b);
    ASSERT_TRUE(st.ok()) << st.message();
    collectivesAndP2P(*b);
    ok++;
  };
  for (int r = 1; r < n; ++r) threads.emplace_back(runRank, r);
  threads.emplace_back(runRank, 0);
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), n);
  // The silent connection has a 5 s hello deadline; finishing well before it shows the root
  // never waited on it.
  EXPECT_LT(secondsSince(start), 4.0);
}

TEST(Bootstrap, AbortUnblocksCreateWaitingForAMissingRank) {
  setenv("BRAID_BOOTSTRAP_ROOT_TIMEOUT_MS", "1500", 1);
  ncclUniqueId id;
  Status idStatus = createUniqueId(&id);
  unsetenv("BRAID_BOOTSTRAP_ROOT_TIMEOUT_MS");
  ASSERT_TRUE(idStatus.ok());
  std::atomic<bool> abortFlag{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    abortFlag = true;
  });
  auto start = Clock::now();
  std::unique_ptr<Bootstrap> b;
  Status st = Bootstrap::create(id, 0, 2, false, Waiter(0, &abortFlag), &b);
  double took = secondsSince(start);
  aborter.join();
  EXPECT_FALSE(st.ok());
  EXPECT_LT(took, 1.5) << st.message();
  // The abandoned root gives up on its own after its idle timeout.
  auto wait = Clock::now();
  while (bootstrap::liveRoots() > 0 && secondsSince(wait) < 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(bootstrap::liveRoots(), 0);
}

// `n` ranks' bootstraps, created together on threads (a null one where creation failed).
std::vector<std::unique_ptr<Bootstrap>> bootstraps(int n, int64_t timeoutMs) {
  ncclUniqueId id;
  std::vector<std::unique_ptr<Bootstrap>> bs(static_cast<size_t>(n));
  if (!createUniqueId(&id).ok()) return bs;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      Status st = Bootstrap::create(id, r, n, false, Waiter(timeoutMs, nullptr), &bs[r]);
      EXPECT_TRUE(st.ok()) << "rank " << r << ": " << st.message();
    });
  for (auto& t : threads) t.join();
  return bs;
}

TEST(Bootstrap, AbortUnblocksRecvFromASilentPeer) {
  std::vector<std::unique_ptr<Bootstrap>> bs = bootstraps(3, 10000);
  ASSERT_TRUE(bs[0] && bs[1] && bs[2]);

  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    bs[0]->abort();
  });
  auto start = Clock::now();
  uint64_t v;
  Status st = bs[0]->recv(2, 1, &v, sizeof(v));  // rank 2 never connects or sends
  double took = secondsSince(start);
  aborter.join();
  EXPECT_FALSE(st.ok());
  EXPECT_LT(took, 1.3);
  EXPECT_FALSE(bs[0]->barrier().ok());  // and every later call fails too
  // The failed barrier closed rank 0's ring, so rank 1 (its next) learns of it at once.
  Status next = bs[1]->barrier();
  EXPECT_EQ(next.code(), ncclRemoteError) << next.message();
}

size_t openFds() {
  size_t n = 0;
  for (int fd = 0; fd < 4096; ++fd)
    if (fcntl(fd, F_GETFD) >= 0) ++n;
  return n;
}

TEST(Bootstrap, NoThreadOrDescriptorLeaks) {
  auto settle = [] {
    auto start = Clock::now();
    while (bootstrap::liveRoots() > 0 && secondsSince(start) < 10)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  settle();
  size_t before = openFds();
  for (int i = 0; i < 3; ++i) {
    ncclUniqueId id;
    ASSERT_TRUE(createUniqueId(&id).ok());
    runRanks(id, 4, collectivesAndP2P);
  }
  settle();
  EXPECT_EQ(bootstrap::liveRoots(), 0);
  EXPECT_EQ(openFds(), before);
}

TEST(Bootstrap, PeerGoneIsAnErrorNotAHang) {
  ncclUniqueId id;
  ASSERT_TRUE(createUniqueId(&id).ok());
  std::vector<std::unique_ptr<Bootstrap>> bs(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      ASSERT_TRUE(Bootstrap::create(id, r, 2, false, Waiter(0, nullptr), &bs[r]).ok());
    });
  for (auto& t : threads) t.join();
  ASSERT_TRUE(bs[0] && bs[1]);
  uint64_t v = 1;
  ASSERT_TRUE(bs[1]->send(0, 1, &v, sizeof(v)).ok());
  ASSERT_TRUE(bs[0]->recv(1, 1, &v, sizeof(v)).ok());
  bs[1].reset();
  EXPECT_FALSE(bs[0]->recv(1, 2, &v, sizeof(v)).ok());
  EXPECT_FALSE(bs[0]->barrier().ok());
}

// recvUnless: the awaited message, or a stop message from any rank (taken, the awaited one left
// for later), or the timeout, or the awaited peer's connection closing, whichever comes first.
TEST(Bootstrap, RecvUnlessEndsOnTheMessageAStopMessageTheTimeoutOrThePeerGone) {
  std::vector<std::unique_ptr<Bootstrap>> bs = bootstraps(3, kTimeoutMs);
  ASSERT_TRUE(bs[0] && bs[1] && bs[2]);
  constexpr uint64_t kTag = 5, kStop = 6;
  uint64_t v = 0;
  int from = -7;
  std::vector<uint8_t> stop;

  // A stop message from rank 2 ends a wait on rank 1 while rank 1 is still silent.
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const uint32_t word = 0xabcd;
    ASSERT_TRUE(bs[2]->send(0, kStop, &word, sizeof word).ok());
  });
  Status st = bs[0]->recvUnless(1, kTag, &v, sizeof v, kTimeoutMs, kStop, &from, &stop);
  stopper.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(from, 2);
  ASSERT_EQ(stop.size(), sizeof(uint32_t));
  uint32_t word = 0;
  std::memcpy(&word, stop.data(), sizeof word);
  EXPECT_EQ(word, 0xabcdu);

  // The awaited message, also one sent before a second stop message, comes first.
  const uint64_t sent = 42;
  ASSERT_TRUE(bs[1]->send(0, kTag, &sent, sizeof sent).ok());
  ASSERT_TRUE(bs[2]->send(0, kStop, &sent, sizeof sent).ok());
  ASSERT_TRUE(bs[0]->recvUnless(1, kTag, &v, sizeof v, 10000, kStop, &from, &stop).ok());
  EXPECT_EQ(from, -1);
  EXPECT_EQ(v, 42u);
  // The second stop message is still there for the next wait (or poll).
  ASSERT_TRUE(bs[0]->recvUnless(1, kTag, &v, sizeof v, 10000, kStop, &from, &stop).ok());
  EXPECT_EQ(from, 2);

  // Nothing comes: the timeout, named.
  st = bs[0]->recvUnless(1, kTag, &v, sizeof v, 300, kStop, &from, &stop);
  EXPECT_EQ(st.code(), ncclTimeout) << st.message();
  EXPECT_NE(st.message().find("from rank 1"), std::string::npos) << st.message();

  // The awaited rank goes away: an error, though this wait has no timeout.
  bs[1].reset();
  st = bs[0]->recvUnless(1, kTag, &v, sizeof v, 0, kStop, &from, &stop);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(from, -1);
  EXPECT_NE(st.message().find("rank 1"), std::string::npos) << st.message();
}

// A hello the root must refuse, sent before any real rank: the sender reads the reason, and
// the real ranks, whose rendezvous it broke (a hello with the id's magic is one of its ranks),
// fail at once with ncclInvalidUsage naming what the root saw instead of waiting.
void expectRefusalFailsRendezvous(const std::vector<uint8_t>& hello, ncclResult_t senderCode,
                                  const std::string& words) {
  ncclUniqueId id;
  ASSERT_TRUE(createUniqueId(&id).ok());
  bootstrap::IdContents c;
  ASSERT_TRUE(bootstrap::decodeUniqueId(id, &c).ok());
  {
    std::vector<uint8_t> ours = hello;
    net::putU64(ours.data(), c.magic);
    net::Fd fd = dialRoot(id);
    sendRaw(fd.get(), ours.data(), ours.size());
    Status st = readReply(fd.get(), c.magic, 2);
    EXPECT_EQ(st.code(), senderCode) << st.message();
    EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
  }
  for (int r = 0; r < 2; ++r) {
    std::unique_ptr<Bootstrap> b;
    Status st = Bootstrap::create(id, r, 2, false, Waiter(kTimeoutMs, nullptr), &b);
    EXPECT_EQ(st.code(), ncclInvalidUsage) << st.message();
    EXPECT_NE(st.message().find("the rendezvous failed"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
  }
}

TEST(Bootstrap, AnotherBootstrapVersionIsRefusedNamingBoth) {
  expectRefusalFailsRendezvous(fakeHello(0, 0, 2, bootstrap::kWireVersionMarker | 1),
                               ncclInvalidUsage, "version 1");
}

TEST(Bootstrap, ABuildOlderThanTheVersionFieldIsRefusedAsSuch) {
  // Such a hello has the rank id where the version now is.
  expectRefusalFailsRendezvous(fakeHello(0, 0, 2, 1), ncclInvalidUsage,
                               "older than bootstrap versions");
}

TEST(Bootstrap, RankOutOfRangeIsRefusedNamingIt) {
  expectRefusalFailsRendezvous(fakeHello(0, 7, 4), ncclInvalidArgument, "rank 7 of nranks 4");
}

TEST(Bootstrap, AStrangersHelloIsRefusedWithoutFailingTheRendezvous) {
  ncclUniqueId id;
  ASSERT_TRUE(createUniqueId(&id).ok());
  bootstrap::IdContents c;
  ASSERT_TRUE(bootstrap::decodeUniqueId(id, &c).ok());
  auto hello = fakeHello(c.magic ^ 0xff, 0, 2);
  net::Fd fd = dialRoot(id);
  sendRaw(fd.get(), hello.data(), hello.size());
  Status st = readReply(fd.get(), c.magic ^ 0xff, 2);
  EXPECT_EQ(st.code(), ncclInvalidArgument) << st.message();
  EXPECT_NE(st.message().find("magic"), std::string::npos) << st.message();
  runRanks(id, 2, collectivesAndP2P);
}

// Connections a stranger (who does not know the id's magic) opens to a rank's bootstrap
// listener: silent, random bytes, a hello with huge fields, half a hello, a hello of a rank out
// of range followed by a message header claiming 2^62 bytes. Kept open in `junk`.
void throwGarbageAt(const net::SocketAddress& to, uint64_t magic, std::vector<net::Fd>* junk) {
  auto dial = [&] {
    net::Fd fd;
    EXPECT_TRUE(net::connectTo(to, Waiter(5000, nullptr), &fd).ok());
    return fd;
  };
  junk->push_back(dial());  // silent
  std::mt19937 rng(11);
  std::vector<uint8_t> noise(4096);
  for (auto& b : noise) b = uint8_t(rng());
  std::vector<uint8_t> ones(64, 0xff);
  uint8_t half[bootstrap::kPeerHelloBytes / 2] = {1, 2, 3, 4, 5, 6, 7, 8};
  uint8_t outOfRange[bootstrap::kPeerHelloBytes + bootstrap::kMsgHeaderBytes];
  bootstrap::encodePeerHello(magic, 99, bootstrap::ConnKind::P2P, outOfRange);
  bootstrap::encodeMsgHeader(1, uint64_t{1} << 62, outOfRange + bootstrap::kPeerHelloBytes);
  for (auto [p, n] : {std::pair<const uint8_t*, size_t>{noise.data(), noise.size()},
                      {ones.data(), ones.size()},
                      {half, sizeof(half)},
                      {outOfRange, sizeof(outOfRange)}}) {
    net::Fd fd = dial();
    sendRaw(fd.get(), p, n);
    junk->push_back(std::move(fd));
  }
}

TEST(Bootstrap, GarbageAtRanksListenersDuringInitChangesNothing) {
  ncclUniqueId realId;
  ASSERT_TRUE(createUniqueId(&realId).ok());
  bootstrap::IdContents root;
  ASSERT_TRUE(bootstrap::decodeUniqueId(realId, &root).ok());
  // A relay stands in for the root: it reads each rank's hello, which names the rank's
  // listener, throws garbage at that listener, then passes the hello on to the real root and
  // the root's reply back. Every rank's listener thus holds garbage before the ring connects.
  net::Fd relay;
  net::SocketAddress any, relayAddress;
  ASSERT_TRUE(net::SocketAddress::parse("127.0.0.1:0", &any).ok());
  ASSERT_TRUE(net::listenOn(any, &relay, &relayAddress).ok());
  ncclUniqueId id;
  bootstrap::encodeUniqueId({root.magic, relayAddress}, &id);
  const int n = 3;
  std::vector<net::Fd> junk;
  std::thread relayThread([&] {
    std::vector<std::pair<net::Fd, net::Fd>> links;  // (rank, root)
    while (links.size() < static_cast<size_t>(n)) {
      net::Fd rank;
      ASSERT_TRUE(net::acceptOne(relay.get(), Waiter(kTimeoutMs, nullptr), 1000, &rank).ok());
      if (!rank.valid()) continue;
      uint8_t hello[bootstrap::kRootHelloBytes];
      ASSERT_TRUE(net::recvAll(rank.get(), hello, sizeof(hello), Waiter(5000, nullptr)).ok());
      net::SocketAddress listener;
      ASSERT_TRUE(net::SocketAddress::fromWire(hello + 20, &listener).ok());
      throwGarbageAt(listener, root.magic, &junk);
      net::Fd up;
      ASSERT_TRUE(net::connectTo(root.root, Waiter(5000, nullptr), &up).ok());
      sendRaw(up.get(), hello, sizeof(hello));
      links.emplace_back(std::move(rank), std::move(up));
    }
    const size_t replyBytes = bootstrap::kRootReplyHeaderBytes + n * net::SocketAddress::kWireBytes;
    for (auto& [rank, up] : links) {
      std::vector<uint8_t> reply(replyBytes);
      ASSERT_TRUE(
          net::recvAll(up.get(), reply.data(), reply.size(), Waiter(kTimeoutMs, nullptr)).ok());
      sendRaw(rank.get(), reply.data(), reply.size());
    }
  });
  // Each rank drops the garbage and completes the ring, collectives and point-to-point
  // messages as usual. The silent connections have a 5 s hello deadline; finishing well before
  // it shows no rank waited on them.
  auto start = Clock::now();
  runRanks(id, n, collectivesAndP2P);
  relayThread.join();
  EXPECT_LT(secondsSince(start), 4.0);
}

}  // namespace
}  // namespace braid
