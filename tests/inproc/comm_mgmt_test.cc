// Communicators made from others (split, shrink), revoke, scalable init, threads as ranks: the
// children work (an AllReduce over each gives its own group's sum), ranks are ordered as NCCL
// documents, and every argument error names the argument.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/ranks.h"
#include "core/comm/comm.h"

namespace {

using braid::testing::runThreads;

std::string last(ncclComm_t comm = nullptr) { return ncclGetLastError(comm); }

std::string expectAll(const std::vector<std::string>& errors) {
  std::string all;
  for (size_t r = 0; r < errors.size(); ++r)
    if (!errors[r].empty()) all += "rank " + std::to_string(r) + ": " + errors[r] + "\n";
  return all;
}

// AllReduce(sum) of `value` over comm; "" or what went wrong.
std::string sumIs(ncclComm_t comm, int value, int expected) {
  std::vector<int> buf(1000, value);
  if (ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclInt32, ncclSum, comm, nullptr) !=
      ncclSuccess)
    return "AllReduce: " + last(comm);
  for (int x : buf)
    if (x != expected) return "sum " + std::to_string(x) + ", expected " + std::to_string(expected);
  return "";
}

std::string rankAndSize(ncclComm_t comm, int rank, int size) {
  int r = -1, n = -1;
  if (ncclCommUserRank(comm, &r) != ncclSuccess || ncclCommCount(comm, &n) != ncclSuccess)
    return "queries failed: " + last(comm);
  if (r != rank || n != size)
    return "rank " + std::to_string(r) + " of " + std::to_string(n) + ", expected " +
           std::to_string(rank) + " of " + std::to_string(size);
  return "";
}

ncclResult_t waitReady(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return state;
}

// Ranks 0, 2 are color 0; 1, 3 color 1; rank 4 takes part with NCCL_SPLIT_NOCOLOR.
TEST(Split, TwoColorsAndNoColor) {
  auto errors = runThreads(5, [](int rank, ncclComm_t comm) -> std::string {
    const int color = rank == 4 ? NCCL_SPLIT_NOCOLOR : rank % 2;
    ncclComm_t child = reinterpret_cast<ncclComm_t>(0x1);
    if (ncclCommSplit(comm, color, rank, &child, nullptr) != ncclSuccess)
      return "split: " + last(comm);
    if (rank == 4) return child ? "NOCOLOR gave a communicator" : sumIs(comm, 1, 5);
    if (!child) return "no communicator";
    std::string err = rankAndSize(child, rank / 2, 2);
    // Color 0 holds old ranks 0 and 2 (1 + 3), color 1 old ranks 1 and 3 (2 + 4).
    if (err.empty()) err = sumIs(child, rank + 1, rank % 2 == 0 ? 4 : 6);
    // The parent keeps working beside its children.
    std::string parentErr = sumIs(comm, 1, 5);
    if (err.empty()) err = parentErr;
    ncclCommDestroy(child);
    return err;
  });
  EXPECT_EQ(expectAll(errors), "");
}

TEST(Split, KeysOrderTheNewRanks) {
  auto errors = runThreads(4, [](int rank, ncclComm_t comm) -> std::string {
    ncclComm_t child = nullptr;
    if (ncclCommSplit(comm, 7, 100 - rank, &child, nullptr) != ncclSuccess)
      return "split: " + last(comm);
    std::string err = rankAndSize(child, 3 - rank, 4);
    // New rank i holds old rank 3 - i.
    std::vector<int> all(4, -1);
    if (err.empty() &&
        ncclAllGather(&rank, all.data(), 1, ncclInt32, child, nullptr) != ncclSuccess)
      err = "AllGather: " + last(child);
    for (int i = 0; err.empty() && i < 4; ++i)
      if (all[i] != 3 - i)
        err = "new rank " + std::to_string(i) + " is old rank " + std::to_string(all[i]);
    ncclCommDestroy(child);
    return err;
  });
  EXPECT_EQ(expectAll(errors), "");
}

// Equal keys keep the parent's order.
TEST(Split, EqualKeysKeepParentOrder) {
  auto errors = runThreads(3, [](int rank, ncclComm_t comm) -> std::string {
    ncclComm_t child = nullptr;
    if (ncclCommSplit(comm, 0, 0, &child, nullptr) != ncclSuccess) return "split: " + last(comm);
    std::string err = rankAndSize(child, rank, 3);
    ncclCommDestroy(child);
    return err;
  });
  EXPECT_EQ(expectAll(errors), "");
}

// A NULL config inherits the parent's (non-blocking, named); an explicit one overrides it.
TEST(Split, ConfigIsInheritedOrOverridden) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      config.commName = "parent";
      ncclComm_t parent = nullptr;
      ncclResult_t res = ncclCommInitRankConfig(&parent, 2, id, r, &config);
      if ((res != ncclSuccess && res != ncclInProgress) || waitReady(parent) != ncclSuccess) {
        errors[r] = "parent init: " + last(parent);
        return;
      }
      ncclComm_t inherited = nullptr, blocking = nullptr;
      res = ncclCommSplit(parent, 0, r, &inherited, nullptr);
      if (res != ncclSuccess && res != ncclInProgress)
        errors[r] = "split: " + last(parent);
      else if (waitReady(inherited) != ncclSuccess)
        errors[r] = "child init: " + last(inherited);
      else if (inherited->config.blocking || inherited->config.name != "parent")
        errors[r] = "the child did not inherit the non-blocking named config";
      ncclConfig_t explicitConfig = NCCL_CONFIG_INITIALIZER;
      explicitConfig.blocking = 1;
      if (errors[r].empty() &&
          ncclCommSplit(parent, 0, r, &blocking, &explicitConfig) != ncclSuccess)
        errors[r] = "blocking split: " + last(parent);
      else if (errors[r].empty() && (!blocking->config.blocking || !blocking->config.name.empty()))
        errors[r] = "the explicit config was not used";
      if (errors[r].empty()) errors[r] = sumIs(blocking, 2, 4);
      ncclCommDestroy(blocking);
      ncclCommDestroy(inherited);
      ncclCommDestroy(parent);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(expectAll(errors), "");
}

TEST(Split, ArgumentErrors) {
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  ncclComm_t child = nullptr;
  EXPECT_EQ(ncclCommSplit(comm, -2, 0, &child, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("color -2"), std::string::npos) << last();
  EXPECT_EQ(ncclCommSplit(comm, 0, 0, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("newcomm"), std::string::npos) << last();
  EXPECT_EQ(ncclCommSplit(nullptr, 0, 0, &child, nullptr), ncclInvalidArgument);
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 1;
  EXPECT_EQ(ncclCommSplit(comm, 0, 0, &child, &bad), ncclInvalidArgument);
  EXPECT_NE(last().find("magic"), std::string::npos) << last();
  // A single rank splits into itself.
  ASSERT_EQ(ncclCommSplit(comm, 3, 0, &child, nullptr), ncclSuccess) << last();
  EXPECT_EQ(rankAndSize(child, 0, 1), "");
  ncclCommDestroy(child);
  ncclCommDestroy(comm);
}

// Rank 2 of 4 leaves; the others shrink it away and carry on in old-rank order.
TEST(Shrink, ExcludingOneRank) {
  auto errors = runThreads(4, [](int rank, ncclComm_t comm) -> std::string {
    if (rank == 2) return "";
    int excluded[] = {2};
    ncclComm_t child = nullptr;
    if (ncclCommShrink(comm, excluded, 1, &child, nullptr, NCCL_SHRINK_DEFAULT) != ncclSuccess)
      return "shrink: " + last(comm);
    std::string err = rankAndSize(child, rank < 2 ? rank : rank - 1, 3);
    if (err.empty()) err = sumIs(child, rank + 1, 1 + 2 + 4);
    ncclCommDestroy(child);
    return err;
  });
  EXPECT_EQ(expectAll(errors), "");
}

TEST(Shrink, ArgumentErrors) {
  ncclComm_t comms[3];
  ASSERT_EQ(ncclCommInitAll(comms, 3, nullptr), ncclSuccess);
  ncclComm_t child = nullptr;
  int self[] = {0}, twice[] = {1, 1}, outOfRange[] = {3}, everyone[] = {0, 1, 2};
  EXPECT_EQ(ncclCommShrink(comms[0], self, 1, &child, nullptr, 0), ncclInvalidArgument);
  EXPECT_NE(last().find("excludeRanksList[0] = 0 is the calling rank"), std::string::npos)
      << last();
  EXPECT_EQ(ncclCommShrink(comms[0], twice, 2, &child, nullptr, 0), ncclInvalidArgument);
  EXPECT_NE(last().find("listed twice"), std::string::npos) << last();
  EXPECT_EQ(ncclCommShrink(comms[0], outOfRange, 1, &child, nullptr, 0), ncclInvalidArgument);
  EXPECT_NE(last().find("= 3 is out of range"), std::string::npos) << last();
  EXPECT_EQ(ncclCommShrink(comms[1], everyone, 3, &child, nullptr, 0), ncclInvalidArgument);
  EXPECT_NE(last().find("excludeRanksCount 3"), std::string::npos) << last();
  EXPECT_EQ(ncclCommShrink(comms[0], nullptr, 1, &child, nullptr, 0), ncclInvalidArgument);
  EXPECT_NE(last().find("excludeRanksList is NULL"), std::string::npos) << last();
  EXPECT_EQ(ncclCommShrink(comms[0], nullptr, -1, &child, nullptr, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(comms[0], outOfRange, 0, &child, nullptr, 5), ncclInvalidArgument);
  EXPECT_NE(last().find("shrinkFlags 5"), std::string::npos) << last();
  EXPECT_EQ(ncclCommShrink(comms[0], nullptr, 0, nullptr, nullptr, 0), ncclInvalidArgument);
  EXPECT_EQ(child, nullptr);
  for (auto c : comms) ncclCommDestroy(c);
}

// After revoke a collective fails and says why, yet shrink still builds a working communicator.
TEST(Revoke, CollectivesFailShrinkWorks) {
  auto errors = runThreads(3, [](int rank, ncclComm_t comm) -> std::string {
    if (ncclCommRevoke(comm, 1) != ncclInvalidArgument) return "revokeFlags 1 accepted";
    if (ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) != ncclSuccess) return "revoke: " + last(comm);
    int x = 1;
    if (ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, nullptr) != ncclInvalidUsage)
      return "a collective on a revoked communicator did not fail";
    if (last(comm).find("revoked") == std::string::npos) return "message: " + last(comm);
    if (ncclCommFinalize(comm) == ncclSuccess) return "finalize after revoke succeeded";
    ncclResult_t state = ncclInternalError;
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess || state != ncclSuccess)
      return "async error " + std::to_string(state) + " after revoke";
    ncclComm_t child = nullptr;
    if (ncclCommShrink(comm, nullptr, 0, &child, nullptr, NCCL_SHRINK_DEFAULT) != ncclSuccess)
      return "shrink: " + last(comm);
    std::string err = rankAndSize(child, rank, 3);
    if (err.empty()) err = sumIs(child, rank, 3);
    ncclCommDestroy(child);
    return err;
  });
  EXPECT_EQ(expectAll(errors), "");
}

// Rank 0 waits in an AllReduce its peer never joins; revoke from another thread ends it.
TEST(Revoke, StopsACollectiveInFlight) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  braid::testing::StuckAllReduce stuck(comms[0]);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT), ncclSuccess);
  EXPECT_NE(stuck.result.load(), -1) << "revoke returned before the collective left";
  stuck.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(stuck.result.load(), ncclInvalidUsage);
  for (auto c : comms) ncclCommAbort(c);
}

// NCCL_SHRINK_ABORT ends what is in flight on the parent before shrinking.
TEST(Shrink, AbortFlagStopsCallsInFlight) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  braid::testing::StuckAllReduce stuck(comms[0]);
  std::vector<ncclComm_t> child(2, nullptr);
  std::vector<ncclResult_t> res(2, ncclInternalError);
  std::thread other([&] {
    res[1] = ncclCommShrink(comms[1], nullptr, 0, &child[1], nullptr, NCCL_SHRINK_ABORT);
  });
  res[0] = ncclCommShrink(comms[0], nullptr, 0, &child[0], nullptr, NCCL_SHRINK_ABORT);
  other.join();
  stuck.join();
  EXPECT_EQ(stuck.result.load(), ncclInvalidUsage);
  ASSERT_EQ(res[0], ncclSuccess) << last();
  ASSERT_EQ(res[1], ncclSuccess) << last();
  float a = 1, b = 2;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclAllReduce(&a, &a, 1, ncclFloat, ncclSum, child[0], nullptr);
  ncclAllReduce(&b, &b, 1, ncclFloat, ncclSum, child[1], nullptr);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 3);
  for (auto c : child) ncclCommDestroy(c);
  for (auto c : comms) ncclCommDestroy(c);
}

TEST(ScalableInit, TwoIds) {
  ncclUniqueId ids[2];
  ASSERT_EQ(ncclGetUniqueId(&ids[0]), ncclSuccess);
  ASSERT_EQ(ncclGetUniqueId(&ids[1]), ncclSuccess);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      ncclComm_t comm = nullptr;
      if (ncclCommInitRankScalable(&comm, 4, r, 2, ids, nullptr) != ncclSuccess) {
        errors[r] = "init: " + last();
        return;
      }
      errors[r] = rankAndSize(comm, r, 4);
      if (errors[r].empty()) errors[r] = sumIs(comm, r, 6);
      ncclCommDestroy(comm);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(expectAll(errors), "");
}

TEST(ScalableInit, ArgumentErrors) {
  ncclUniqueId ids[2];
  ASSERT_EQ(ncclGetUniqueId(&ids[0]), ncclSuccess);
  std::memset(&ids[1], 0x7f, sizeof(ids[1]));
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 2, 0, 0, ids, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("nId 0"), std::string::npos) << last();
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 2, 0, 1, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("commIds is NULL"), std::string::npos) << last();
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 2, 0, 2, ids, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("commIds[1]"), std::string::npos) << last();
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 2, 0, 3, ids, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("nId 3"), std::string::npos) << last();
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 2, 5, 1, ids, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("rank 5"), std::string::npos) << last();
}

}  // namespace
