/* A training loop's gradient AllReduce, call after call, timed one by one: what a job sees
 * when the network changes under it (bench/adapt.py reshapes an emulated cluster mid-run).
 * Rank 0 prints one line per call: "call <i> t=<seconds since the first call> us=<duration>".
 * Every rank checks every result exactly (integer-valued floats: the sum is exact whatever the
 * order), so a plan switch that changed a bit would fail the run. Run under braidrun or
 * tools/netcluster:
 *   tools/netcluster --hosts 8 --racks 2 --placement alternate -- \
 *       build/release/bench/micro/allreduce_loop -b 8M -s 20
 * Flags: -b bytes per call (8M), -s seconds to run (20), -n at most this many calls (0: no
 * limit). Each call starts together on every rank (a 4-byte AllReduce before it), so a
 * duration is the call's, not the wait for the slowest rank to reach it. */
#include "bench_c.h"

#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double nowS(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  size_t bytes = 8 << 20;
  double seconds = 20;
  long maxCalls = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-b"))
      bytes = benchParseBytes(argv[i + 1]);
    else if (!strcmp(argv[i], "-s"))
      seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "-n"))
      maxCalls = atol(argv[i + 1]);
    else {
      fprintf(stderr, "unknown flag %s (-b bytes, -s seconds, -n calls)\n", argv[i]);
      return 2;
    }
  }
  int rank, nranks;
  ncclComm_t comm = benchInitWorld(&rank, &nranks);
  const size_t count = bytes / sizeof(float);
  float* buf = malloc(count * sizeof(float));
  if (!buf) return 1;
  float token = 0;
  /* Rank 0 decides how long to run and tells the others (one flag per call), so that every
   * rank makes the same number of calls. */
  const double start = nowS();
  for (long call = 0;; ++call) {
    for (size_t i = 0; i < count; ++i) buf[i] = (float)((i + (size_t)rank + (size_t)call) % 251);
    token = rank == 0 && ((maxCalls && call >= maxCalls) || nowS() - start > seconds);
    benchCheck(ncclAllReduce(&token, &token, 1, ncclFloat, ncclSum, comm, NULL), "start", comm);
    if (token > 0) break;
    const double t0 = nowS();
    benchCheck(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, NULL), "AllReduce", comm);
    const double t1 = nowS();
    for (size_t i = 0; i < count; ++i) {
      double want = 0;
      for (int r = 0; r < nranks; ++r) want += (double)((i + (size_t)r + (size_t)call) % 251);
      if (buf[i] != (float)want) {
        fprintf(stderr, "rank %d call %ld: element %zu is %g, not %g\n", rank, call, i,
                (double)buf[i], want);
        return 1;
      }
    }
    if (rank == 0) printf("call %ld t=%.3f us=%.0f\n", call, t1 - start, (t1 - t0) * 1e6);
    fflush(stdout);
  }
  ncclCommDestroy(comm);
  free(buf);
  return 0;
}
