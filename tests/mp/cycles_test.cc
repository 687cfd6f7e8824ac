// A thousand init/destroy cycles leave a process as they found it: its file descriptors and
// threads the same in number, and its resident memory flat, on shared memory and over TCP.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/ranks.h"

namespace braid {
namespace {

int countEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

long rssKiB() {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::strtol(line + 6, nullptr, 10);
  fclose(f);
  return kib;
}

// Under AddressSanitizer freed memory stays resident in its quarantine, so RSS says nothing
// there; LeakSanitizer checks that tree for leaks instead.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

struct Footprint {
  int fds, threads;
  long rss;
};

Footprint now() {
  return {countEntries("/proc/self/fd"), countEntries("/proc/self/task"), rssKiB()};
}

// Rank 0 makes each cycle's unique id (its own root, on a fresh port) and hands it to rank 1.
struct IdBox {
  std::atomic<int> cycle{-1};
  ncclUniqueId id;
};

// Each child runs kCycles inits and destroys of a fresh 2-rank communicator with one AllReduce
// each, and compares its footprint after the first kWarm cycles (allocator pools, lazily made
// singletons) with the end.
// BRAID_TEST_CYCLES sets fewer where a cycle is slow (tests/rdma: verbs under emulation).
void cycle(const char* shmDisable) {
  const char* cycles = std::getenv("BRAID_TEST_CYCLES");
  const int kCycles = cycles ? std::max(10, std::atoi(cycles)) : 1000;
  const int kWarm = std::min(50, kCycles / 5);
  constexpr long kRssSlackKiB = 4096;
  auto* box = static_cast<IdBox*>(
      mmap(nullptr, sizeof(IdBox), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(box, MAP_FAILED);
  new (box) IdBox{};
  auto results = testing::runProcesses(
      2,
      [&](int rank, ncclComm_t) {
        unsetenv("NCCL_COMM_ID");
        Footprint warm{};
        for (int i = 0; i < kCycles; ++i) {
          if (i == kWarm) warm = now();
          ncclUniqueId id;
          if (rank == 0) {
            if (ncclGetUniqueId(&id) != ncclSuccess) return 2;
            box->id = id;
            box->cycle.store(i, std::memory_order_release);
          } else {
            while (box->cycle.load(std::memory_order_acquire) != i) sched_yield();
            id = box->id;
          }
          ncclComm_t comm = nullptr;
          if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) {
            fprintf(stderr, "rank %d cycle %d: init: %s\n", rank, i, ncclGetLastError(nullptr));
            return 2;
          }
          float x = 1.0f;
          if (ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr) != ncclSuccess ||
              x != 2.0f) {
            fprintf(stderr, "rank %d cycle %d: AllReduce: %s\n", rank, i, ncclGetLastError(comm));
            return 3;
          }
          if (ncclCommDestroy(comm) != ncclSuccess) return 4;
        }
        const Footprint end = now();
        fprintf(stderr, "rank %d: fds %d -> %d, threads %d -> %d, rss %ld -> %ld KiB\n", rank,
                warm.fds, end.fds, warm.threads, end.threads, warm.rss, end.rss);
        if (end.fds != warm.fds || end.threads != warm.threads) return 5;
        if (!kAddressSanitizer && end.rss - warm.rss > kRssSlackKiB) return 6;
        return 0;
      },
      {{"NCCL_SHM_DISABLE", shmDisable}}, 600);
  munmap(box, sizeof(IdBox));
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(results[r].exitCode, 0)
        << "rank " << r
        << " (2: init, 3: AllReduce, 4: destroy, 5: fds or threads grew, 6: memory grew)";
}

TEST(Cycles, InitDestroyLeavesNothingBehindOverShm) { cycle("0"); }
TEST(Cycles, InitDestroyLeavesNothingBehindOverTcp) { cycle("1"); }

}  // namespace
}  // namespace braid
