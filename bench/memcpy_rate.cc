// memcpy-rate: memcpy bandwidth at the benchmark sizes, the yardstick for "Braid reaches x% of
// memcpy" in bench/compare.py (an intra-host allreduce moves every byte through memory at least
// once, so one core's memcpy is the natural ceiling to compare with). With -p P, P threads copy
// at once, each `size` bytes between buffers of its own, and the rate is their total: what the
// machine's cores can copy together, the ceiling of collectives that only move data.
//
//   memcpy-rate [-b minbytes] [-e maxbytes] [-f factor] [-t min seconds per size] [-p threads]
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

size_t parseSize(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  double mult = 1;
  switch (*end) {
    case 'K':
    case 'k': mult = 1ull << 10; break;
    case 'M':
    case 'm': mult = 1ull << 20; break;
    case 'G':
    case 'g': mult = 1ull << 30; break;
    default: break;
  }
  return static_cast<size_t>(std::llround(v * mult));
}

// Copies until minSeconds have passed (at least 3 copies), and returns seconds per copy.
double timeCopy(char* dst, const char* src, size_t bytes, double minSeconds) {
  using Clock = std::chrono::steady_clock;
  std::memcpy(dst, src, bytes);  // first touch outside the timing
  size_t reps = 1;
  for (;;) {
    auto t0 = Clock::now();
    for (size_t i = 0; i < reps; ++i) {
      std::memcpy(dst, src, bytes);
      asm volatile("" : : "r"(dst) : "memory");  // the copies must happen, each one
    }
    double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    if ((sec >= minSeconds && reps >= 3) || reps >= (1ull << 30))
      return sec / static_cast<double>(reps);
    reps =
        sec > 0 ? std::max(reps * 2, static_cast<size_t>(reps * minSeconds * 1.2 / sec)) : reps * 2;
  }
}

// P threads, each copying `bytes` from src[i] to dst[i] `reps` times, started together; returns
// the seconds the slowest one took.
double timeTogether(std::vector<char*>& dst, std::vector<char*>& src, size_t bytes, size_t reps) {
  using Clock = std::chrono::steady_clock;
  const size_t p = dst.size();
  std::vector<double> seconds(p);
  std::barrier start(static_cast<std::ptrdiff_t>(p));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < p; ++t)
    threads.emplace_back([&, t] {
      std::memcpy(dst[t], src[t], bytes);  // first touch outside the timing
      start.arrive_and_wait();
      auto t0 = Clock::now();
      for (size_t i = 0; i < reps; ++i) {
        std::memcpy(dst[t], src[t], bytes);
        asm volatile("" : : "r"(dst[t]) : "memory");
      }
      seconds[t] = std::chrono::duration<double>(Clock::now() - t0).count();
    });
  for (auto& th : threads) th.join();
  return *std::max_element(seconds.begin(), seconds.end());
}

}  // namespace

int main(int argc, char** argv) {
  size_t minBytes = 8, maxBytes = 256u << 20;
  double factor = 2, minSeconds = 0.05;
  int threads = 1;
  int c;
  while ((c = getopt(argc, argv, "b:e:f:t:p:")) != -1) {
    switch (c) {
      case 'b': minBytes = parseSize(optarg); break;
      case 'e': maxBytes = parseSize(optarg); break;
      case 'f': factor = std::atof(optarg); break;
      case 't': minSeconds = std::atof(optarg); break;
      case 'p': threads = std::atoi(optarg); break;
      default:
        std::fprintf(
            stderr, "usage: %s [-b minbytes] [-e maxbytes] [-f factor] [-t seconds] [-p threads]\n",
            argv[0]);
        return 2;
    }
  }
  if (factor <= 1 || minBytes == 0 || maxBytes < minBytes) {
    std::fprintf(stderr, "%s: need -f > 1 and 0 < -b <= -e\n", argv[0]);
    return 2;
  }
  if (threads < 1 || threads > 1024) {
    std::fprintf(stderr, "%s: -p %d: expected 1 to 1024 threads\n", argv[0], threads);
    return 2;
  }
  size_t alloc = (maxBytes + 4095) / 4096 * 4096;
  std::vector<char*> src(static_cast<size_t>(threads)), dst(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    src[t] = static_cast<char*>(std::aligned_alloc(4096, alloc));
    dst[t] = static_cast<char*>(std::aligned_alloc(4096, alloc));
    if (!src[t] || !dst[t]) {
      std::fprintf(stderr, "%s: cannot allocate %d x 2 x %zu bytes\n", argv[0], threads, alloc);
      return 1;
    }
    std::memset(src[t], 1, alloc);
    std::memset(dst[t], 0, alloc);
  }
  if (threads == 1)
    std::printf("# memcpy-rate: single-thread memcpy, page-aligned buffers\n");
  else
    std::printf(
        "# memcpy-rate: %d threads copying at once, page-aligned buffers; time per copy, total "
        "rate\n",
        threads);
  std::printf("# %10s  %10s  %8s\n# %10s  %10s  %8s\n", "size", "time", "rate", "(B)", "(us)",
              "(GB/s)");
  for (size_t bytes = minBytes; bytes <= maxBytes;) {
    double sec = timeCopy(dst[0], src[0], bytes, minSeconds);
    if (threads > 1) {
      // As many copies as one thread makes in minSeconds, by every thread at once.
      const size_t reps = std::max<size_t>(3, static_cast<size_t>(minSeconds / sec));
      sec = timeTogether(dst, src, bytes, reps) / static_cast<double>(reps);
    }
    std::printf("%12zu  %10.3f  %8.2f\n", bytes, sec * 1e6,
                static_cast<double>(bytes) * threads / 1e9 / sec);
    std::fflush(stdout);
    size_t next = static_cast<size_t>(static_cast<double>(bytes) * factor);
    if (next <= bytes) break;
    bytes = next;
  }
  for (int t = 0; t < threads; ++t) {
    std::free(src[t]);
    std::free(dst[t]);
  }
  return 0;
}
