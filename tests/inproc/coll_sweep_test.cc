// The collective sweep (tests/common/coll_sweep.h) with threads as ranks: every collective,
// type, op, root, count and in-place form, for 1, 2, 3, 5 and 8 ranks, over the loopback
// transport and over TCP; and with 64-byte chunks on small counts, so that even a few elements
// travel through many pipeline steps.
#include "common/coll_sweep.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/ranks.h"

namespace braid {
namespace {

struct SweepParam {
  const char* transports;  // BRAID_TRANSPORTS
  const char* chunkBytes;  // BRAID_CHUNK_BYTES
  testing::SweepPlan plan;
};

class CollSweep : public ::testing::TestWithParam<std::tuple<SweepParam, int>> {};

TEST_P(CollSweep, MatchesReference) {
  // Not a structured binding: a lambda below captures nranks, which clang 14 cannot do with one.
  const auto& param = std::get<0>(GetParam());
  const int nranks = std::get<1>(GetParam());
  setenv("BRAID_TRANSPORTS", param.transports, 1);
  setenv("BRAID_CHUNK_BYTES", param.chunkBytes, 1);
  // A rank that stops early (a failed call) must not leave the others waiting for ever.
  setenv("BRAID_TIMEOUT_MS", "20000", 1);
  const auto cases = testing::sweepCases(nranks, param.plan);
  auto errors = testing::runThreads(nranks, [&](int rank, ncclComm_t comm) {
    return testing::summary(testing::runSweep(comm, rank, nranks, cases));
  });
  unsetenv("BRAID_TRANSPORTS");
  unsetenv("BRAID_CHUNK_BYTES");
  unsetenv("BRAID_TIMEOUT_MS");
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// Loopback runs every type and op; TCP moves the same bytes whatever they mean, so it runs the
// representative pairs (every element size, every op).
constexpr testing::SweepPlan kFull{true, true, true};
constexpr testing::SweepPlan kTransport{false, true, true};
constexpr testing::SweepPlan kSmall{false, false, false};

INSTANTIATE_TEST_SUITE_P(Loopback, CollSweep,
                         ::testing::Combine(::testing::Values(SweepParam{"loopback", "524288",
                                                                         kFull}),
                                            ::testing::Values(1, 2, 3, 5, 8)));
INSTANTIATE_TEST_SUITE_P(Tcp, CollSweep,
                         ::testing::Combine(::testing::Values(SweepParam{"tcp", "524288",
                                                                         kTransport}),
                                            ::testing::Values(2, 3, 5, 8)));
INSTANTIATE_TEST_SUITE_P(TinyChunks, CollSweep,
                         ::testing::Combine(::testing::Values(SweepParam{"loopback", "64", kSmall},
                                                              SweepParam{"tcp", "64", kSmall}),
                                            ::testing::Values(2, 3, 5)));

// Buffers a rank does not use may be NULL: recvbuff off the root for Reduce and Gather,
// sendbuff off the root for Broadcast and Scatter.
TEST(CollArguments, UnusedBuffersMayBeNull) {
  constexpr int kRanks = 3, kRoot = 1;
  constexpr size_t kCount = 5;
  auto errors = testing::runThreads(kRanks, [](int rank, ncclComm_t comm) -> std::string {
    const bool root = rank == kRoot;
    auto value = [](int r, size_t i) { return static_cast<int32_t>(r * 100 + i); };
    std::vector<int32_t> mine(kCount), all(kRanks * kCount), out(kRanks * kCount, -1);
    for (size_t i = 0; i < kCount; ++i) mine[i] = value(rank, i);
    for (int r = 0; r < kRanks; ++r)
      for (size_t i = 0; i < kCount; ++i) all[r * kCount + i] = value(r, i);
    auto expect = [&](const char* what, ncclResult_t res,
                      const std::vector<int32_t>& want) -> std::string {
      if (res != ncclSuccess) return std::string(what) + ": " + ncclGetLastError(comm);
      for (size_t i = 0; i < want.size(); ++i)
        if (out[i] != want[i])
          return std::string(what) + ": element " + std::to_string(i) + " is " +
                 std::to_string(out[i]);
      return "";
    };
    std::vector<int32_t> sum(kCount),
        myBlock(all.begin() + rank * kCount, all.begin() + (rank + 1) * kCount);
    for (size_t i = 0; i < kCount; ++i) sum[i] = value(0, i) + value(1, i) + value(2, i);
    std::string e = expect("ncclReduce",
                           ncclReduce(mine.data(), root ? out.data() : nullptr, kCount, ncclInt32,
                                      ncclSum, kRoot, comm, nullptr),
                           root ? sum : std::vector<int32_t>{});
    if (e.empty())
      e = expect("ncclGather",
                 ncclGather(mine.data(), root ? out.data() : nullptr, kCount, ncclInt32, kRoot,
                            comm, nullptr),
                 root ? all : std::vector<int32_t>{});
    if (e.empty())
      e = expect("ncclScatter",
                 ncclScatter(root ? all.data() : nullptr, out.data(), kCount, ncclInt32, kRoot,
                             comm, nullptr),
                 myBlock);
    if (e.empty()) {
      std::vector<int32_t> rootInput(all.begin() + kRoot * kCount,
                                     all.begin() + (kRoot + 1) * kCount);
      e = expect("ncclBroadcast",
                 ncclBroadcast(root ? all.data() + kRoot * kCount : nullptr, out.data(), kCount,
                               ncclInt32, kRoot, comm, nullptr),
                 rootInput);
    }
    return e;
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

}  // namespace
}  // namespace braid
