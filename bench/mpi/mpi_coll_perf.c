/* mpi_coll_perf: one MPI collective (float; sum where it reduces) timed and printed in the
 * nccl-tests columns of bench/perf's binaries, with their size convention and busbw formulas:
 * the OpenMPI baseline bench/compare.py sets beside Braid for every collective.
 * -C picks the collective; the other flags are the subset of
 * nccl-tests' that applies (-b -e -f -i -n -w -c -r). Run with mpirun -np N.
 *
 * In place means MPI's MPI_IN_PLACE forms, which place data differently from NCCL's:
 * Reduce_scatter_block leaves the result at the start of the buffer, Scatter's root keeps its
 * block inside its send buffer. Bcast has one buffer, so both columns time the same call. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum {
  ALLREDUCE,
  ALLGATHER,
  REDUCESCATTER,
  BROADCAST,
  REDUCE,
  ALLTOALL,
  GATHER,
  SCATTER,
  SENDRECV
} Kind;

typedef struct {
  const char* name; /* -C value, as compare.py's --coll spells it */
  Kind kind;
  int split;   /* the size is the whole buffer of nranks blocks; the count is one block */
  int reduces; /* sum of every rank's input, rather than moved data */
  int rooted;
  double (*busFactor)(int n);
} Coll;

static double twice(int n) { return 2.0 * (n - 1) / n; }
static double share(int n) { return (double)(n - 1) / n; }
static double one(int n) {
  (void)n;
  return 1.0;
}

static const Coll kColls[] = {
    {"allreduce", ALLREDUCE, 0, 1, 0, twice},
    {"allgather", ALLGATHER, 1, 0, 0, share},
    {"reducescatter", REDUCESCATTER, 1, 1, 0, share},
    {"broadcast", BROADCAST, 0, 0, 1, one},
    {"reduce", REDUCE, 0, 1, 1, one},
    {"alltoall", ALLTOALL, 1, 0, 0, share},
    {"gather", GATHER, 1, 0, 1, share},
    {"scatter", SCATTER, 1, 0, 1, share},
    {"sendrecv", SENDRECV, 0, 0, 0, one},
};

typedef struct {
  size_t minBytes, maxBytes, stepBytes;
  double stepFactor;
  int iters, warmup, check, root;
  const Coll* coll;
} Options;

/* Everything one call needs: the per-rank block count c, this rank and the world. */
typedef struct {
  const Coll* coll;
  size_t c;
  int rank, n, root;
} Call;

static int parseSize(const char* s, size_t* out) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (end == s || v < 0) return 0;
  double mult = 1;
  if (*end == 'K' || *end == 'k')
    mult = 1024.0, ++end;
  else if (*end == 'M' || *end == 'm')
    mult = 1024.0 * 1024, ++end;
  else if (*end == 'G' || *end == 'g')
    mult = 1024.0 * 1024 * 1024, ++end;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end) return 0;
  *out = (size_t)(v * mult + 0.5);
  return 1;
}

static const Coll* findColl(const char* name) {
  for (size_t i = 0; i < sizeof kColls / sizeof kColls[0]; ++i)
    if (!strcmp(kColls[i].name, name)) return &kColls[i];
  return NULL;
}

static int parseArgs(int argc, char** argv, Options* o) {
  /* Plain getopt has no long options: --coll X and --coll=X become -C X and -CX. */
  static char shortFlag[] = "-C";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--coll")) {
      argv[i] = shortFlag;
    } else if (!strncmp(argv[i], "--coll=", 7)) {
      argv[i] += 5;
      argv[i][0] = '-', argv[i][1] = 'C';
    }
  }
  int c;
  while ((c = getopt(argc, argv, "C:b:e:i:f:n:w:c:r:")) != -1) {
    int ok = 1;
    switch (c) {
      case 'C': ok = (o->coll = findColl(optarg)) != NULL; break;
      case 'b': ok = parseSize(optarg, &o->minBytes); break;
      case 'e': ok = parseSize(optarg, &o->maxBytes); break;
      case 'i': ok = parseSize(optarg, &o->stepBytes); break;
      case 'f':
        o->stepFactor = atof(optarg);
        ok = o->stepFactor > 1;
        break;
      case 'n': o->iters = atoi(optarg); break;
      case 'w': o->warmup = atoi(optarg); break;
      case 'c': o->check = atoi(optarg); break;
      case 'r':
        o->root = atoi(optarg);
        ok = o->root >= 0;
        break;
      default: ok = 0;
    }
    if (!ok) {
      fprintf(
          stderr,
          "usage: %s [-C|--coll "
          "allreduce|allgather|reducescatter|broadcast|reduce|alltoall|gather|scatter|sendrecv]\n"
          "       [-b minbytes] [-e maxbytes] [-f factor | -i step] [-n iters] [-w warmup] [-c "
          "0|1] [-r root]\n",
          argv[0]);
      return 0;
    }
  }
  return 1;
}

/* Reductions: small integers whose sum over any number of ranks is exact in float. Moved data:
 * values that differ between ranks and neighbouring elements, so a misplaced block shows. */
static float inputValue(const Call* k, int rank, size_t i) {
  if (k->coll->reduces) return (float)((i * 7 + (size_t)rank * 3) % 10);
  return (float)((i * 7 + (size_t)rank * 13 + 1) % 251);
}

static float reduced(const Call* k, size_t i) {
  float sum = 0;
  for (int r = 0; r < k->n; ++r) sum += inputValue(k, r, i);
  return sum;
}

static void fill(const Call* k, float* buf, size_t n, int rank, size_t from) {
  for (size_t i = 0; i < n; ++i) buf[i] = inputValue(k, rank, from + i);
}

/* Elements in this rank's send and receive buffers. */
static size_t sendCount(const Call* k) {
  switch (k->coll->kind) {
    case ALLGATHER:
    case GATHER: return k->c;
    case REDUCESCATTER:
    case ALLTOALL:
    case SCATTER: return k->c * k->n;
    default: return k->c;
  }
}
static size_t recvCount(const Call* k) {
  switch (k->coll->kind) {
    case ALLGATHER:
    case GATHER:
    case ALLTOALL: return k->c * k->n;
    default: return k->c;
  }
}

/* The value element i of this rank's result must hold; the result is at recv + resultOffset. */
static float expected(const Call* k, size_t i) {
  size_t c = k->c;
  switch (k->coll->kind) {
    case ALLREDUCE:
    case REDUCE: return reduced(k, i);
    case REDUCESCATTER: return reduced(k, (size_t)k->rank * c + i);
    case BROADCAST: return inputValue(k, k->root, i);
    case ALLGATHER:
    case GATHER: return inputValue(k, (int)(i / c), i % c);
    case ALLTOALL: return inputValue(k, (int)(i / c), (size_t)k->rank * c + i % c);
    case SCATTER: return inputValue(k, k->root, (size_t)k->rank * c + i);
    case SENDRECV: return inputValue(k, (k->rank - 1 + k->n) % k->n, i);
  }
  return 0;
}

static int receives(const Call* k) {
  return !((k->coll->kind == REDUCE || k->coll->kind == GATHER) && k->rank != k->root);
}

static size_t resultOffset(const Call* k, int inPlace) {
  return inPlace && k->coll->kind == SCATTER && k->rank == k->root ? (size_t)k->rank * k->c : 0;
}

static void call(const Call* k, int inPlace, float* send, float* recv) {
  int c = (int)k->c, root = k->root, me = k->rank == root;
  MPI_Comm w = MPI_COMM_WORLD;
  const void* in = inPlace ? MPI_IN_PLACE : send;
  switch (k->coll->kind) {
    case ALLREDUCE: MPI_Allreduce(in, recv, c, MPI_FLOAT, MPI_SUM, w); break;
    case ALLGATHER: MPI_Allgather(in, c, MPI_FLOAT, recv, c, MPI_FLOAT, w); break;
    case REDUCESCATTER: MPI_Reduce_scatter_block(in, recv, c, MPI_FLOAT, MPI_SUM, w); break;
    case BROADCAST: MPI_Bcast(recv, c, MPI_FLOAT, root, w); break;
    case REDUCE:
      MPI_Reduce(inPlace && me ? MPI_IN_PLACE
                 : inPlace     ? recv
                               : send,
                 recv, c, MPI_FLOAT, MPI_SUM, root, w);
      break;
    case ALLTOALL: MPI_Alltoall(in, c, MPI_FLOAT, recv, c, MPI_FLOAT, w); break;
    case GATHER:
      MPI_Gather(inPlace && me ? MPI_IN_PLACE
                 : inPlace     ? recv + (size_t)k->rank * c
                               : send,
                 c, MPI_FLOAT, recv, c, MPI_FLOAT, root, w);
      break;
    case SCATTER:
      if (inPlace && me)
        MPI_Scatter(recv, c, MPI_FLOAT, MPI_IN_PLACE, c, MPI_FLOAT, root, w);
      else
        MPI_Scatter(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, root, w);
      break;
    case SENDRECV: {
      int next = (k->rank + 1) % k->n, prev = (k->rank - 1 + k->n) % k->n;
      if (inPlace)
        MPI_Sendrecv_replace(recv, c, MPI_FLOAT, next, 0, prev, 0, w, MPI_STATUS_IGNORE);
      else
        MPI_Sendrecv(send, c, MPI_FLOAT, next, 0, recv, c, MPI_FLOAT, prev, 0, w,
                     MPI_STATUS_IGNORE);
      break;
    }
  }
}

/* Puts the input where the call reads it: the send buffer, or in place the one buffer (every
 * element first set to NaN, so only what the call writes can pass the check). */
static void prepare(const Call* k, int inPlace, float* send, float* recv) {
  size_t bufCount = recvCount(k) > sendCount(k) ? recvCount(k) : sendCount(k);
  memset(recv, 0xFF, bufCount * sizeof(float));
  if (!inPlace) {
    fill(k, send, sendCount(k), k->rank, 0);
    if (k->coll->kind == BROADCAST) fill(k, recv, k->c, k->rank, 0); /* the one buffer */
    return;
  }
  switch (k->coll->kind) {
    case ALLGATHER:
    case GATHER: fill(k, recv + (size_t)k->rank * k->c, k->c, k->rank, 0); break;
    case SCATTER:
      if (k->rank == k->root) fill(k, recv, k->c * k->n, k->rank, 0);
      break;
    default: fill(k, recv, sendCount(k), k->rank, 0); break;
  }
}

static long countWrong(const Call* k, int inPlace, const float* recv) {
  if (!receives(k)) return 0;
  const float* res = recv + resultOffset(k, inPlace);
  size_t n = k->coll->kind == REDUCESCATTER ? k->c : recvCount(k);
  long wrong = 0;
  for (size_t i = 0; i < n; ++i)
    if (res[i] != expected(k, i)) ++wrong; /* NaN (unwritten) never equals */
  return wrong;
}

/* Mean seconds per call across ranks. */
static double timeCalls(const Call* k, int inPlace, float* send, float* recv, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) call(k, inPlace, send, recv);
  double sec = iters ? (MPI_Wtime() - t0) / iters : 0, sum = 0;
  MPI_Allreduce(&sec, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / k->n;
}

static void printPlace(double sec, size_t bytes, double factor, long wrong, int check,
                       double* busbwSum) {
  double algbw = sec > 0 ? (double)bytes / 1e9 / sec : 0;
  double busbw = algbw * factor, us = sec * 1e6;
  char t[32], w[32];
  snprintf(t, sizeof t, us < 1e4 ? "%.2f" : us < 1e6 ? "%.1f" : "%.0f", us);
  if (check)
    snprintf(w, sizeof w, "%ld", wrong);
  else
    snprintf(w, sizeof w, "N/A");
  printf("  %8s  %7.2f  %7.2f  %6s", t, algbw, busbw, w);
  *busbwSum += busbw;
}

/* The MCA variable mpi_yield_when_idle as this rank's MPI library sees it (MPI_T; OpenMPI names it
 * so): 1 when a waiting rank yields its core, 0 when it busy-polls, -1 where the library has no
 * such variable. compare.py reads the line printHeader makes of every rank's value. */
static int yieldWhenIdle(void) {
  int provided = 0, index = 0, count = 0;
  long long value = 0; /* a bool may be read as one byte: the rest stays 0 */
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return -1;
  int found = MPI_T_cvar_get_index("mpi_yield_when_idle", &index) == MPI_SUCCESS;
  if (found) {
    MPI_T_cvar_handle handle;
    found = MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) == MPI_SUCCESS && count == 1;
    if (found) {
      found = MPI_T_cvar_read(handle, &value) == MPI_SUCCESS;
      MPI_T_cvar_handle_free(&handle);
    }
  }
  MPI_T_finalize();
  return found ? value != 0 : -1;
}

static void printHeader(const Options* o, int nranks, int yieldMin, int yieldMax) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  char* nl = strchr(version, '\n');
  if (nl) *nl = 0;
  printf("# Collective test starting: mpi_coll_perf --coll %s\n# %s\n", o->coll->name, version);
  printf("# nProcs %d minBytes %zu maxBytes %zu warmup iters: %d iters: %d validation: %d\n",
         nranks, o->minBytes, o->maxBytes, o->warmup, o->iters, o->check);
  if (yieldMin == yieldMax)
    printf("# mpi_yield_when_idle %d on every rank\n#\n", yieldMin);
  else
    printf("# mpi_yield_when_idle %d to %d: not the same on every rank\n#\n", yieldMin, yieldMax);
  printf("# %10s  %12s  %8s  %6s  %6s  %36s  %36s\n", "", "", "", "", "", "out-of-place",
         "in-place");
  printf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (int k = 0; k < 2; ++k) printf("  %8s  %7s  %7s  %6s", "time", "algbw", "busbw", "#wrong");
  printf("\n# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  for (int k = 0; k < 2; ++k) printf("  %8s  %7s  %7s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
  printf("\n");
  fflush(stdout);
}

static Call shapeFor(const Options* o, size_t bytes, int rank, int nranks) {
  size_t count = bytes / sizeof(float);
  Call k = {o->coll, o->coll->split ? count / nranks : count, rank, nranks,
            o->coll->rooted ? o->root : -1};
  return k;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Options o = {32u << 20, 32u << 20, 1u << 20, 0, 20, 5, 1, 0, &kColls[0]};
  if (!parseArgs(argc, argv, &o) || o.root >= nranks) {
    if (o.root >= nranks && rank == 0)
      fprintf(stderr, "root %d is not below the rank count %d\n", o.root, nranks);
    MPI_Finalize();
    return 2;
  }
  /* Every buffer of every row fits in maxBytes: split sizes are whole buffers. */
  size_t alloc = (o.maxBytes + 4095) / 4096 * 4096 + 4096;
  float* send = aligned_alloc(4096, alloc);
  float* recv = aligned_alloc(4096, alloc);
  if (!send || !recv) {
    fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", rank, alloc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(send, 0, alloc);
  memset(recv, 0, alloc);
  int yield[2] = {yieldWhenIdle(), 0}, yieldRange[2];
  yield[1] = -yield[0];
  MPI_Allreduce(yield, yieldRange, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* min, -max */
  if (rank == 0) printHeader(&o, nranks, yieldRange[0], -yieldRange[1]);
  /* As nccl-tests: warm up at the largest size, then at the smallest (the first row timed). */
  Call top = shapeFor(&o, o.maxBytes, rank, nranks);
  prepare(&top, 0, send, recv);
  timeCalls(&top, 0, send, recv, o.warmup);
  Call bottom = shapeFor(&o, o.minBytes, rank, nranks);
  prepare(&bottom, 0, send, recv);
  timeCalls(&bottom, 0, send, recv, o.warmup);

  long totalWrong = 0;
  double busbwSum = 0;
  int rows = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes;) {
    Call k = shapeFor(&o, bytes, rank, nranks);
    long wrong[2] = {0, 0}, all[2];
    double sec[2];
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      prepare(&k, inPlace, send, recv);
      sec[inPlace] = timeCalls(&k, inPlace, send, recv, o.iters);
      if (o.check) {
        prepare(&k, inPlace, send, recv);
        call(&k, inPlace, send, recv);
        wrong[inPlace] = countWrong(&k, inPlace, recv);
      }
    }
    MPI_Allreduce(wrong, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    totalWrong += all[0] + all[1];
    if (rank == 0) {
      size_t s = sendCount(&k), r = recvCount(&k);
      size_t size = (s > r ? s : r) * sizeof(float);
      printf("%12zu  %12zu  %8s  %6s  %6d", size, k.c, "float", o.coll->reduces ? "sum" : "none",
             k.root);
      for (int p = 0; p < 2; ++p)
        printPlace(sec[p], size, o.coll->busFactor(nranks), all[p], o.check, &busbwSum);
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
