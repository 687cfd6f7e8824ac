// Doorbells: a sleeper raises its flag and takes a last look for work; a ringer publishes work
// and checks the flag. Whatever the interleaving, the sleeper sees the work or the ringer sees
// the flag and rings (Dekker). Once the process is registered for the sleepers' fence
// (membarrier), the ringer's side has no fence of its own: the first test races the two sides
// many times. It checks the protocol; it does not prove the fence necessary (on the 2-core test
// machine the store-buffer reordering it guards against did not show in 150000 rounds with the
// sleeper's membarrier taken out either).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "transport/shm/doorbell.h"

namespace braid {
namespace {

TEST(Doorbell, TheSleeperSeesTheWorkOrTheRingerRings) {
  registerForBells();
  constexpr int kRounds = 50000;
  std::vector<Doorbell> bells(kRounds);
  std::vector<std::atomic<int>> work(kRounds);
  std::vector<char> sawWork(kRounds);
  std::vector<uint32_t> before(kRounds);
  // The two sides meet before every round (each waits until both finished the one before), so
  // that the ringer's publish-then-check overlaps the sleeper's raise-then-look closely.
  std::atomic<int> done{0};
  std::thread sleeper([&] {
    for (int r = 0; r < kRounds; ++r) {
      while (done.load(std::memory_order_acquire) < 2 * r) {}
      before[r] = raiseFlag(&bells[r]).value;
      fenceRingers();
      sawWork[r] = work[r].load(std::memory_order_relaxed) != 0;
      done.fetch_add(1);
    }
  });
  std::thread ringer([&] {
    for (int r = 0; r < kRounds; ++r) {
      while (done.load(std::memory_order_acquire) < 2 * r) {}
      work[r].store(1, std::memory_order_relaxed);
      bells[r].ringIfSleeping();
      done.fetch_add(1);
    }
  });
  sleeper.join();
  ringer.join();
  int missed = 0;
  for (int r = 0; r < kRounds; ++r) missed += !sawWork[r] && bells[r].bell.load() == before[r];
  EXPECT_EQ(missed, 0);
}

TEST(Doorbell, ARingWakesTheSleeper) {
  registerForBells();
  Doorbell bell;
  std::atomic<int> work{0};
  const BellWait wait = raiseFlag(&bell);
  fenceRingers();
  std::thread ringer([&] {
    work.store(1, std::memory_order_relaxed);
    bell.ringIfSleeping();
  });
  if (work.load(std::memory_order_relaxed) == 0 && canWaitForBells())
    waitForBells({&wait, 1}, std::chrono::seconds(30));
  ringer.join();
  EXPECT_NE(bell.bell.load(), wait.value);  // rung (the flag was up before the work was published)
}

}  // namespace
}  // namespace braid
