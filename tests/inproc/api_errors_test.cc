// Every entry point validates its arguments and says which one is wrong, by name and value.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/ranks.h"

namespace {

std::string last() { return ncclGetLastError(nullptr); }

TEST(ApiErrors, VersionAndStrings) {
  int v = 0;
  EXPECT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, 23203);  // the NCCL ABI Braid implements, whatever header a client used
  EXPECT_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("version"), std::string::npos);
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_NE(std::string(ncclGetErrorString(ncclRemoteError)).find("remote"), std::string::npos);
}

TEST(ApiErrors, InitArguments) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm;
  EXPECT_EQ(ncclCommInitRank(nullptr, 2, id, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument);
  EXPECT_NE(last().find("nranks 0"), std::string::npos) << last();
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
  EXPECT_NE(last().find("rank 2"), std::string::npos) << last();
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, -1), ncclInvalidArgument);

  ncclUniqueId garbage;
  std::memset(&garbage, 0x7f, sizeof(garbage));
  EXPECT_EQ(ncclCommInitRank(&comm, 1, garbage, 0), ncclInvalidArgument);
  EXPECT_NE(last().find("commId"), std::string::npos) << last();

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0x1234;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInvalidArgument);
  EXPECT_NE(last().find("magic"), std::string::npos) << last();

  EXPECT_EQ(ncclCommInitAll(nullptr, 2, nullptr), ncclInvalidArgument);
  ncclComm_t comms[2];
  EXPECT_EQ(ncclCommInitAll(comms, 0, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("ndev 0"), std::string::npos) << last();
}

TEST(ApiErrors, CollectiveArguments) {
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  float buf[4] = {1, 2, 3, 4};
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("comm is NULL"), std::string::npos) << last();
  EXPECT_EQ(ncclAllReduce(nullptr, buf, 4, ncclFloat, ncclSum, comm, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("sendbuff"), std::string::npos) << last();
  EXPECT_EQ(ncclAllReduce(buf, nullptr, 4, ncclFloat, ncclSum, comm, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("recvbuff"), std::string::npos) << last();
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, static_cast<ncclDataType_t>(12), ncclSum, comm, nullptr),
            ncclInvalidArgument);
  EXPECT_NE(last().find("datatype 12"), std::string::npos) << last();
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat, static_cast<ncclRedOp_t>(77), comm, nullptr),
            ncclInvalidArgument);
  EXPECT_NE(last().find("op 77"), std::string::npos) << last();
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat, ncclSum, comm, nullptr), ncclSuccess)
      << "count 0 is a no-op, even with NULL buffers";
  int n = 0, r = -1, dev = 0;
  EXPECT_EQ(ncclCommCount(comm, &n), ncclSuccess);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(ncclCommUserRank(comm, &r), ncclSuccess);
  EXPECT_EQ(r, 0);
  EXPECT_EQ(ncclCommCuDevice(comm, &dev), ncclSuccess);
  EXPECT_EQ(ncclCommCount(comm, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommFinalize(comm), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(ApiErrors, UnimplementedFunctionsSaySo) {
  // The device-side structs are incomplete in Braid's header: a buffer stands in for one.
  alignas(16) char devComm[1024];
  EXPECT_EQ(ncclDevCommCreate(nullptr, nullptr, reinterpret_cast<ncclDevComm_t*>(devComm)),
            ncclInvalidUsage);
  EXPECT_NE(last().find("ncclDevCommCreate"), std::string::npos) << last();
  EXPECT_NE(last().find("not implemented"), std::string::npos) << last();
  EXPECT_EQ(ncclLLA2ACalcSlots(16, 4), -1);
  EXPECT_NE(last().find("ncclLLA2ACalcSlots"), std::string::npos) << last();
  // NCCL 2.32's one-sided signals and device pointers.
  EXPECT_EQ(ncclSignal(0, 0, 0, 0, nullptr, nullptr), ncclInvalidUsage);
  EXPECT_NE(last().find("ncclSignal: not implemented"), std::string::npos) << last();
  void* ptr = nullptr;
  EXPECT_EQ(ncclGetPeerDevicePointer(nullptr, 0, 0, &ptr), ncclInvalidUsage);
  EXPECT_NE(last().find("ncclGetPeerDevicePointer"), std::string::npos) << last();
  const ncclTeam_t team = ncclTeamCftMultimem(nullptr);
  EXPECT_EQ(team.nRanks, 0);
  EXPECT_NE(last().find("ncclTeamCftMultimem"), std::string::npos) << last();
}

TEST(ApiErrors, GroupEndWithoutStart) {
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
}

TEST(Communicators, NonBlockingInitIsPolled) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comms[2] = {nullptr, nullptr};
  for (int r = 0; r < 2; ++r) {
    ncclResult_t res = ncclCommInitRankConfig(&comms[r], 2, id, r, &config);
    ASSERT_TRUE(res == ncclInProgress || res == ncclSuccess) << res;
    ASSERT_NE(comms[r], nullptr);
  }
  for (ncclComm_t c : comms) {
    ncclResult_t state = ncclInProgress;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
      ASSERT_EQ(ncclCommGetAsyncError(c, &state), ncclSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(state, ncclSuccess);
  }
  float a[3] = {1, 2, 3}, b[3] = {4, 5, 6};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclAllReduce(a, a, 3, ncclFloat, ncclSum, comms[0], nullptr);
  ncclAllReduce(b, b, 3, ncclFloat, ncclSum, comms[1], nullptr);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  EXPECT_EQ(a[0], 5);
  EXPECT_EQ(b[2], 9);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// One thread drives every communicator of an ncclCommInitAll clique inside a group.
TEST(Communicators, OneThreadDrivesAllRanksInAGroup) {
  ncclComm_t comms[4];
  ASSERT_EQ(ncclCommInitAll(comms, 4, nullptr), ncclSuccess);
  std::vector<std::vector<int>> bufs(4, std::vector<int>(1000));
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 1000; ++i) bufs[r][i] = r * 1000 + i;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 4; ++r)
    ASSERT_EQ(
        ncclAllReduce(bufs[r].data(), bufs[r].data(), 1000, ncclInt32, ncclSum, comms[r], nullptr),
        ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(bufs[r][i], 6000 + 4 * i);
  for (auto c : comms) ncclCommDestroy(c);
}

// ncclCommAbort from another thread unblocks a rank stuck waiting for a peer that never comes.
TEST(Communicators, AbortUnblocksACollectiveInFlight) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  braid::testing::StuckAllReduce stuck(comms[0]);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  stuck.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_NE(stuck.result.load(), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
}

}  // namespace

namespace {

// ncclGroupSimulateEnd prices the group with the cost model and runs nothing.
TEST(Groups, SimulateEndEstimatesWithoutRunning) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  auto estimate = [&](size_t count) {
    std::vector<float> a(count, 1.0f), b(count, 2.0f);
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    ncclAllReduce(a.data(), a.data(), count, ncclFloat, ncclSum, comms[0], nullptr);
    ncclAllReduce(b.data(), b.data(), count, ncclFloat, ncclSum, comms[1], nullptr);
    EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess) << ncclGetLastError(nullptr);
    EXPECT_EQ(a[0], 1.0f) << "simulation must not run the collective";
    return info.estimatedTime;
  };
  float small = estimate(16), large = estimate(1 << 22);
  EXPECT_GT(small, 0.0f);
  EXPECT_GT(large, 10 * small);
  ncclSimInfo_t bad = NCCL_SIM_INFO_INITIALIZER;
  bad.magic = 0;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupSimulateEnd(&bad), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  for (auto c : comms) ncclCommDestroy(c);
}

}  // namespace
