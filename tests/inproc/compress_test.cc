// Compressed AllReduce through the API (threads as ranks): the extension header's ops and
// communicator policy, every compressible type, Sum and Avg, in and out of place; results close
// to the exact sum and identical on every rank; calls that cannot be compressed stay exact;
// ranks that disagree on compression fail; residuals are counted, reset and dropped with the
// communicator; bad arguments are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "common/coll_sweep.h"
#include "common/ranks.h"
#include "compress/topk.h"
#include "core/plan/compression.h"
#include "kernels/types.h"

namespace braid {
namespace {

std::vector<double> inputOf(int rank, size_t count) {
  std::mt19937 gen(77u + static_cast<uint32_t>(rank));
  std::normal_distribution<double> d(0.0, 1.0);
  std::vector<double> v(count);
  for (double& x : v) x = d(gen);
  return v;
}

std::vector<char> store(ncclDataType_t type, const std::vector<double>& v) {
  std::vector<char> out(v.size() * kernels::typeSize(type));
  for (size_t i = 0; i < v.size(); ++i) testing::storeFloat(type, out.data(), i, v[i]);
  return out;
}

double loadAt(ncclDataType_t type, const std::vector<char>& buf, size_t i) {
  return testing::loadFloat(type, buf.data(), i);
}

braidCompressPolicy_t policy(const char* text, size_t minBytes = 0) {
  braidCompressPolicy_t p;
  EXPECT_EQ(braidCompressPolicyParse(text, &p), ncclSuccess) << ncclGetLastError(nullptr);
  p.minBytes = minBytes;
  return p;
}

struct Outcome {
  std::vector<std::vector<char>> results;
  braidCompressStats_t stats{};
};

// Every rank runs `calls` AllReduces of its input under a compressed op made from `text`.
Outcome run(int n, const char* text, ncclDataType_t type, ncclRedOp_t base, size_t count,
            bool inPlace, int calls = 1) {
  Outcome o;
  o.results.resize(n);
  std::vector<braidCompressStats_t> stats(n);
  auto errors = testing::runThreads(n, [&](int rank, ncclComm_t comm) -> std::string {
    braidCompressPolicy_t p = policy(text);
    ncclRedOp_t op;
    if (braidRedOpCreateCompressed(comm, base, &p, &op) != ncclSuccess)
      return ncclGetLastError(comm);
    const std::vector<char> in = store(type, inputOf(rank, count));
    std::vector<char> out(in.size());
    for (int c = 0; c < calls; ++c) {
      if (inPlace) out = in;
      const void* src = inPlace ? out.data() : in.data();
      if (ncclAllReduce(src, out.data(), count, type, op, comm, nullptr) != ncclSuccess)
        return ncclGetLastError(comm);
    }
    o.results[rank] = out;
    if (braidCompressStats(comm, &stats[rank]) != ncclSuccess) return ncclGetLastError(comm);
    if (ncclRedOpDestroy(op, comm) != ncclSuccess) return ncclGetLastError(comm);
    return "";
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  o.stats = stats[0];
  return o;
}

double relL2(int n, ncclDataType_t type, const std::vector<char>& got, size_t count, bool average) {
  std::vector<double> exact(count, 0.0);
  for (int r = 0; r < n; ++r) {
    const std::vector<double> x = inputOf(r, count);
    for (size_t i = 0; i < count; ++i) exact[i] += x[i];
  }
  double e2 = 0, r2 = 0;
  for (size_t i = 0; i < count; ++i) {
    const double want = average ? exact[i] / n : exact[i];
    e2 += std::pow(loadAt(type, got, i) - want, 2);
    r2 += want * want;
  }
  return std::sqrt(e2 / r2);
}

TEST(Compress, Int8EveryTypeSumAvgInAndOutOfPlace) {
  const int n = 4;
  const size_t count = 50001;
  for (ncclDataType_t type : {ncclFloat32, ncclFloat16, ncclBfloat16})
    for (ncclRedOp_t base : {ncclSum, ncclAvg})
      for (bool inPlace : {false, true}) {
        Outcome o = run(n, "int8", type, base, count, inPlace);
        for (int r = 1; r < n; ++r)
          ASSERT_EQ(o.results[r], o.results[0]) << "rank " << r << " differs";
        const double err = relL2(n, type, o.results[0], count, base == ncclAvg);
        EXPECT_LT(err, 0.02) << kernels::typeName(type) << " " << base;
        EXPECT_GT(err, 0.0) << "int8 should be lossy: was the call compressed?";
        EXPECT_EQ(o.stats.compressedCalls, 1u);
        EXPECT_EQ(o.stats.residualBytes, count * 4);  // one fp32 residual for the buffer
        EXPECT_EQ(o.stats.residualEntries, 1u);
      }
}

TEST(Compress, TopKSendsOnlyTheLargestAndFeedbackCatchesUp) {
  const int n = 4;
  const size_t count = 40000;
  Outcome dense = run(n, "topk:1", ncclFloat32, ncclSum, count, false);
  EXPECT_LT(relL2(n, ncclFloat32, dense.results[0], count, false), 1e-6);  // ratio 1: everything
  EXPECT_EQ(dense.stats.compressedCalls, 0u);  // 4 ranks x ratio 1: dense is cheaper, exact
  // Half and bfloat16: every rank's top-k summed in fp32 (and divided for Avg), rounded once to
  // the type; the same bits as computing it here with the codec.
  std::unique_ptr<compress::TopKCodec> codec;
  ASSERT_TRUE(compress::TopKCodec::create({0.3}, &codec).ok());
  const int m = 3;  // 3 x 0.3 < 1: sparse is cheaper
  for (ncclDataType_t type : {ncclFloat16, ncclBfloat16})
    for (ncclRedOp_t base : {ncclSum, ncclAvg}) {
      Outcome o = run(m, "topk:0.3", type, base, count, true);
      for (int r = 1; r < m; ++r) ASSERT_EQ(o.results[r], o.results[0]);
      EXPECT_EQ(o.stats.compressedCalls, 1u);
      std::vector<float> acc(count, 0.0f);
      for (int r = 0; r < m; ++r) {
        const std::vector<char> in = store(type, inputOf(r, count));
        std::vector<std::byte> msg(codec->maxEncodedBytes(count, type));
        size_t written = 0;
        ASSERT_TRUE(codec->encode(in.data(), count, type, nullptr, 0, msg, &written).ok());
        ASSERT_TRUE(codec->decodeAccumulate(msg, count, acc.data()).ok());
      }
      for (size_t i = 0; i < count; ++i) {
        float v = base == ncclAvg ? acc[i] / static_cast<float>(m) : acc[i];
        uint16_t want =
            type == ncclFloat16 ? kernels::floatToHalf(v).bits : kernels::floatToBf16(v).bits;
        uint16_t got;
        std::memcpy(&got, o.results[0].data() + 2 * i, 2);
        ASSERT_EQ(got, want) << kernels::typeName(type) << " element " << i;
      }
    }
  Outcome sparse = run(n, "topk:0.01", ncclFloat32, ncclSum, count, true);
  for (int r = 1; r < n; ++r) ASSERT_EQ(sparse.results[r], sparse.results[0]);
  size_t nonzero = 0;
  for (size_t i = 0; i < count; ++i) nonzero += loadAt(ncclFloat32, sparse.results[0], i) != 0.0;
  EXPECT_LE(nonzero, n * count / 100 + 4 * 8);  // at most each rank's 1% (rounded per chunk)
  EXPECT_GT(nonzero, count / 100);
  EXPECT_EQ(sparse.stats.compressedCalls, 1u);
}

// Gradient buckets as frameworks issue them: several compressed AllReduces (and an exact one)
// in one group, each with its own buffer and residual; the same results as one at a time.
TEST(Compress, BucketsInOneGroup) {
  const int n = 3;
  const size_t sizes[] = {30011, 7, 65536};
  auto errors = testing::runThreads(n, [&](int rank, ncclComm_t comm) -> std::string {
    braidCompressPolicy_t p = policy("int8");
    ncclRedOp_t op;
    if (braidRedOpCreateCompressed(comm, ncclAvg, &p, &op) != ncclSuccess)
      return ncclGetLastError(comm);
    std::vector<std::vector<float>> in, grouped, alone;
    for (size_t b = 0; b < 3; ++b) {
      std::vector<double> x = inputOf(rank + 10 * static_cast<int>(b), sizes[b]);
      in.emplace_back(x.begin(), x.end());
      grouped.emplace_back(sizes[b]);
      alone.emplace_back(sizes[b]);
    }
    std::vector<int32_t> exactIn(100, rank), exactOut(100);
    if (ncclGroupStart() != ncclSuccess) return "group start";
    for (size_t b = 0; b < 3; ++b)
      if (ncclAllReduce(in[b].data(), grouped[b].data(), sizes[b], ncclFloat32, op, comm,
                        nullptr) != ncclSuccess)
        return ncclGetLastError(comm);
    if (ncclAllReduce(exactIn.data(), exactOut.data(), 100, ncclInt32, ncclSum, comm, nullptr) !=
        ncclSuccess)
      return ncclGetLastError(comm);
    if (ncclGroupEnd() != ncclSuccess) return std::string("group end: ") + ncclGetLastError(comm);
    for (int32_t v : exactOut)
      if (v != 3) return "exact call in the group: " + std::to_string(v);
    // One at a time, on fresh residuals: the same bits.
    if (braidCompressReset(comm, nullptr) != ncclSuccess) return ncclGetLastError(comm);
    for (size_t b = 0; b < 3; ++b)
      if (ncclAllReduce(in[b].data(), alone[b].data(), sizes[b], ncclFloat32, op, comm, nullptr) !=
          ncclSuccess)
        return ncclGetLastError(comm);
    for (size_t b = 0; b < 3; ++b)
      if (grouped[b] != alone[b]) return "bucket " + std::to_string(b) + " differs in a group";
    braidCompressStats_t st;
    braidCompressStats(comm, &st);
    if (st.residualEntries != 3) return "residual entries " + std::to_string(st.residualEntries);
    return ncclRedOpDestroy(op, comm) == ncclSuccess ? "" : ncclGetLastError(comm);
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

TEST(Compress, CallsThatCannotBeCompressedStayExact) {
  const int n = 3;
  const size_t count = 1001;
  auto errors = testing::runThreads(n, [&](int rank, ncclComm_t comm) -> std::string {
    braidCompressPolicy_t p = policy("int8", 1 << 20);  // count * 4 is below the minimum
    ncclRedOp_t op;
    if (braidRedOpCreateCompressed(comm, ncclSum, &p, &op) != ncclSuccess)
      return ncclGetLastError(comm);
    std::vector<float> in(count), a(count), b(count);
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(rank * 3 + i % 7) * 0.37f;
    if (ncclAllReduce(in.data(), a.data(), count, ncclFloat32, op, comm, nullptr) != ncclSuccess ||
        ncclAllReduce(in.data(), b.data(), count, ncclFloat32, ncclSum, comm, nullptr) !=
            ncclSuccess)
      return ncclGetLastError(comm);
    if (a != b) return "small call differs from the exact sum";
    // Integers: exact whatever the size.
    std::vector<int32_t> ii(1 << 19, rank + 1), io(1 << 19);
    if (ncclAllReduce(ii.data(), io.data(), ii.size(), ncclInt32, op, comm, nullptr) != ncclSuccess)
      return ncclGetLastError(comm);
    for (int32_t v : io)
      if (v != 6) return "int32 sum " + std::to_string(v);
    braidCompressStats_t s;
    if (braidCompressStats(comm, &s) != ncclSuccess) return ncclGetLastError(comm);
    if (s.compressedCalls != 0 || s.exactCalls != 2)
      return "stats " + std::to_string(s.compressedCalls) + " compressed, " +
             std::to_string(s.exactCalls) + " exact";
    return ncclRedOpDestroy(op, comm) == ncclSuccess ? "" : ncclGetLastError(comm);
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

// Threads share memory: auto never compresses there, and nothing changes.
TEST(Compress, AutoStaysExactOnSharedMemory) {
  auto errors = testing::runThreads(4, [&](int rank, ncclComm_t comm) -> std::string {
    braidCompressPolicy_t p = policy("auto");
    if (braidCommSetCompression(comm, &p) != ncclSuccess) return ncclGetLastError(comm);
    std::vector<float> in(1 << 18, static_cast<float>(rank) + 0.25f), out(in.size());
    if (ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat32, ncclSum, comm, nullptr) !=
        ncclSuccess)
      return ncclGetLastError(comm);
    for (float v : out)
      if (v != 7.0f) return "auto changed a value: " + std::to_string(v);
    braidCompressStats_t s;
    braidCompressStats(comm, &s);
    if (s.compressedCalls != 0) return "auto compressed on shared memory";
    return "";
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

// Rank 1 with another codec, exact, or another top-k ratio than the others: every rank fails
// with ncclInvalidUsage naming the compression.
TEST(Compress, RanksThatDisagreeFail) {
  const size_t count = 1 << 16;
  const std::pair<const char*, const char*> cases[] = {
      {"topk:0.05", "int8"}, {"none", "int8"}, {"topk:0.1", "topk:0.05"}};
  for (const auto& c : cases) {
    // Not a structured binding: the lambda captures both, which clang 14 cannot do with one.
    const char* odd = c.first;
    const char* others = c.second;
    auto errors = testing::runThreads(3, [&](int rank, ncclComm_t comm) -> std::string {
      braidCompressPolicy_t p = policy(rank == 1 ? odd : others);
      if (braidCommSetCompression(comm, &p) != ncclSuccess) return ncclGetLastError(comm);
      std::vector<float> in(count, 1.0f), out(count);
      ncclResult_t res =
          ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr);
      if (res != ncclInvalidUsage)
        return "result " + std::to_string(res) + ": " + ncclGetLastError(comm);
      std::string text = ncclGetLastError(comm);
      if (text.find("compressed") == std::string::npos)
        return "message without the compression: " + text;
      return "";
    });
    for (auto& e : errors) EXPECT_EQ(e, "") << odd << " against " << others;
  }
}

TEST(Compress, ResidualsResetAndDieWithTheCommunicator) {
  const size_t before = residualStore().stats().bytes;
  const size_t count = 1 << 15;
  std::vector<ncclComm_t> comms(2);
  ASSERT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclSuccess);
  std::vector<std::vector<float>> bufs(2, std::vector<float>(count, 0.5f));
  auto allreduce = [&](ncclRedOp_t* ops) {
    std::vector<std::thread> t;
    for (int r = 0; r < 2; ++r)
      t.emplace_back([&, r] {
        EXPECT_EQ(ncclAllReduce(bufs[r].data(), bufs[r].data(), count, ncclFloat32, ops[r],
                                comms[r], nullptr),
                  ncclSuccess);
      });
    for (auto& th : t) th.join();
  };
  ncclRedOp_t ops[2];
  for (int r = 0; r < 2; ++r) {
    braidCompressPolicy_t p = policy("int8");
    ASSERT_EQ(braidRedOpCreateCompressed(comms[r], ncclSum, &p, &ops[r]), ncclSuccess);
  }
  allreduce(ops);
  braidCompressStats_t s;
  ASSERT_EQ(braidCompressStats(comms[0], &s), ncclSuccess);
  EXPECT_EQ(s.residualBytes, count * 4);
  ASSERT_EQ(braidCompressReset(comms[0], bufs[0].data()), ncclSuccess);
  ASSERT_EQ(braidCompressStats(comms[0], &s), ncclSuccess);
  EXPECT_EQ(s.residualBytes, 0u);
  allreduce(ops);
  EXPECT_EQ(residualStore().stats().bytes, before + 2 * count * 4);
  for (auto c : comms) ASSERT_EQ(ncclCommDestroy(c), ncclSuccess);
  EXPECT_EQ(residualStore().stats().bytes, before);
}

TEST(Compress, BadArgumentsAreNamed) {
  braidCompressPolicy_t p;
  EXPECT_EQ(braidCompressPolicyParse("zip", &p), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("zip"), std::string::npos);
  EXPECT_EQ(braidCompressPolicyParse("topk:2", &p), ncclInvalidArgument);
  EXPECT_EQ(braidCompressPolicyParse("int8:0.5", &p), ncclInvalidArgument);
  EXPECT_EQ(braidCompressPolicyParse("int8", nullptr), ncclInvalidArgument);
  auto errors = testing::runThreads(2, [&](int rank, ncclComm_t comm) -> std::string {
    braidCompressPolicy_t q = policy("int8");
    q.blockSize = 7;
    ncclRedOp_t op;
    if (braidRedOpCreateCompressed(comm, ncclSum, &q, &op) != ncclInvalidArgument)
      return "block 7 accepted";
    if (std::string(ncclGetLastError(comm)).find("blockSize") == std::string::npos)
      return "blockSize not named";
    q = policy("int8");
    if (braidRedOpCreateCompressed(comm, ncclMax, &q, &op) != ncclInvalidArgument)
      return "max accepted";
    if (braidRedOpCreateCompressed(comm, ncclSum, nullptr, &op) != ncclInvalidArgument)
      return "NULL policy";
    if (braidCommSetCompression(comm, nullptr) != ncclInvalidArgument) return "NULL policy set";
    if (braidCompressStats(comm, nullptr) != ncclInvalidArgument) return "NULL stats";
    return "";
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
  setenv("BRAID_COMPRESS", "int4", 1);
  std::vector<ncclComm_t> comms(2);
  EXPECT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("BRAID_COMPRESS"), std::string::npos);
  unsetenv("BRAID_COMPRESS");
}

}  // namespace
}  // namespace braid
