// The endpoint contract (transport/transport.h), checked the same way for every transport: two
// endpoints connected through the Transport interface alone, in one process (each side on its
// own thread), exchange messages in FIFO order at sizes around the transport's own buffering,
// deliver through sinks every byte once in order, fail a size mismatch and a closed peer with
// the right codes, deliver what was sent before a close, reject handles that are not theirs,
// can be slept on until the peer moves data, and give registered memory handles that hold it.
// Each line of kCases is one transport in one configuration: a new transport adds its lines.
// Behaviour only one transport has (TCP striping and batching, shared memory between
// processes, the rings' 16-byte pieces) stays in that transport's own tests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "transport/registry.h"
#include "transport/shm/shared_memory.h"
#include "transport/wait.h"
#include "transport_test_util.h"

#if BRAID_HAVE_IBVERBS
#include "transport/ib/ib_endpoint.h"
#include "transport/ib/ib_transport.h"
#endif

namespace braid::transport {
namespace {

using braid::testing::drive;
using braid::testing::exchange;

struct Case {
  const char* transport;  // its registry name
  const char* label;
  size_t buffer;  // the transport's own buffering (a ring's bytes, a TCP slice)
  std::vector<std::pair<const char*, const char*>> env;
};

const Case kCases[] = {
    {"loopback",
     "ring4M",
     4 << 20,
     {{"BRAID_SHM_BUFFSIZE", "4194304"}, {"BRAID_LOOPBACK_DIRECT_MIN_BYTES", "0"}}},
    {"loopback",
     "ring4M_direct16K",
     4 << 20,
     {{"BRAID_SHM_BUFFSIZE", "4194304"}, {"BRAID_LOOPBACK_DIRECT_MIN_BYTES", "16384"}}},
    {"loopback",
     "ring4K",
     4096,
     {{"BRAID_SHM_BUFFSIZE", "4096"}, {"BRAID_LOOPBACK_DIRECT_MIN_BYTES", "0"}}},
    {"loopback",
     "ring4K_direct1K",
     4096,
     {{"BRAID_SHM_BUFFSIZE", "4096"}, {"BRAID_LOOPBACK_DIRECT_MIN_BYTES", "1024"}}},
    {"shm",
     "ring4M",
     4 << 20,
     {{"BRAID_SHM_BUFFSIZE", "4194304"}, {"BRAID_SHM_CMA_MIN_BYTES", "0"}}},
    {"shm",
     "ring4M_cma256K",
     4 << 20,
     {{"BRAID_SHM_BUFFSIZE", "4194304"}, {"BRAID_SHM_CMA_MIN_BYTES", "262144"}}},
    {"shm", "ring4K", 4096, {{"BRAID_SHM_BUFFSIZE", "4096"}, {"BRAID_SHM_CMA_MIN_BYTES", "0"}}},
    {"shm",
     "ring4K_cma1K",
     4096,
     {{"BRAID_SHM_BUFFSIZE", "4096"}, {"BRAID_SHM_CMA_MIN_BYTES", "1024"}}},
    {"tcp", "1stream", 512 << 10, {{"NCCL_SOCKET_NTHREADS", "1"}, {"NCCL_NSOCKS_PERTHREAD", "1"}}},
    {"tcp", "4streams", 512 << 10, {{"NCCL_SOCKET_NTHREADS", "1"}, {"NCCL_NSOCKS_PERTHREAD", "4"}}},
    {"tcp",
     "3streams_slice4K",
     4096,
     {{"NCCL_NSOCKS_PERTHREAD", "3"}, {"BRAID_TCP_SLICE_BYTES", "4096"}}},
    // TLS (BRAID_TLS_PSK): records of up to 16 KiB under messages and slices of any size.
    {"tcp",
     "tls_4streams",
     512 << 10,
     {{"NCCL_NSOCKS_PERTHREAD", "4"}, {"BRAID_TLS_PSK", "contract-test-key-0123456789abcdef"}}},
    {"tcp",
     "tls_2streams_slice4K",
     4096,
     {{"NCCL_NSOCKS_PERTHREAD", "2"},
      {"BRAID_TCP_SLICE_BYTES", "4096"},
      {"BRAID_TLS_PSK", "contract-test-key-0123456789abcdef"}}},
    // ib (verbs): runs where an RDMA port is active (tests/rdma boots one); skipped elsewhere.
    {"ib", "slots256K", (256 << 10) - 32, {}},
    {"ib",
     "slots4K_3qps",
     4096 - 32,
     {{"BRAID_IB_SLOT_BYTES", "4096"}, {"NCCL_IB_QPS_PER_CONNECTION", "3"}}},
};

bool ibPortHere() {
#if BRAID_HAVE_IBVERBS
  return ibPortAvailable();
#else
  return false;
#endif
}

using Pair = braid::testing::EndpointPair;
using braid::testing::localPeer;
using braid::testing::onBoth;

class EndpointContract : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    set("NCCL_SOCKET_IFNAME", "lo");  // TCP stays on loopback
    set("NCCL_SOCKET_FAMILY", "AF_INET");
    for (const auto& [name, value] : GetParam().env) set(name, value);
    if (std::string(GetParam().transport) == "ib" && !ibPortHere())
      GTEST_SKIP() << "no ib transport or no active RDMA port here (tests/rdma runs this suite "
                      "on Soft-RoCE)";
    entry_ = find(GetParam().transport);
    ASSERT_NE(entry_, nullptr) << GetParam().transport << " is not a registered transport";
  }
  void TearDown() override {
    for (const std::string& name : set_) unsetenv(name.c_str());
  }

  std::unique_ptr<Transport> make() {
    std::unique_ptr<Transport> t;
    Status st = entry_->create(&t);
    EXPECT_TRUE(st.ok()) << st.message();
    return t;
  }

  Pair connectPair() { return braid::testing::connectLocally(make(), make()); }

 private:
  void set(const char* name, const char* value) {
    setenv(name, value, 1);
    set_.emplace_back(name);
  }
  const TransportEntry* entry_ = nullptr;
  std::vector<std::string> set_;
};

TEST_P(EndpointContract, FifoOrderAtEverySize) {
  Pair p = connectPair();
  const size_t b = GetParam().buffer;
  const std::vector<size_t> sizes = {0, 1, 7, 4096, b - 1, b, b + 1, 0, 3, size_t{64} << 20, 5};
  onBoth(p, [&](Endpoint& ep, int rank) { return exchange(ep, rank, sizes); });
  EXPECT_FALSE(p.e0->busy());
  EXPECT_EQ(p.e0->sendsCompleted(), sizes.size());
  EXPECT_EQ(p.e1->recvsCompleted(), sizes.size());
}

TEST_P(EndpointContract, SinkSeesEveryByteOnceInOrder) {
  Pair p = connectPair();
  const std::vector<size_t> sizes = {0, 100, 3 * GetParam().buffer + 5, size_t{9} << 20};
  onBoth(p, [&](Endpoint& ep, int rank) { return exchange(ep, rank, sizes, /*useSinks=*/true); });
}

TEST_P(EndpointContract, ManySmallMessagesOverSeveralRounds) {
  Pair p = connectPair();
  std::vector<size_t> sizes;
  for (size_t i = 0; i < 5000; ++i) sizes.push_back((i * 7919) % 61);
  onBoth(p, [&](Endpoint& ep, int rank) {
    // The counters and the transport's positions carry over from round to round.
    for (int round = 0; round < 3; ++round) BRAID_TRY(exchange(ep, rank, sizes));
    return Status::Ok();
  });
}

// Messages near half the buffer: a ring takes them whole and needs most of itself free, so the
// producer must look for space again when its view of the consumer says it is short.
TEST_P(EndpointContract, MessagesNearHalfTheBuffer) {
  Pair p = connectPair();
  const size_t half = GetParam().buffer / 2;
  std::vector<size_t> sizes;
  const size_t count = GetParam().buffer > 65536 ? 16 : 200;
  for (size_t i = 0; i < count; ++i) sizes.push_back(half - 40 + (i * 13) % 48);
  onBoth(p, [&](Endpoint& ep, int rank) { return exchange(ep, rank, sizes); });
}

TEST_P(EndpointContract, SizeMismatchIsInvalidUsageAndTheEndpointStaysFailed) {
  for (size_t bytes : {size_t{16}, size_t{1} << 20}) {  // small, and large (direct paths)
    Pair p = connectPair();
    ASSERT_TRUE(p.e0 && p.e1);
    std::vector<uint8_t> out(bytes, 1), in(bytes + 1);
    ASSERT_TRUE(p.e0->postSend(out.data(), out.size()).ok());
    ASSERT_TRUE(p.e1->postRecv(in.data(), in.size(), nullptr).ok());
    std::thread sender([&] { (void)drive(*p.e0, 1, 0, 1000); });
    Status st = drive(*p.e1, 0, 1, 10000);
    sender.join();
    EXPECT_EQ(st.code(), ncclInvalidUsage) << bytes << " bytes: " << st.message();
    EXPECT_NE(st.message().find(std::to_string(bytes)), std::string::npos) << st.message();
    EXPECT_FALSE(p.e1->progress().ok());
    EXPECT_FALSE(p.e1->postSend(out.data(), 1).ok());
  }
}

TEST_P(EndpointContract, ClosedPeerIsARemoteErrorNotAHang) {
  Pair p = connectPair();
  ASSERT_TRUE(p.e0 && p.e1);
  std::vector<uint8_t> in(64);
  ASSERT_TRUE(p.e0->postRecv(in.data(), in.size(), nullptr).ok());
  ASSERT_TRUE(p.e0->progress().ok());
  p.e1.reset();
  Status st = drive(*p.e0, 0, 1, 10000);
  EXPECT_EQ(st.code(), ncclRemoteError) << st.message();
}

TEST_P(EndpointContract, DataSentBeforeACloseIsDelivered) {
  Pair p = connectPair();
  ASSERT_TRUE(p.e0 && p.e1);
  std::vector<uint8_t> out(1000, 42), in(1000);
  ASSERT_TRUE(p.e1->postSend(out.data(), out.size()).ok());
  ASSERT_TRUE(drive(*p.e1, 1, 0).ok());
  p.e1.reset();
  ASSERT_TRUE(p.e0->postRecv(in.data(), in.size(), nullptr).ok());
  Status st = drive(*p.e0, 0, 1, 10000);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(in, out);
}

TEST_P(EndpointContract, HandlesThatAreNotTheTransportsAreRejected) {
  std::unique_ptr<Transport> t = make();
  Blob mine;
  ASSERT_TRUE(t->listen(localPeer(0), localPeer(1), &mine).ok());
  std::unique_ptr<Endpoint> ep;
  EXPECT_EQ(
      t->connect(localPeer(0), localPeer(1), Blob{1, 2, 3}, Waiter(2000, nullptr), &ep).code(),
      ncclInvalidArgument);
  Blob forged = mine;
  forged[0] ^= 1;
  EXPECT_EQ(t->connect(localPeer(0), localPeer(1), forged, Waiter(2000, nullptr), &ep).code(),
            ncclInvalidArgument);
  EXPECT_FALSE(ep);
}

// Sleeps on `set` (for at most 20 s) while `sender` sends `*out` after 50 ms, on a thread of its
// own; how long the sleep lasted, in seconds, and whether it slept at all.
struct Sleep {
  bool slept;
  double seconds;
};
Sleep sleepWhilePeerSends(WaitSet& set, Endpoint& sender, const uint64_t* out) {
  std::thread peer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)sender.postSend(out, sizeof *out);
    (void)drive(sender, 1, 0, 10000);
  });
  const auto start = std::chrono::steady_clock::now();
  const bool slept = set.sleep(std::chrono::seconds(20));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  peer.join();
  return {slept, waited};
}

// A caller waiting on a receive sleeps on what the endpoint adds to a WaitSet (transport/wait.h)
// and is woken when the peer's message arrives, long before the sleep's own bound.
TEST_P(EndpointContract, AWaitingEndpointCanBeSleptOnUntilThePeerSends) {
  Pair p = connectPair();
  ASSERT_TRUE(p.e0 && p.e1);
  uint64_t in = 0, out = 0x5eed;
  ASSERT_TRUE(p.e0->postRecv(&in, sizeof in, nullptr).ok());
  ASSERT_TRUE(p.e0->progress().ok());
  WaitSet set;
  p.e0->addWakeups(set);
  ASSERT_TRUE(set.method() == WaitSet::Method::kFds || set.method() == WaitSet::Method::kDoorbells)
      << "a busy endpoint offers nothing to sleep on";
  if (set.method() == WaitSet::Method::kDoorbells) {
    ASSERT_TRUE(set.arm());
  }
  ASSERT_TRUE(p.e0->progress().ok());  // the look for work once more that arming asks for
  ASSERT_EQ(p.e0->recvsCompleted(), 0u);
  const auto [slept, waited] = sleepWhilePeerSends(set, *p.e1, &out);
  if (!slept && !canWaitForBells())
    GTEST_SKIP() << "this kernel has no futex_waitv: ring waiters yield";
  EXPECT_TRUE(slept);
  EXPECT_LT(waited, 15.0) << "the peer's message did not wake the sleeper";
  ASSERT_TRUE(drive(*p.e0, 0, 1).ok());
  EXPECT_EQ(in, out);
}

// Registration (transport/memory.h): a handle, where the transport gives one, holds the memory
// it was asked for; shared memory gives one exactly for memory ncclMemAlloc handed out, ib for
// any memory (a memory region on its device).
TEST_P(EndpointContract, RegisteredMemoryHandlesHoldTheirBuffer) {
  std::unique_ptr<Transport> t = make();
  const std::string name = GetParam().transport;
  std::vector<char> plain(1 << 16);
  MemoryHandle h;
  ASSERT_TRUE(t->registerMemory(plain.data(), plain.size(), &h).ok());
  EXPECT_EQ(h.valid(), name == "ib") << "ordinary memory is shared by reference by ib alone";
  if (h.valid()) {
    EXPECT_TRUE(h.contains(reinterpret_cast<uint64_t>(plain.data()), plain.size()));
    t->deregisterMemory(h);
  }
  void* shared = nullptr;
  ASSERT_TRUE(sharedAlloc(1 << 20, &shared).ok());
  char* inside = static_cast<char*>(shared) + 4096;
  ASSERT_TRUE(t->registerMemory(inside, 8192, &h).ok());
  if (h.valid()) {
    EXPECT_TRUE(h.contains(reinterpret_cast<uint64_t>(inside), 8192));
    t->deregisterMemory(h);
  }
  EXPECT_EQ(h.valid(), name == "shm" || name == "ib");
  EXPECT_TRUE(sharedFree(shared));
}

// Messages between registered buffers (ncclMemAlloc'ed and registered on both ranks, as
// nccl-tests' -R 1 does), at sizes around the transport's buffering and its direct-write
// threshold, arrive intact, whichever rank posts its receives first.
TEST_P(EndpointContract, RegisteredBuffersCarryEveryMessageIntact) {
  Pair p = connectPair();
  ASSERT_TRUE(p.e0 && p.e1);
  const size_t b = GetParam().buffer;
  const std::vector<size_t> sizes = {
      0, 1, 4096, 65535, 65536, 65537, b - 1, b, b + 1, 3 * b + 5, (size_t{9} << 20) + 3, 5};
  size_t total = 0;
  for (size_t n : sizes) total += n;
  auto run = [&](Endpoint& ep, int rank) -> Status {
    Transport& t = rank == 0 ? *p.t0 : *p.t1;
    void *out = nullptr, *in = nullptr;
    BRAID_TRY(sharedAlloc(total, &out));
    BRAID_TRY(sharedAlloc(total, &in));
    MemoryHandle ho, hi;
    BRAID_TRY(t.registerMemory(out, total, &ho));
    BRAID_TRY(t.registerMemory(in, total, &hi));
    auto* o = static_cast<uint8_t*>(out);
    auto* i = static_cast<uint8_t*>(in);
    size_t at = 0;
    for (size_t m = 0; m < sizes.size(); at += sizes[m++])
      for (size_t k = 0; k < sizes[m]; ++k) o[at + k] = braid::testing::patternByte(rank, m, k);
    auto postRecvs = [&]() -> Status {
      size_t pos = 0;
      for (size_t m = 0; m < sizes.size(); pos += sizes[m++])
        BRAID_TRY(ep.postRecv(i + pos, sizes[m], nullptr));
      return Status::Ok();
    };
    // Rank 0 posts its receives first (the peer can know of them before it sends); rank 1 its
    // sends, and moves them a while before it posts its receives.
    if (rank == 0) BRAID_TRY(postRecvs());
    at = 0;
    for (size_t m = 0; m < sizes.size(); at += sizes[m++]) BRAID_TRY(ep.postSend(o + at, sizes[m]));
    if (rank == 1) {
      for (int k = 0; k < 200; ++k) BRAID_TRY(ep.progress());
      BRAID_TRY(postRecvs());
    }
    BRAID_TRY(drive(ep, sizes.size(), sizes.size()));
    at = 0;
    for (size_t m = 0; m < sizes.size(); at += sizes[m++])
      for (size_t k = 0; k < sizes[m]; ++k)
        if (i[at + k] != braid::testing::patternByte(1 - rank, m, k))
          return {ncclInternalError,
                  strfmt("message %zu (%zu bytes): wrong byte at offset %zu", m, sizes[m], k)};
    if (ho.valid()) t.deregisterMemory(ho);
    if (hi.valid()) t.deregisterMemory(hi);
    sharedFree(out);
    sharedFree(in);
    return Status::Ok();
  };
  onBoth(p, run);
}

INSTANTIATE_TEST_SUITE_P(Transports, EndpointContract, ::testing::ValuesIn(kCases),
                         [](const auto& info) {
                           return std::string(info.param.transport) + "_" + info.param.label;
                         });

#if BRAID_HAVE_IBVERBS
// The ib transport's direct writes (ib/ib_endpoint.h): between registered buffers a message
// offered before it is sent goes wholly by direct writes, one offered while it is under way goes
// partly through the slots and the rest directly, and an offer of another size is not used (the
// receiver reports the mismatch).
class IbDirect : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("BRAID_IB_DIRECT_MIN_BYTES", "65536", 1);
    if (!ibPortHere()) GTEST_SKIP() << "no active RDMA port here (tests/rdma runs this)";
    const TransportEntry* e = find("ib");
    ASSERT_NE(e, nullptr);
    std::unique_ptr<Transport> t0, t1;
    ASSERT_TRUE(e->create(&t0).ok());
    ASSERT_TRUE(e->create(&t1).ok());
    p_ = braid::testing::connectLocally(std::move(t0), std::move(t1));
    ASSERT_TRUE(p_.e0 && p_.e1);
    send_ = dynamic_cast<ib::IbEndpoint*>(p_.e0.get());
    recv_ = dynamic_cast<ib::IbEndpoint*>(p_.e1.get());
    ASSERT_TRUE(send_ && recv_);
  }
  void TearDown() override { unsetenv("BRAID_IB_DIRECT_MIN_BYTES"); }

  // A registered buffer of `bytes` on rank `rank`'s transport.
  std::vector<uint8_t>& buffer(int rank, size_t bytes) {
    bufs_.push_back(std::make_unique<std::vector<uint8_t>>(bytes));
    std::vector<uint8_t>& v = *bufs_.back();
    MemoryHandle h;
    EXPECT_TRUE((rank == 0 ? p_.t0 : p_.t1)->registerMemory(v.data(), v.size(), &h).ok());
    EXPECT_TRUE(h.valid());
    return v;
  }
  // Progresses both ends in turn until the receiver has `recvs` receives or either fails.
  Status both(uint64_t recvs) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (recv_->recvsCompleted() < recvs) {
      BRAID_TRY(send_->progress());
      BRAID_TRY(recv_->progress());
      if (std::chrono::steady_clock::now() > deadline)
        return {ncclSystemError, "test loop timed out"};
    }
    return Status::Ok();
  }
  void spin(Endpoint& ep, int rounds) {
    for (int k = 0; k < rounds; ++k) ASSERT_TRUE(ep.progress().ok());
  }
  // The receiver writes its offer, and the sender progresses until it has read it.
  void offer() {
    spin(*recv_, 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (send_->offersReceived() == 0 && std::chrono::steady_clock::now() < deadline)
      ASSERT_TRUE(send_->progress().ok());
    ASSERT_EQ(send_->offersReceived(), 1u);
  }

  Pair p_;
  ib::IbEndpoint* send_ = nullptr;
  ib::IbEndpoint* recv_ = nullptr;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> bufs_;
};

TEST_F(IbDirect, AnOfferMadeBeforeTheSendTakesTheWholeMessage) {
  const size_t bytes = (size_t{9} << 20) + 3;
  std::vector<uint8_t>& out = buffer(0, bytes);
  std::vector<uint8_t>& in = buffer(1, bytes);
  braid::testing::fillPattern(out, 0, 1);
  ASSERT_TRUE(recv_->postRecv(in.data(), in.size(), nullptr).ok());
  offer();
  ASSERT_TRUE(send_->postSend(out.data(), out.size()).ok());
  ASSERT_TRUE(both(1).ok());
  EXPECT_EQ(braid::testing::firstMismatch(in, 0, 1), -1);
  EXPECT_EQ(recv_->directBytesReceived(), bytes);
  EXPECT_EQ(send_->directBytesSent(), bytes);
  ASSERT_TRUE(braid::testing::drive(*send_, 1, 0).ok());
}

TEST_F(IbDirect, AnOfferMadeDuringTheSendTakesTheRest) {
  const size_t bytes = (size_t{9} << 20) + 3;
  std::vector<uint8_t>& out = buffer(0, bytes);
  std::vector<uint8_t>& in = buffer(1, bytes);
  braid::testing::fillPattern(out, 0, 2);
  ASSERT_TRUE(send_->postSend(out.data(), out.size()).ok());
  spin(*send_, 1);  // fragments into every slot the receiver has
  ASSERT_TRUE(recv_->postRecv(in.data(), in.size(), nullptr).ok());
  ASSERT_TRUE(both(1).ok());
  EXPECT_EQ(braid::testing::firstMismatch(in, 0, 2), -1);
  EXPECT_GT(recv_->directBytesReceived(), 0u);
  EXPECT_LT(recv_->directBytesReceived(), bytes);
  EXPECT_EQ(send_->directBytesSent(), recv_->directBytesReceived());
}

TEST_F(IbDirect, AnOfferOfAnotherSizeIsNotUsedAndTheMismatchIsReported) {
  const size_t bytes = size_t{1} << 20;
  std::vector<uint8_t>& out = buffer(0, bytes);
  std::vector<uint8_t>& in = buffer(1, bytes + 1);
  ASSERT_TRUE(recv_->postRecv(in.data(), in.size(), nullptr).ok());
  offer();
  ASSERT_TRUE(send_->postSend(out.data(), out.size()).ok());
  const Status st = both(1);
  EXPECT_EQ(st.code(), ncclInvalidUsage) << st.message();
  EXPECT_EQ(send_->directBytesSent(), 0u);
}
#endif

// A caller waiting on a socket and a doorbell at once (a rank with peers over TCP and in shared
// memory) sleeps on both (WaitSet::Method::kMixed, through io_uring) and is woken by whichever
// peer sends first, long before the sleep's own bound.
class MixedWait : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {  // TCP stays on loopback, as in EndpointContract
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    setenv("NCCL_SOCKET_FAMILY", "AF_INET", 1);
  }
  void TearDown() override {
    unsetenv("NCCL_SOCKET_IFNAME");
    unsetenv("NCCL_SOCKET_FAMILY");
  }
};

TEST_P(MixedWait, ASocketAndADoorbellAreSleptOnTogether) {
  auto make = [](const char* name) {
    std::unique_ptr<Transport> t;
    EXPECT_TRUE(find(name) && find(name)->create(&t).ok()) << name;
    return t;
  };
  Pair tcp = braid::testing::connectLocally(make("tcp"), make("tcp"));
  Pair shm = braid::testing::connectLocally(make("shm"), make("shm"));
  ASSERT_TRUE(tcp.e0 && tcp.e1 && shm.e0 && shm.e1);
  uint64_t inTcp = 0, inShm = 0, out = 0x5eed;
  for (Pair* p : {&tcp, &shm}) {
    ASSERT_TRUE(p->e0->postRecv(p == &tcp ? &inTcp : &inShm, sizeof out, nullptr).ok());
    ASSERT_TRUE(p->e0->progress().ok());
  }
  WaitSet set;
  tcp.e0->addWakeups(set);
  shm.e0->addWakeups(set);
  ASSERT_EQ(set.method(), WaitSet::Method::kMixed);
  if (!set.arm()) GTEST_SKIP() << "no io_uring that waits on futexes here: mixed waiters yield";
  for (Pair* p : {&tcp, &shm}) ASSERT_TRUE(p->e0->progress().ok());  // the look once more
  Pair& sender = std::string(GetParam()) == "tcp" ? tcp : shm;
  const auto [slept, waited] = sleepWhilePeerSends(set, *sender.e1, &out);
  EXPECT_TRUE(slept);
  EXPECT_LT(waited, 15.0) << "the " << GetParam() << " peer's message did not wake the sleeper";
  ASSERT_TRUE(drive(*sender.e0, 0, 1).ok());
  EXPECT_EQ(std::string(GetParam()) == "tcp" ? inTcp : inShm, out);
  // The other receive is still posted: its peer sends now, and both pairs end clean.
  Pair& other = &sender == &tcp ? shm : tcp;
  ASSERT_TRUE(other.e1->postSend(&out, sizeof out).ok());
  onBoth(other, [](Endpoint& ep, int rank) { return rank == 0 ? drive(ep, 0, 1) : drive(ep, 1, 0); });
  EXPECT_EQ(inTcp, out);
  EXPECT_EQ(inShm, out);
}

// What a set sleeps on follows from what was added, in any order: one kind alone, a mixture of
// sockets and doorbells, or a spin once any endpoint cannot be slept on.
TEST(WaitSetKinds, FollowWhatWasAdded) {
  Doorbell bell;
  WaitSet set;
  EXPECT_EQ(set.method(), WaitSet::Method::kNone);
  set.addDoorbell(&bell);
  set.addDoorbell(&bell);
  EXPECT_EQ(set.method(), WaitSet::Method::kDoorbells);
  set.addFd(0, POLLIN);
  EXPECT_EQ(set.method(), WaitSet::Method::kMixed);
  set.addDoorbell(&bell);
  EXPECT_EQ(set.method(), WaitSet::Method::kMixed);
  set.cannotSleep();
  set.addFd(0, POLLIN);
  EXPECT_EQ(set.method(), WaitSet::Method::kSpin);
  EXPECT_FALSE(set.arm()) << "a set with a spinning endpoint cannot be armed";
  set.clear();
  set.addFd(0, POLLIN);
  EXPECT_EQ(set.method(), WaitSet::Method::kFds);
  EXPECT_FALSE(set.arm()) << "sockets alone are polled, not armed";
  set.addDoorbell(&bell);
  EXPECT_EQ(set.method(), WaitSet::Method::kMixed);
  set.clear();
}

INSTANTIATE_TEST_SUITE_P(FirstToSend, MixedWait, ::testing::Values("tcp", "shm"),
                         [](const auto& info) { return std::string(info.param); });

// Every registered transport has a line in kCases.
TEST(EndpointContractCases, CoverEveryRegisteredTransport) {
  for (const TransportEntry* e : registered()) {
    bool listed = false;
    for (const Case& c : kCases) listed |= c.transport == e->name;
    EXPECT_TRUE(listed) << "transport " << e->name << " has no line in kCases";
  }
}

}  // namespace
}  // namespace braid::transport
