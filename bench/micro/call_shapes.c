/* The cost of a small AllReduce when calls cycle through many shapes (sizes), as a training step
 * with many differently sized tensors does: each shape's first call chooses an algorithm and
 * builds its schedule, later ones hit the communicator's schedule cache, until there are more
 * shapes than it holds. Run under braidrun:
 *   build/tools/braidrun -np 2 build/bench/micro/call_shapes
 * prints, for 1 to 4000 distinct counts (3 to 12000 floats) cycled 4000 calls long, the time
 * per call of the second pass (the first warms the cache). */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double nowUs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int check(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return 0;
  fprintf(stderr, "%s: %s\n", what, ncclGetErrorString(r));
  return 1;
}

int main(void) {
  const char* rankEnv = getenv("RANK");
  const char* sizeEnv = getenv("WORLD_SIZE");
  if (!rankEnv || !sizeEnv) {
    fprintf(stderr, "run under braidrun (RANK and WORLD_SIZE unset)\n");
    return 2;
  }
  const int rank = atoi(rankEnv), nranks = atoi(sizeEnv);
  ncclUniqueId id;
  ncclComm_t comm;
  if (check(ncclGetUniqueId(&id), "ncclGetUniqueId") ||
      check(ncclCommInitRank(&comm, nranks, id, rank), "ncclCommInitRank"))
    return 1;
  enum { kCalls = 4000, kMaxCount = 3 * 4000 };
  float* in = calloc(kMaxCount, sizeof(float));
  float* out = calloc(kMaxCount, sizeof(float));
  if (!in || !out) return 1;
  static const int kShapes[] = {1, 2, 4, 16, 64, 256, 1000, 4000};
  if (rank == 0) printf("# %d ranks, %d calls per pass\n# shapes   us/call\n", nranks, kCalls);
  for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; ++s) {
    double us = 0;
    for (int pass = 0; pass < 2; ++pass) {
      const double t0 = nowUs();
      for (int k = 0; k < kCalls; ++k)
        if (check(ncclAllReduce(in, out, (size_t)3 * (size_t)(1 + k % kShapes[s]), ncclFloat,
                                ncclSum, comm, NULL),
                  "ncclAllReduce"))
          return 1;
      us = (nowUs() - t0) / kCalls;
    }
    if (rank == 0) printf("%8d  %8.2f\n", kShapes[s], us);
  }
  free(in);
  free(out);
  return check(ncclCommDestroy(comm), "ncclCommDestroy");
}
