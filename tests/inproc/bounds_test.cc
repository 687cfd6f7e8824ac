// Counts no buffer can hold fail at once with ncclInvalidArgument naming the count, the type and
// the buffer, before anything computes with the sizes, on any rank alone; nothing is sent, so
// the communicator stays usable. Counts that do fit in 64 bits plan in bounded work (their
// schedules: unit schedule_bounds_test).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nccl.h"

namespace {

std::string last(ncclComm_t comm) { return ncclGetLastError(comm); }

// Two ranks driven from one thread in a group: an exact AllReduce still works.
void expectUsable(ncclComm_t comms[2]) {
  std::vector<float> a(1000, 1.0f), b(1000, 2.0f);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat, ncclSum, comms[0], nullptr),
            ncclSuccess);
  ASSERT_EQ(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat, ncclSum, comms[1], nullptr),
            ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(a[999], 3.0f);
  EXPECT_EQ(b[0], 3.0f);
}

struct Oversized {
  const char* name;
  std::function<ncclResult_t(ncclComm_t, void*)> call;
  std::string expect;  // in the message
};

TEST(Bounds, CountsThatOverflowFailAtOnceNamingTheBuffer) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  const size_t huge = size_t{1} << 62;           // x 4 bytes: 2^64, past 64 bits
  const size_t perRank = (size_t{1} << 62) + 1;  // one byte each, x 2 ranks: over 2^63
  const std::vector<Oversized> calls = {
      {"ncclAllReduce",
       [&](ncclComm_t c, void* p) { return ncclAllReduce(p, p, huge, ncclFloat, ncclSum, c, 0); },
       "count 4611686018427387904 of float (4-byte elements) is larger than any sendbuff"},
      {"ncclBroadcast",
       [&](ncclComm_t c, void* p) { return ncclBroadcast(p, p, huge, ncclFloat, 0, c, 0); },
       "larger than any sendbuff"},
      {"ncclReduce",
       [&](ncclComm_t c, void* p) { return ncclReduce(p, p, huge, ncclInt32, ncclMax, 0, c, 0); },
       "count 4611686018427387904 of int32"},
      {"ncclAllGather",
       [&](ncclComm_t c, void* p) { return ncclAllGather(p, p, perRank, ncclInt8, c, 0); },
       "count 4611686018427387905 of int8 (1-byte elements) x 2 ranks is larger than any recvbuff"},
      {"ncclReduceScatter",
       [&](ncclComm_t c, void* p) {
         return ncclReduceScatter(p, p, perRank, ncclUint8, ncclSum, c, 0);
       },
       "x 2 ranks is larger than any sendbuff"},
      {"ncclAlltoAll",
       [&](ncclComm_t c, void* p) { return ncclAlltoAll(p, p, perRank, ncclInt8, c, 0); },
       "x 2 ranks is larger than any sendbuff"},
      {"ncclGather",
       [&](ncclComm_t c, void* p) { return ncclGather(p, p, perRank, ncclInt8, 0, c, 0); },
       "x 2 ranks is larger than any recvbuff"},
      {"ncclScatter",
       [&](ncclComm_t c, void* p) { return ncclScatter(p, p, perRank, ncclInt8, 0, c, 0); },
       "x 2 ranks is larger than any sendbuff"},
      {"ncclSend", [&](ncclComm_t c, void* p) { return ncclSend(p, huge, ncclFloat64, 1, c, 0); },
       "of double (8-byte elements) is larger than any sendbuff"},
      {"ncclRecv", [&](ncclComm_t c, void* p) { return ncclRecv(p, huge, ncclFloat64, 1, c, 0); },
       "of double (8-byte elements) is larger than any recvbuff"},
  };
  float buf[4] = {};
  for (const Oversized& o : calls) {
    // Rank 0 alone (its peer never calls): the check fails before anything is sent.
    EXPECT_EQ(o.call(comms[0], buf), ncclInvalidArgument) << o.name;
    const std::string text = last(comms[0]);
    EXPECT_NE(text.find(std::string(o.name) + ": "), std::string::npos) << text;
    EXPECT_NE(text.find(o.expect), std::string::npos) << text;
    EXPECT_NE(text.find("over 2^63 bytes"), std::string::npos) << text;
  }
  expectUsable(comms);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// A size that fits in 64 bits but not after the buffer's address.
TEST(Bounds, BuffersThatWouldWrapTheAddressSpaceFail) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  void* top = reinterpret_cast<void*>(UINTPTR_MAX - 4095);
  EXPECT_EQ(ncclAllReduce(top, top, 2048, ncclFloat, ncclSum, comms[1], nullptr),
            ncclInvalidArgument);
  EXPECT_NE(last(comms[1]).find("would run past the end of the address space"), std::string::npos)
      << last(comms[1]);
  expectUsable(comms);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// Registration and allocation: ranges past the address space, sizes no host has.
TEST(Bounds, MemoryRangesThatCannotExistFail) {
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  void* handle = nullptr;
  void* top = reinterpret_cast<void*>(UINTPTR_MAX - 4095);
  EXPECT_EQ(ncclCommRegister(comm, top, 8192, &handle), ncclInvalidArgument);
  EXPECT_NE(last(comm).find("runs past the end of the address space"), std::string::npos)
      << last(comm);
  ncclWindow_t win = nullptr;
  EXPECT_EQ(ncclCommWindowRegister(comm, top, 8192, &win, 0), ncclInvalidArgument);
  void* ptr = &handle;
  EXPECT_NE(ncclMemAlloc(&ptr, size_t{1} << 62), ncclSuccess);
  EXPECT_EQ(ptr, nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// A plan whose working memory no host has (a 4 TiB Reduce: the chain's middle rank reduces into
// scratch of the whole count) fails to plan, naming the algorithm and the sizes; priced with
// ncclGroupSimulateEnd, so nothing runs.
TEST(Bounds, APlanNeedingMoreMemoryThanTheHostFails) {
  ncclComm_t comms[3];
  ASSERT_EQ(ncclCommInitAll(comms, 3, nullptr), ncclSuccess);
  float buf[4] = {};
  const size_t count = size_t{1} << 40;
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclResult_t results[3];
  for (int r = 0; r < 3; ++r)
    results[r] = ncclReduce(buf, buf, count, ncclFloat, ncclSum, 0, comms[r], nullptr);
  const ncclResult_t end = ncclGroupSimulateEnd(&info);
  const std::string text = ncclGetLastError(nullptr);
  const bool failedAtCall =
      results[0] != ncclSuccess || results[1] != ncclSuccess || results[2] != ncclSuccess;
  EXPECT_TRUE(failedAtCall || end == ncclSystemError) << text;
  EXPECT_NE(text.find("bytes of working memory for this call"), std::string::npos) << text;
  EXPECT_NE(text.find("more than this host's"), std::string::npos) << text;
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// Inside a group the failed call fails the group's end, and the group's other calls run nowhere:
// the communicators then work as before.
TEST(Bounds, AnOversizedCallInAGroupFailsTheGroup) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  std::vector<float> a(16, 1.0f);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat, ncclSum, comms[0], nullptr),
            ncclSuccess);
  EXPECT_EQ(
      ncclAllReduce(a.data(), a.data(), size_t{1} << 62, ncclFloat, ncclSum, comms[1], nullptr),
      ncclInvalidArgument);
  EXPECT_NE(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(a[0], 1.0f) << "nothing ran";
  expectUsable(comms);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// A count that fits (16 TiB of floats) on one rank, in place: planned in bounded work, and like
// NCCL's one-rank in-place call it moves nothing.
TEST(Bounds, AHugeCountThatFitsPlansInBoundedWork) {
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  float buf[4] = {1, 2, 3, 4};
  EXPECT_EQ(ncclAllReduce(buf, buf, size_t{1} << 42, ncclFloat, ncclSum, comm, nullptr),
            ncclSuccess)
      << last(comm);
  EXPECT_EQ(buf[3], 4.0f);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
