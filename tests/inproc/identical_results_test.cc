// Every rank ends an AllReduce with the same bits, also where operand order shows: max of -0
// and +0, and NaNs with different payloads. Checked for each algorithm's small and large paths.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/ranks.h"

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float withBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

void expectIdentical(int nranks, size_t count, ncclRedOp_t op, bool inPlace) {
  std::vector<std::vector<float>> out(nranks);
  auto errors = braid::testing::runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
    std::vector<float> in(count), res(count);
    for (size_t i = 0; i < count; ++i) {
      switch (i % 3) {
        case 0: in[i] = rank % 2 ? 0.0f : -0.0f; break;  // signed zeros
        case 1:
          in[i] = withBits(0x7fc00000u | static_cast<uint32_t>(rank + 1));
          break;  // NaN payloads
        default: in[i] = static_cast<float>(rank) * 0.1f; break;
      }
    }
    float* dst = inPlace ? in.data() : res.data();
    if (ncclAllReduce(in.data(), dst, count, ncclFloat, op, comm, nullptr) != ncclSuccess)
      return ncclGetLastError(comm);
    out[rank].assign(dst, dst + count);
    return "";
  });
  for (auto& e : errors) ASSERT_EQ(e, "");
  for (int r = 1; r < nranks; ++r)
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(bits(out[r][i]), bits(out[0][i])) << "rank " << r << " element " << i;
}

TEST(IdenticalResults, AcrossRanksForEveryOp) {
  for (int nranks : {2, 3, 4})
    for (size_t count : {size_t{3}, size_t{30001}})
      for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin})
        for (bool inPlace : {false, true}) expectIdentical(nranks, count, op, inPlace);
}

}  // namespace
