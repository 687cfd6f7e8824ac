// ncclMemAlloc / ncclMemFree and buffer / window registration on host memory, including every
// handle Braid did not issue being refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"

namespace {

std::string last() { return ncclGetLastError(nullptr); }

TEST(MemAlloc, PageAlignedAndTracked) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(ncclMemAlloc(&a, 100), ncclSuccess) << last();
  ASSERT_EQ(ncclMemAlloc(&b, 3 * page + 1), ncclSuccess) << last();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % page, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % page, 0u);
  std::memset(b, 0x5a, 3 * page + 1);  // the whole request is usable
  EXPECT_EQ(ncclMemFree(a), ncclSuccess) << last();
  EXPECT_EQ(ncclMemFree(a), ncclInvalidArgument) << "double free accepted";
  EXPECT_NE(last().find("was not allocated by ncclMemAlloc"), std::string::npos) << last();
  int onStack = 0;
  EXPECT_EQ(ncclMemFree(&onStack), ncclInvalidArgument);
  EXPECT_EQ(ncclMemFree(static_cast<char*>(b) + 8), ncclInvalidArgument)
      << "interior pointer accepted";
  EXPECT_EQ(ncclMemFree(b), ncclSuccess) << last();
  EXPECT_EQ(ncclMemFree(nullptr), ncclSuccess);
}

TEST(MemAlloc, ArgumentErrors) {
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(ncclMemAlloc(nullptr, 16), ncclInvalidArgument);
  EXPECT_NE(last().find("ptr is NULL"), std::string::npos) << last();
  EXPECT_EQ(ncclMemAlloc(&p, 0), ncclInvalidArgument);
  EXPECT_NE(last().find("size is 0"), std::string::npos) << last();
  EXPECT_EQ(p, nullptr);
}

class Registration : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ncclCommInitAll(&comm_, 1, nullptr), ncclSuccess); }
  void TearDown() override { EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess); }
  ncclComm_t comm_ = nullptr;
};

TEST_F(Registration, RegisterAndDeregister) {
  std::vector<char> buf(4096), other(64);
  void* h1 = nullptr;
  void* h2 = nullptr;
  ASSERT_EQ(ncclCommRegister(comm_, buf.data(), buf.size(), &h1), ncclSuccess) << last();
  ASSERT_EQ(ncclCommRegister(comm_, other.data(), other.size(), &h2), ncclSuccess) << last();
  EXPECT_NE(h1, nullptr);
  EXPECT_NE(h1, h2);
  // Registered buffers still work in collectives (the data path ignores registration).
  float x = 2;
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm_, nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(comm_, h1), ncclSuccess) << last();
  EXPECT_EQ(ncclCommDeregister(comm_, h1), ncclInvalidArgument) << "deregistered twice";
  EXPECT_NE(last().find("is not a registration"), std::string::npos) << last();
  EXPECT_EQ(ncclCommDeregister(comm_, buf.data()), ncclInvalidArgument)
      << "a buffer is not a handle";
  EXPECT_EQ(ncclCommDeregister(comm_, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDeregister(comm_, h2), ncclSuccess) << last();
}

TEST_F(Registration, RegisterArgumentErrors) {
  std::vector<char> buf(64);
  void* h = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(ncclCommRegister(comm_, nullptr, 64, &h), ncclInvalidArgument);
  EXPECT_NE(last().find("buff is NULL"), std::string::npos) << last();
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(ncclCommRegister(comm_, buf.data(), 0, &h), ncclInvalidArgument);
  EXPECT_NE(last().find("size is 0"), std::string::npos) << last();
  EXPECT_EQ(ncclCommRegister(comm_, buf.data(), 64, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("handle is NULL"), std::string::npos) << last();
  EXPECT_EQ(ncclCommRegister(nullptr, buf.data(), 64, &h), ncclInvalidArgument);
  EXPECT_NE(last().find("comm is NULL"), std::string::npos) << last();
}

// A handle from one communicator means nothing to another.
TEST_F(Registration, HandlesBelongToTheirCommunicator) {
  ncclComm_t other = nullptr;
  ASSERT_EQ(ncclCommInitAll(&other, 1, nullptr), ncclSuccess);
  std::vector<char> buf(64);
  void* h = nullptr;
  ASSERT_EQ(ncclCommRegister(comm_, buf.data(), buf.size(), &h), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(other, h), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDeregister(comm_, h), ncclSuccess);
  ncclCommDestroy(other);
}

TEST_F(Registration, Windows) {
  void* mem = nullptr;
  ASSERT_EQ(ncclMemAlloc(&mem, 1 << 16), ncclSuccess);
  ncclWindow_t win = nullptr, sym = nullptr, leaked = nullptr;
  ASSERT_EQ(ncclCommWindowRegister(comm_, mem, 1 << 16, &win, NCCL_WIN_DEFAULT), ncclSuccess)
      << last();
  ASSERT_EQ(ncclCommWindowRegister(comm_, mem, 4096, &sym, NCCL_WIN_COLL_SYMMETRIC), ncclSuccess)
      << last();
  ASSERT_NE(win, nullptr);
  EXPECT_NE(win, sym);
  void* user = nullptr;
  EXPECT_EQ(ncclWinGetUserPtr(comm_, win, &user), ncclSuccess) << last();
  EXPECT_EQ(user, mem);
  EXPECT_EQ(ncclCommWindowDeregister(comm_, win), ncclSuccess) << last();
  EXPECT_EQ(ncclCommWindowDeregister(comm_, win), ncclInvalidArgument) << "deregistered twice";
  EXPECT_NE(last().find("is not a window"), std::string::npos) << last();
  EXPECT_EQ(ncclCommWindowDeregister(comm_, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowDeregister(comm_, sym), ncclSuccess) << last();

  ncclWindow_t bad = reinterpret_cast<ncclWindow_t>(0x1);
  EXPECT_EQ(ncclCommWindowRegister(comm_, mem, 64, &bad, 0x14), ncclInvalidArgument);
  EXPECT_NE(last().find("winFlags 0x14 has bits no NCCL_WIN_* flag defines (0x10)"),
            std::string::npos)
      << last();
  // NCCL 2.32's flags name device-side capabilities: accepted on host windows.
  ncclWindow_t flagged = nullptr;
  EXPECT_EQ(ncclCommWindowRegister(comm_, mem, 64, &flagged,
                                   NCCL_WIN_STRICT_ORDERING | NCCL_WIN_GIN_ONLY),
            ncclSuccess)
      << last();
  EXPECT_EQ(ncclCommWindowDeregister(comm_, flagged), ncclSuccess) << last();
  EXPECT_EQ(bad, nullptr);
  EXPECT_EQ(ncclCommWindowRegister(comm_, nullptr, 64, &bad, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowRegister(comm_, mem, 0, &bad, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowRegister(comm_, mem, 64, nullptr, 0), ncclInvalidArgument);
  // Left registered on purpose: destroy frees it.
  ASSERT_EQ(ncclCommWindowRegister(comm_, mem, 64, &leaked, 0), ncclSuccess);
  EXPECT_EQ(ncclMemFree(mem), ncclSuccess);
}

}  // namespace
