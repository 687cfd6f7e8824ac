// Calls too large for the caches write their final output around the cache (the executor marks
// those receives `streamed`, and the shared-memory ring then copies out with non-temporal
// stores; from 32 MiB out of place, the reduce writes its sums that way too). The results must
// not care: AllGather of more than 8 MiB and AllReduce of more than 32 MiB per rank on 2 and 3
// ranks (with 3, ring steps that forward what they receive are not streamed, and partial sums
// are), in and out of place, checked element by element.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/ranks.h"

namespace braid {
namespace {

constexpr size_t kCount = (size_t{9} << 20) / sizeof(int32_t) + 5;         // 9 MiB and a bit
constexpr size_t kReduceCount = (size_t{33} << 20) / sizeof(int32_t) + 5;  // 33 MiB and a bit

int32_t input(int rank, size_t i) {
  return static_cast<int32_t>((i * 7 + static_cast<size_t>(rank) * 13) % 1000);
}

std::string allReduce(int rank, int nranks, ncclComm_t comm, bool inPlace) {
  std::vector<int32_t> in(kReduceCount), out(kReduceCount);
  for (size_t i = 0; i < kReduceCount; ++i) in[i] = input(rank, i);
  int32_t* dst = inPlace ? in.data() : out.data();
  if (ncclAllReduce(in.data(), dst, kReduceCount, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess)
    return std::string("ncclAllReduce: ") + ncclGetLastError(comm);
  for (size_t i = 0; i < kReduceCount; ++i) {
    int32_t want = 0;
    for (int r = 0; r < nranks; ++r) want += input(r, i);
    if (dst[i] != want)
      return "AllReduce element " + std::to_string(i) + ": " + std::to_string(dst[i]);
  }
  return "";
}

std::string allGather(int rank, int nranks, ncclComm_t comm, bool inPlace) {
  std::vector<int32_t> in(kCount), out(kCount * nranks);
  for (size_t i = 0; i < kCount; ++i) in[i] = input(rank, i);
  const int32_t* src = in.data();
  if (inPlace) {
    std::copy(in.begin(), in.end(), out.begin() + static_cast<ptrdiff_t>(kCount * rank));
    src = out.data() + kCount * rank;
  }
  if (ncclAllGather(src, out.data(), kCount, ncclInt32, comm, nullptr) != ncclSuccess)
    return std::string("ncclAllGather: ") + ncclGetLastError(comm);
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < kCount; ++i)
      if (out[r * kCount + i] != input(r, i))
        return "AllGather rank " + std::to_string(r) + " element " + std::to_string(i);
  return "";
}

void expectRight(int nranks) {
  auto results = testing::runProcesses(nranks, [nranks](int rank, ncclComm_t comm) {
    for (bool inPlace : {false, true}) {
      for (auto* run : {allReduce, allGather}) {
        const std::string e = run(rank, nranks, comm, inPlace);
        if (!e.empty()) {
          std::fprintf(stderr, "rank %d (%s): %s\n", rank, inPlace ? "in place" : "out of place",
                       e.c_str());
          return 1;
        }
      }
    }
    return 0;
  });
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

TEST(LargeOutput, TwoRanksOverSharedMemory) { expectRight(2); }
TEST(LargeOutput, ThreeRanksOverSharedMemory) { expectRight(3); }

}  // namespace
}  // namespace braid
