// memcpy-rate: single-thread memcpy bandwidth at the benchmark sizes, the yardstick for
// "Braid reaches x% of memcpy" in bench/compare.py (an intra-host allreduce moves every byte
// through memory at least once, so one core's memcpy is the natural ceiling to compare with).
//
//   memcpy-rate [-b minbytes] [-e maxbytes] [-f factor] [-t min seconds per size]
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

size_t parseSize(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  double mult = 1;
  switch (*end) {
    case 'K': case 'k': mult = 1ull << 10; break;
    case 'M': case 'm': mult = 1ull << 20; break;
    case 'G': case 'g': mult = 1ull << 30; break;
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
    if ((sec >= minSeconds && reps >= 3) || reps >= (1ull << 30)) return sec / static_cast<double>(reps);
    reps = sec > 0 ? std::max(reps * 2, static_cast<size_t>(reps * minSeconds * 1.2 / sec)) : reps * 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t minBytes = 8, maxBytes = 256u << 20;
  double factor = 2, minSeconds = 0.05;
  int c;
  while ((c = getopt(argc, argv, "b:e:f:t:")) != -1) {
    switch (c) {
      case 'b': minBytes = parseSize(optarg); break;
      case 'e': maxBytes = parseSize(optarg); break;
      case 'f': factor = std::atof(optarg); break;
      case 't': minSeconds = std::atof(optarg); break;
      default:
        std::fprintf(stderr, "usage: %s [-b minbytes] [-e maxbytes] [-f factor] [-t seconds]\n", argv[0]);
        return 2;
    }
  }
  if (factor <= 1 || minBytes == 0 || maxBytes < minBytes) {
    std::fprintf(stderr, "%s: need -f > 1 and 0 < -b <= -e\n", argv[0]);
    return 2;
  }
  size_t alloc = (maxBytes + 4095) / 4096 * 4096;
  auto* src = static_cast<char*>(std::aligned_alloc(4096, alloc));
  auto* dst = static_cast<char*>(std::aligned_alloc(4096, alloc));
  if (!src || !dst) {
    std::fprintf(stderr, "%s: cannot allocate 2 x %zu bytes\n", argv[0], alloc);
    return 1;
  }
  std::memset(src, 1, alloc);
  std::memset(dst, 0, alloc);
  std::printf("# memcpy-rate: single-thread memcpy, page-aligned buffers\n");
  std::printf("# %10s  %10s  %8s\n# %10s  %10s  %8s\n", "size", "time", "rate", "(B)", "(us)", "(GB/s)");
  for (size_t bytes = minBytes; bytes <= maxBytes;) {
    double sec = timeCopy(dst, src, bytes, minSeconds);
    std::printf("%12zu  %10.3f  %8.2f\n", bytes, sec * 1e6, static_cast<double>(bytes) / 1e9 / sec);
    std::fflush(stdout);
    size_t next = static_cast<size_t>(static_cast<double>(bytes) * factor);
    if (next <= bytes) break;
    bytes = next;
  }
  std::free(src);
  std::free(dst);
  return 0;
}
