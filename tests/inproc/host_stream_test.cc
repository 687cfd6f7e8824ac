// Host streams (include/braid/braid.h, core/async/engine.h) with threads as ranks: the collective
// sweep queued on a host stream, calls that return before they complete, completion by query,
// synchronize and callback, order on a stream and on a communicator, groups, errors that stick
// to their stream, abort, destroy with work queued, and priority classes that do not wait for
// each other.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "common/coll_sweep.h"
#include "common/ranks.h"

namespace braid {
namespace {

// A rank left waiting by a failed peer fails the test instead of hanging it.
const bool kTimeoutSet = setenv("BRAID_TIMEOUT_MS", "20000", 1) == 0;

std::string last(ncclComm_t comm) { return ncclGetLastError(comm); }

cudaStream_t asCuda(braidHostStream_t s) { return reinterpret_cast<cudaStream_t>(s); }

void expectAllEmpty(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// A host stream for one rank's thread, destroyed (after its work) when the rank is done.
struct Stream {
  explicit Stream(int priority = 0) { ok = braidHostStreamCreate(&s, priority) == ncclSuccess; }
  ~Stream() {
    if (s) braidHostStreamDestroy(s);
  }
  braidHostStream_t s = nullptr;
  bool ok = false;
};

// Every collective, each case queued and synchronized on a host stream, then checked; and all
// of a rank's cases queued at once, synchronized once, checked after (every buffer in flight at
// the same time).
class HostStreamSweep : public ::testing::TestWithParam<int> {};

TEST_P(HostStreamSweep, OneAtATimeAndAllQueued) {
  const int nranks = GetParam();
  const auto cases = testing::sweepCases(nranks, {false, true, false});
  expectAllEmpty(testing::runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
    Stream stream;
    if (!stream.ok) return "braidHostStreamCreate failed";
    testing::callStream = asCuda(stream.s);
    for (const auto& c : cases) {
      testing::CaseRun run(c, rank, nranks);
      if (run.call(comm) != ncclSuccess) return testing::describe(c) + ": " + last(comm);
      if (braidHostStreamSynchronize(stream.s) != ncclSuccess)
        return testing::describe(c) + ": synchronize: " + last(nullptr);
      if (std::string e = run.check(); !e.empty()) return testing::describe(c) + ": " + e;
    }
    std::vector<std::unique_ptr<testing::CaseRun>> runs;
    for (const auto& c : cases) {
      runs.push_back(std::make_unique<testing::CaseRun>(c, rank, nranks));
      if (runs.back()->call(comm) != ncclSuccess)
        return "queued " + testing::describe(c) + ": " + last(comm);
    }
    if (braidHostStreamSynchronize(stream.s) != ncclSuccess)
      return "synchronize after all: " + last(nullptr);
    for (size_t i = 0; i < cases.size(); ++i)
      if (std::string e = runs[i]->check(); !e.empty())
        return "queued " + testing::describe(cases[i]) + ": " + e;
    testing::callStream = nullptr;
    return "";
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, HostStreamSweep, ::testing::Values(1, 2, 3, 5));

// The call returns while its peer has not even made it: the stream says "in progress", and
// the result arrives once the peer calls. (The peer waits for rank 0's query, so the order is
// certain, not timed.)
TEST(HostStream, CallReturnsBeforeItsPeerCalls) {
  std::atomic<bool> queried{false};
  expectAllEmpty(testing::runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    Stream stream;
    std::vector<float> buf(1000, static_cast<float>(rank + 1));
    if (rank == 1)
      while (!queried.load()) std::this_thread::yield();
    if (ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm,
                      asCuda(stream.s)) != ncclSuccess)
      return "ncclAllReduce: " + last(comm);
    if (rank == 0) {
      const ncclResult_t q = braidHostStreamQuery(stream.s);
      queried.store(true);
      if (q != ncclInProgress) return "query before the peer called: " + std::to_string(q);
    }
    if (braidHostStreamSynchronize(stream.s) != ncclSuccess) return "synchronize: " + last(comm);
    if (braidHostStreamQuery(stream.s) != ncclSuccess) return "query after synchronize";
    for (float v : buf)
      if (v != 3.0f) return "wrong sum " + std::to_string(v);
    return "";
  }));
}

struct CallbackLog {
  std::mutex mu;
  std::vector<int> order;
  std::vector<ncclResult_t> results;
  std::vector<std::string> messages;
};
struct CallbackArg {
  CallbackLog* log;
  int id;
};
void record(ncclResult_t result, const char* message, void* arg) {
  auto* a = static_cast<CallbackArg*>(arg);
  std::lock_guard<std::mutex> lock(a->log->mu);
  a->log->order.push_back(a->id);
  a->log->results.push_back(result);
  a->log->messages.push_back(message ? message : "");
}

// Callbacks run once the calls before them are complete, in the order they were added; one
// added to an idle stream runs at once.
TEST(HostStream, CallbacksInOrderAfterTheirCalls) {
  expectAllEmpty(testing::runThreads(3, [&](int rank, ncclComm_t comm) -> std::string {
    CallbackLog log;
    std::vector<CallbackArg> args;
    for (int i = 0; i < 5; ++i) args.push_back({&log, i});
    Stream stream;
    std::vector<std::vector<int>> bufs(4, std::vector<int>(4096, rank));
    if (braidHostStreamAddCallback(stream.s, record, &args[0]) != ncclSuccess)
      return "callback on idle stream: " + last(nullptr);
    {
      std::lock_guard<std::mutex> lock(log.mu);
      if (log.order.size() != 1) return "a callback on an idle stream did not run at once";
    }
    for (int i = 0; i < 4; ++i) {
      if (ncclAllReduce(bufs[i].data(), bufs[i].data(), bufs[i].size(), ncclInt32, ncclSum, comm,
                        asCuda(stream.s)) != ncclSuccess)
        return "ncclAllReduce: " + last(comm);
      if (i % 2 == 1 &&
          braidHostStreamAddCallback(stream.s, record, &args[1 + i / 2]) != ncclSuccess)
        return "add callback: " + last(nullptr);
    }
    if (braidHostStreamSynchronize(stream.s) != ncclSuccess) return "synchronize: " + last(comm);
    if (braidHostStreamDestroy(stream.s) != ncclSuccess) return "destroy: " + last(nullptr);
    stream.s = nullptr;  // every callback has run once destroy returned
    std::lock_guard<std::mutex> lock(log.mu);
    if (log.order != std::vector<int>{0, 1, 2}) return "callbacks ran out of order or not at all";
    for (ncclResult_t r : log.results)
      if (r != ncclSuccess) return "a callback saw an error";
    for (auto& b : bufs)
      for (int v : b)
        if (v != 3) return "wrong sum";
    return "";
  }));
}

// One stream over two communicators: the second call waits for the first (it reads its
// output). Two streams on one communicator: calls still run in call order.
TEST(HostStream, OrderOnAStreamAcrossCommunicatorsAndOnACommunicatorAcrossStreams) {
  constexpr int kRanks = 3;
  std::vector<ncclComm_t> second(kRanks);
  ASSERT_EQ(ncclCommInitAll(second.data(), kRanks, nullptr), ncclSuccess);
  expectAllEmpty(testing::runThreads(kRanks, [&](int rank, ncclComm_t comm) -> std::string {
    Stream a, b;
    std::vector<int> x(50000, rank + 1);
    // x = sum over ranks (6), then x = sum of that (18) on the second communicator; then on
    // stream b (same first communicator) x = sum again (54), which must see the 18.
    if (ncclAllReduce(x.data(), x.data(), x.size(), ncclInt32, ncclSum, comm, asCuda(a.s)) !=
        ncclSuccess)
      return "first: " + last(comm);
    if (ncclAllReduce(x.data(), x.data(), x.size(), ncclInt32, ncclSum, second[rank],
                      asCuda(a.s)) != ncclSuccess)
      return "second: " + last(second[rank]);
    if (braidHostStreamSynchronize(a.s) != ncclSuccess) return "synchronize a";
    for (int v : x)
      if (v != 18) return "stream order across communicators broken: " + std::to_string(v);
    std::vector<int> y(50000, rank), z(50000, 10 * rank);
    if (ncclAllReduce(y.data(), y.data(), y.size(), ncclInt32, ncclSum, comm, asCuda(a.s)) !=
            ncclSuccess ||
        ncclAllReduce(z.data(), z.data(), z.size(), ncclInt32, ncclMax, comm, asCuda(b.s)) !=
            ncclSuccess)
      return "two streams: " + last(comm);
    if (braidHostStreamSynchronize(b.s) != ncclSuccess ||
        braidHostStreamSynchronize(a.s) != ncclSuccess)
      return "synchronize two streams: " + last(comm);
    for (size_t i = 0; i < y.size(); ++i)
      if (y[i] != 3 || z[i] != 20) return "two streams on one communicator: wrong result";
    return "";
  }));
  for (auto c : second) ncclCommDestroy(c);
}

// A blocking call after queued ones waits for them; so does ncclCommFinalize.
TEST(HostStream, BlockingCallAndFinalizeWaitForQueuedWork) {
  expectAllEmpty(testing::runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    Stream stream;
    std::vector<double> big(1 << 18, rank + 1.0), small(8, rank);
    for (int i = 0; i < 3; ++i)
      if (ncclAllReduce(big.data(), big.data(), big.size(), ncclFloat64, ncclSum, comm,
                        asCuda(stream.s)) != ncclSuccess)
        return "queued: " + last(comm);
    if (ncclAllReduce(small.data(), small.data(), small.size(), ncclFloat64, ncclSum, comm,
                      nullptr) != ncclSuccess)
      return "blocking: " + last(comm);
    if (braidHostStreamQuery(stream.s) != ncclSuccess)
      return "a blocking call returned before the queued ones completed";
    if (big[0] != 3.0 * 2 * 2 || small[0] != 1.0) return "wrong results";
    if (ncclAllReduce(big.data(), big.data(), big.size(), ncclFloat64, ncclSum, comm,
                      asCuda(stream.s)) != ncclSuccess)
      return "queued again: " + last(comm);
    if (ncclCommFinalize(comm) != ncclSuccess) return "finalize: " + last(comm);
    if (braidHostStreamQuery(stream.s) != ncclSuccess) return "finalize left work queued";
    return "";
  }));
}

// A group of sends and receives (a ring) and a grouped pair of AllReduces, queued at
// ncclGroupEnd.
TEST(HostStream, Groups) {
  constexpr int kRanks = 4;
  expectAllEmpty(testing::runThreads(kRanks, [&](int rank, ncclComm_t comm) -> std::string {
    Stream stream;
    const int next = (rank + 1) % kRanks, prev = (rank + kRanks - 1) % kRanks;
    std::vector<int> out(10000, rank), in(10000, -1), a(100, 1), b(100, rank);
    if (ncclGroupStart() != ncclSuccess) return "start";
    ncclSend(out.data(), out.size(), ncclInt32, next, comm, asCuda(stream.s));
    ncclRecv(in.data(), in.size(), ncclInt32, prev, comm, asCuda(stream.s));
    ncclAllReduce(a.data(), a.data(), a.size(), ncclInt32, ncclSum, comm, asCuda(stream.s));
    ncclAllReduce(b.data(), b.data(), b.size(), ncclInt32, ncclMax, comm, asCuda(stream.s));
    if (ncclGroupEnd() != ncclSuccess) return "group end: " + last(comm);
    if (braidHostStreamSynchronize(stream.s) != ncclSuccess) return "synchronize: " + last(comm);
    for (int v : in)
      if (v != prev) return "ring: wrong data";
    if (a[0] != kRanks || b[0] != kRanks - 1) return "grouped AllReduce: wrong result";
    return "";
  }));
}

// Mismatched calls fail on synchronize with both calls named; the error sticks to the stream
// (a later call fails without running), reaches callbacks with its text, and fails the
// communicator (ncclCommGetAsyncError).
TEST(HostStream, ErrorsStickToTheStreamAndFailTheCommunicator) {
  expectAllEmpty(testing::runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    Stream stream;
    std::vector<float> buf(rank == 0 ? 16 : 12, 1.0f);
    if (ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm,
                      asCuda(stream.s)) != ncclSuccess)
      return "enqueue: " + last(comm);
    if (braidHostStreamSynchronize(stream.s) != ncclInvalidUsage)
      return "synchronize did not report the mismatch";
    const std::string text = last(nullptr);
    if (text.find("count=12") == std::string::npos || text.find("count=16") == std::string::npos)
      return "the error does not name both calls: " + text;
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || async != ncclInvalidUsage)
      return "the communicator was not failed";
    if (braidHostStreamQuery(stream.s) != ncclInvalidUsage) return "the error did not stick";
    CallbackLog log;
    CallbackArg arg{&log, 7};
    if (braidHostStreamAddCallback(stream.s, record, &arg) != ncclSuccess)
      return "add callback: " + last(nullptr);
    std::lock_guard<std::mutex> lock(log.mu);
    if (log.results.size() != 1 || log.results[0] != ncclInvalidUsage ||
        log.messages[0].find("count=12") == std::string::npos)
      return "the callback did not get the error and its text";
    return "";
  }));
}

// ncclCommAbort while a queued call waits for a peer that never makes it: the stream reports
// the failure, nothing hangs.
TEST(HostStream, AbortFailsWhatIsQueued) {
  constexpr int kRanks = 2;
  std::vector<ncclComm_t> comms(kRanks);
  ASSERT_EQ(ncclCommInitAll(comms.data(), kRanks, nullptr), ncclSuccess);
  Stream stream;
  std::vector<float> buf(4096, 1.0f), other(16, 1.0f);
  ASSERT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comms[0],
                          asCuda(stream.s)),
            ncclSuccess);
  ASSERT_EQ(ncclAllReduce(other.data(), other.data(), other.size(), ncclFloat32, ncclSum, comms[0],
                          asCuda(stream.s)),
            ncclSuccess);
  EXPECT_EQ(braidHostStreamQuery(stream.s), ncclInProgress);
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_NE(braidHostStreamSynchronize(stream.s), ncclSuccess);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("abort"), std::string::npos)
      << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
}

// Destroying communicators with calls still queued runs them first.
TEST(HostStream, DestroyRunsWhatIsQueued) {
  constexpr int kRanks = 3;
  std::vector<ncclComm_t> comms(kRanks);
  ASSERT_EQ(ncclCommInitAll(comms.data(), kRanks, nullptr), ncclSuccess);
  std::vector<Stream> streams(kRanks);
  std::vector<std::vector<int>> bufs(kRanks, std::vector<int>(100000));
  for (int r = 0; r < kRanks; ++r) {
    std::iota(bufs[r].begin(), bufs[r].end(), r);
    ASSERT_EQ(ncclAllReduce(bufs[r].data(), bufs[r].data(), bufs[r].size(), ncclInt32, ncclSum,
                            comms[r], asCuda(streams[r].s)),
              ncclSuccess);
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] { EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess); });
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(braidHostStreamQuery(streams[r].s), ncclSuccess);
    for (size_t i = 0; i < bufs[r].size(); i += 997)
      ASSERT_EQ(bufs[r][i], static_cast<int>(3 * i + 3)) << "rank " << r << " element " << i;
  }
}

// A call of a higher class does not wait behind a lower one. Rank 1 makes the urgent call
// alone and waits for it before it makes the large one, so if rank 0's urgent call queued
// behind its large call, neither would ever complete (the timeout fails the test). Rank 0's
// large call may finish before rank 0 looks again only once rank 1 has made its own (under load
// rank 0's thread can be off its core for all of it): rank 1 says when.
TEST(HostStream, HigherClassDoesNotWaitBehindALowerOne) {
  std::atomic<int> peerLargeCalls{0};
  expectAllEmpty(testing::runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    Stream normal(0), urgent(-1);
    int priority = 0;
    if (braidHostStreamGetPriority(urgent.s, &priority) != ncclSuccess || priority != -1)
      return "priority not kept";
    std::vector<float> large(1 << 22, 1.0f), small(1 << 14, static_cast<float>(rank));
    for (int round = 0; round < 2; ++round) {  // the second round finds the twin made
      if (rank == 0 && ncclAllReduce(large.data(), large.data(), large.size(), ncclFloat32, ncclSum,
                                     comm, asCuda(normal.s)) != ncclSuccess)
        return "large: " + last(comm);
      if (ncclAllReduce(small.data(), small.data(), small.size(), ncclFloat32, ncclSum, comm,
                        asCuda(urgent.s)) != ncclSuccess)
        return "small: " + last(comm);
      if (braidHostStreamSynchronize(urgent.s) != ncclSuccess) return "urgent: " + last(comm);
      // (Asked before the peer's count is read: a call found finished was joined by then.)
      if (rank == 0 && braidHostStreamQuery(normal.s) != ncclInProgress &&
          peerLargeCalls.load() <= round)
        return "the large call completed without its peer";
      if (rank == 1) {
        peerLargeCalls.fetch_add(1);
        if (ncclAllReduce(large.data(), large.data(), large.size(), ncclFloat32, ncclSum, comm,
                          asCuda(normal.s)) != ncclSuccess)
          return "large: " + last(comm);
      }
      if (braidHostStreamSynchronize(normal.s) != ncclSuccess) return "normal: " + last(comm);
      const float wantSmall = round == 0 ? 1.0f : 2.0f;
      if (small[0] != wantSmall || small.back() != wantSmall) return "small: wrong sum";
      const float wantLarge = round == 0 ? 2.0f : 4.0f;
      if (large[0] != wantLarge || large.back() != wantLarge) return "large: wrong sum";
    }
    return "";
  }));
}

TEST(HostStream, BadArguments) {
  EXPECT_EQ(braidHostStreamCreate(nullptr, 0), ncclInvalidArgument);
  EXPECT_EQ(braidHostStreamQuery(nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("stream is NULL"), std::string::npos);
  braidHostStream_t s = nullptr;
  ASSERT_EQ(braidHostStreamCreate(&s, 0), ncclSuccess);
  EXPECT_EQ(braidHostStreamAddCallback(s, nullptr, nullptr), ncclInvalidArgument);
  int priority = 5;
  EXPECT_EQ(braidHostStreamGetPriority(s, nullptr), ncclInvalidArgument);
  ASSERT_EQ(braidHostStreamDestroy(s), ncclSuccess);
  EXPECT_EQ(braidHostStreamQuery(s), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("not a host stream"), std::string::npos);
  EXPECT_EQ(braidHostStreamGetPriority(s, &priority), ncclInvalidArgument);
  ASSERT_EQ(braidHostStreamCreate(&s, 9), ncclSuccess);  // above 0 acts as 0
  EXPECT_EQ(braidHostStreamGetPriority(s, &priority), ncclSuccess);
  EXPECT_EQ(priority, 0);
  braidHostStreamDestroy(s);
  ASSERT_EQ(braidHostStreamCreate(&s, -100), ncclSuccess);  // below -3 acts as -3
  EXPECT_EQ(braidHostStreamGetPriority(s, &priority), ncclSuccess);
  EXPECT_EQ(priority, -3);
  braidHostStreamDestroy(s);
  EXPECT_EQ(braidCommSetTimeout(nullptr, 10), ncclInvalidArgument);
}

}  // namespace
}  // namespace braid
