/* An urgent small AllReduce issued while a large one runs, on host streams (include/braid/braid.h):
 * its latency alone, behind the large call on a stream of the same class (it queues after it, as
 * with no priorities), and on a stream of a higher class (the large call holds back its next
 * chunks while it runs). Also the large call's own time in each case. Run under braidrun:
 *   build/release/tools/braidrun -np 2 build/release/bench/micro/priority_bench
 * Flags: -s small bytes (64K), -l large bytes (64M), -n iterations (20), -d microseconds between
 * issuing the large call and the small one (2000: the large call is under way; every rank sleeps
 * that long, so that they issue the small call together). The three cases
 * take turns each iteration, so machine drift hits them alike; medians and 90th percentiles. */
#include "bench_c.h"

#include <braid/braid.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double nowUs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static double pct(double* v, int n, double p) {
  qsort(v, n, sizeof *v, cmp);
  int i = (int)(p * (n - 1) + 0.5);
  return v[i];
}

enum { kAlone, kSameClass, kUrgent, kCases };
static const char* kNames[kCases] = {"alone", "behind, same class", "behind, higher class"};

int main(int argc, char** argv) {
  size_t smallBytes = 64 << 10, largeBytes = 64 << 20;
  int iters = 20;
  double delayUs = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-s"))
      smallBytes = benchParseBytes(argv[i + 1]);
    else if (!strcmp(argv[i], "-l"))
      largeBytes = benchParseBytes(argv[i + 1]);
    else if (!strcmp(argv[i], "-n"))
      iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-d"))
      delayUs = atof(argv[i + 1]);
    else {
      fprintf(stderr, "unknown flag %s (-s small, -l large, -n iterations, -d delay us)\n",
              argv[i]);
      return 2;
    }
  }
  if (iters < 1) iters = 1;
  int rank, nranks;
  ncclComm_t comm = benchInitWorld(&rank, &nranks);
  braidHostStream_t large, normal, urgent;
  benchCheck(braidHostStreamCreate(&large, 0), "create", NULL);
  benchCheck(braidHostStreamCreate(&normal, 0), "create", NULL);
  benchCheck(braidHostStreamCreate(&urgent, -1), "create", NULL);
  float* big = calloc(largeBytes / 4, 4);
  float* small = calloc(smallBytes / 4, 4);
  float token = 0;
  double* smallUs[kCases];
  double* largeUs[kCases];
  for (int c = 0; c < kCases; ++c) {
    smallUs[c] = calloc(iters, sizeof(double));
    largeUs[c] = calloc(iters, sizeof(double));
  }
  /* Warm-up: schedules built, the urgent class's connections made. */
  for (int w = 0; w < 2; ++w) {
    benchCheck(ncclAllReduce(big, big, largeBytes / 4, ncclFloat, ncclSum, comm, (cudaStream_t)large),
          "warm-up", comm);
    benchCheck(
        ncclAllReduce(small, small, smallBytes / 4, ncclFloat, ncclSum, comm, (cudaStream_t)urgent),
        "warm-up", comm);
    benchCheck(
        ncclAllReduce(small, small, smallBytes / 4, ncclFloat, ncclSum, comm, (cudaStream_t)normal),
        "warm-up", comm);
    benchCheck(braidHostStreamSynchronize(large), "sync", comm);
    benchCheck(braidHostStreamSynchronize(urgent), "sync", comm);
    benchCheck(braidHostStreamSynchronize(normal), "sync", comm);
  }
  for (int it = 0; it < iters; ++it) {
    for (int c = 0; c < kCases; ++c) {
      /* Every rank starts the case together. */
      benchCheck(ncclAllReduce(&token, &token, 1, ncclFloat, ncclSum, comm, NULL), "barrier", comm);
      const double t0 = nowUs();
      if (c != kAlone)
        benchCheck(
            ncclAllReduce(big, big, largeBytes / 4, ncclFloat, ncclSum, comm, (cudaStream_t)large),
            "large", comm);
      /* Sleep, not spin: where ranks outnumber cores, spinning callers would take the cores
       * from the large call and from each other, and issue the small call at skewed times. */
      const double left = delayUs - (nowUs() - t0);
      if (left > 0) usleep((useconds_t)left);
      braidHostStream_t s = c == kSameClass ? normal : urgent;
      const double t1 = nowUs();
      benchCheck(ncclAllReduce(small, small, smallBytes / 4, ncclFloat, ncclSum, comm, (cudaStream_t)s),
            "small", comm);
      benchCheck(braidHostStreamSynchronize(s), "sync small", comm);
      smallUs[c][it] = nowUs() - t1;
      benchCheck(braidHostStreamSynchronize(large), "sync large", comm);
      largeUs[c][it] = nowUs() - t0;
    }
  }
  if (rank == 0) {
    printf(
        "# %d ranks: %zu-byte urgent AllReduce issued %.0f us after a %zu-byte one; %d "
        "iterations\n",
        nranks, smallBytes, delayUs, largeBytes, iters);
    printf("| case | small: median us | small: p90 us | large: median us |\n|---|---|---|---|\n");
    for (int c = 0; c < kCases; ++c) {
      double sm = pct(smallUs[c], iters, 0.5), s90 = pct(smallUs[c], iters, 0.9);
      if (c == kAlone)
        printf("| %s | %.0f | %.0f | - |\n", kNames[c], sm, s90);
      else
        printf("| %s | %.0f | %.0f | %.0f |\n", kNames[c], sm, s90, pct(largeUs[c], iters, 0.5));
    }
  }
  braidHostStreamDestroy(large);
  braidHostStreamDestroy(normal);
  braidHostStreamDestroy(urgent);
  benchCheck(ncclCommDestroy(comm), "ncclCommDestroy", comm);
  return 0;
}
