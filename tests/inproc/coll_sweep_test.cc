// The collective sweep (tests/common/coll_sweep.h) with threads as ranks: every collective,
// type, op, root, count and in-place form, for 1, 2, 3, 5 and 8 ranks, over the loopback
// transport and over TCP; and with 64-byte chunks on small counts, so that even a few elements
// travel through many pipeline steps.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/coll_sweep.h"
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
  const auto& [param, nranks] = GetParam();
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
                         ::testing::Combine(::testing::Values(SweepParam{"loopback", "524288", kFull}),
                                            ::testing::Values(1, 2, 3, 5, 8)));
INSTANTIATE_TEST_SUITE_P(Tcp, CollSweep,
                         ::testing::Combine(::testing::Values(SweepParam{"tcp", "524288", kTransport}),
                                            ::testing::Values(2, 3, 5, 8)));
INSTANTIATE_TEST_SUITE_P(TinyChunks, CollSweep,
                         ::testing::Combine(::testing::Values(SweepParam{"loopback", "64", kSmall},
                                                              SweepParam{"tcp", "64", kSmall}),
                                            ::testing::Values(2, 3, 5)));

}  // namespace
}  // namespace braid
