// The AllReduce sweep with threads as ranks: every type x op x count {0, 1, 7, n-1, 1M+3} x
// in/out of place, for 1, 2, 3, 4 and 8 ranks, over the loopback transport and over TCP;
// and again with 64-byte chunks so that small inputs run through many pipeline steps.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/allreduce_check.h"
#include "common/ranks.h"

namespace braid {
namespace {

struct SweepParam {
  const char* transports;  // BRAID_TRANSPORTS
  const char* chunkBytes;  // BRAID_CHUNK_BYTES
  bool large;              // include the 1M+3 count
};

class AllReduceSweep : public ::testing::TestWithParam<std::tuple<SweepParam, int>> {};

TEST_P(AllReduceSweep, MatchesReference) {
  // Not a structured binding: a lambda below captures nranks, which clang 14 cannot do with one.
  const auto& param = std::get<0>(GetParam());
  const int nranks = std::get<1>(GetParam());
  setenv("BRAID_TRANSPORTS", param.transports, 1);
  setenv("BRAID_CHUNK_BYTES", param.chunkBytes, 1);
  auto cases = testing::sweepCases(nranks, param.large);
  auto errors = testing::runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
    for (const auto& c : cases)
      if (std::string e = testing::runAllReduce(comm, rank, nranks, c); !e.empty()) return e;
    return "";
  });
  unsetenv("BRAID_TRANSPORTS");
  unsetenv("BRAID_CHUNK_BYTES");
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

std::string caseName(const ::testing::TestParamInfo<AllReduceSweep::ParamType>& info) {
  const auto& [param, nranks] = info.param;
  return std::string(param.transports) + "_chunk" + param.chunkBytes + "_" +
         std::to_string(nranks) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Loopback, AllReduceSweep,
                         ::testing::Combine(::testing::Values(SweepParam{"loopback", "524288",
                                                                         true}),
                                            ::testing::Values(1, 2, 3, 4, 8)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Tcp, AllReduceSweep,
                         ::testing::Combine(::testing::Values(SweepParam{"tcp", "524288", true}),
                                            ::testing::Values(2, 3, 4, 8)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(TinyChunks, AllReduceSweep,
                         ::testing::Combine(::testing::Values(SweepParam{"loopback", "64", false},
                                                              SweepParam{"tcp", "64", false}),
                                            ::testing::Values(2, 3, 5)),
                         caseName);

}  // namespace
}  // namespace braid
