/* mpi_allreduce_perf: MPI_Allreduce (float, sum) timed and printed in all_reduce_perf's columns,
 * the baseline that bench/compare.py sets beside Braid. Flags: the subset of nccl-tests' that
 * applies (-b -e -f -i -n -w -c). Run with mpirun -np N. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  size_t minBytes, maxBytes, stepBytes;
  double stepFactor;
  int iters, warmup, check;
} Options;

static int parseSize(const char* s, size_t* out) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (end == s || v < 0) return 0;
  double mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1024.0, ++end;
  else if (*end == 'M' || *end == 'm') mult = 1024.0 * 1024, ++end;
  else if (*end == 'G' || *end == 'g') mult = 1024.0 * 1024 * 1024, ++end;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end) return 0;
  *out = (size_t)(v * mult + 0.5);
  return 1;
}

static int parseArgs(int argc, char** argv, Options* o) {
  int c;
  while ((c = getopt(argc, argv, "b:e:i:f:n:w:c:")) != -1) {
    int ok = 1;
    switch (c) {
      case 'b': ok = parseSize(optarg, &o->minBytes); break;
      case 'e': ok = parseSize(optarg, &o->maxBytes); break;
      case 'i': ok = parseSize(optarg, &o->stepBytes); break;
      case 'f': o->stepFactor = atof(optarg); ok = o->stepFactor > 1; break;
      case 'n': o->iters = atoi(optarg); break;
      case 'w': o->warmup = atoi(optarg); break;
      case 'c': o->check = atoi(optarg); break;
      default: ok = 0;
    }
    if (!ok) {
      fprintf(stderr, "usage: %s [-b minbytes] [-e maxbytes] [-f factor | -i step] [-n iters] [-w warmup] [-c 0|1]\n",
              argv[0]);
      return 0;
    }
  }
  return 1;
}

/* Small integers: sums over any number of ranks stay exact in float. */
static float inputValue(int rank, size_t i) { return (float)((i * 7 + (size_t)rank * 3) % 10); }

static void fill(float* buf, size_t n, int rank) {
  for (size_t i = 0; i < n; ++i) buf[i] = inputValue(rank, i);
}

static long countWrong(const float* buf, size_t n, int nranks) {
  long wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += inputValue(r, i);
    if (buf[i] != want) ++wrong;
  }
  return wrong;
}

/* Mean seconds per call across ranks. */
static double timeAllreduce(const void* send, void* recv, size_t count, int iters, int nranks) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double sec = iters ? (MPI_Wtime() - t0) / iters : 0, sum = 0;
  MPI_Allreduce(&sec, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / nranks;
}

static void printPlace(double sec, size_t bytes, int nranks, long wrong, int check, double* busbwSum) {
  double algbw = sec > 0 ? (double)bytes / 1e9 / sec : 0;
  double busbw = algbw * 2.0 * (nranks - 1) / nranks;
  double us = sec * 1e6;
  char t[32], w[32];
  snprintf(t, sizeof t, us < 1e4 ? "%.2f" : us < 1e6 ? "%.1f" : "%.0f", us);
  if (check) snprintf(w, sizeof w, "%ld", wrong);
  else snprintf(w, sizeof w, "N/A");
  printf("  %8s  %7.2f  %7.2f  %6s", t, algbw, busbw, w);
  *busbwSum += busbw;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Options o = {32u << 20, 32u << 20, 1u << 20, 0, 20, 5, 1};
  if (!parseArgs(argc, argv, &o)) {
    MPI_Finalize();
    return 2;
  }
  size_t maxCount = o.maxBytes / sizeof(float);
  size_t alloc = (maxCount * sizeof(float) + 4095) / 4096 * 4096 + 4096;
  float* send = aligned_alloc(4096, alloc);
  float* recv = aligned_alloc(4096, alloc);
  if (!send || !recv) {
    fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", rank, alloc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(send, 0, alloc);
  memset(recv, 0, alloc);
  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    char* nl = strchr(version, '\n');
    if (nl) *nl = 0;
    printf("# Collective test starting: mpi_allreduce_perf\n# %s\n", version);
    printf("# nProcs %d minBytes %zu maxBytes %zu warmup iters: %d iters: %d validation: %d\n#\n", nranks,
           o.minBytes, o.maxBytes, o.warmup, o.iters, o.check);
    printf("# %10s  %12s  %8s  %6s  %6s  %36s  %36s\n", "", "", "", "", "", "out-of-place", "in-place");
    printf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
    for (int k = 0; k < 2; ++k) printf("  %8s  %7s  %7s  %6s", "time", "algbw", "busbw", "#wrong");
    printf("\n# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
    for (int k = 0; k < 2; ++k) printf("  %8s  %7s  %7s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
    printf("\n");
    fflush(stdout);
  }
  fill(send, maxCount, rank);
  timeAllreduce(send, recv, maxCount, o.warmup, nranks);

  long totalWrong = 0;
  double busbwSum = 0;
  int rows = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes;) {
    size_t count = bytes / sizeof(float);
    long wrong[2] = {0, 0}, all[2];
    fill(send, count, rank);
    double outSec = timeAllreduce(send, recv, count, o.iters, nranks);
    if (o.check) {
      MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      wrong[0] = countWrong(recv, count, nranks);
    }
    fill(recv, count, rank);
    double inSec = timeAllreduce(MPI_IN_PLACE, recv, count, o.iters, nranks);
    if (o.check) {
      fill(recv, count, rank);
      MPI_Allreduce(MPI_IN_PLACE, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      wrong[1] = countWrong(recv, count, nranks);
    }
    MPI_Allreduce(wrong, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    totalWrong += all[0] + all[1];
    if (rank == 0) {
      printf("%12zu  %12zu  %8s  %6s  %6d", count * sizeof(float), count, "float", "sum", -1);
      printPlace(outSec, count * sizeof(float), nranks, all[0], o.check, &busbwSum);
      printPlace(inSec, count * sizeof(float), nranks, all[1], o.check, &busbwSum);
      printf("\n");
      fflush(stdout);
      rows += 2;
    }
    size_t next = o.stepFactor > 1 ? (size_t)((double)bytes * o.stepFactor) : bytes + o.stepBytes;
    if (next <= bytes) break;
    bytes = next;
  }
  if (rank == 0) {
    printf("# Out of bounds values : %ld %s\n", totalWrong, totalWrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n#\n", rows ? busbwSum / rows : 0);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return totalWrong ? 1 : 0;
}
