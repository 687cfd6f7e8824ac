/* A client of NCCL's whole host-memory surface, built against NVIDIA's nccl.h and run on Braid's
 * libnccl.so.2 through LD_PRELOAD (run_preload.sh). It is built twice: against 2.28.9's header
 * (the CUDA toolkit's), where it uses what 2.28 has, and against 2.32.3's (PyPI's
 * nvidia-nccl-cu12 wheel), where it also uses what 2.32 added: the per-call config forms, grow,
 * suspend and resume, memory statistics, properties, the parameter API and ncclSetEncryption.
 * C-style code compiled as C++, as the frameworks that load NCCL are: 2.32's device headers
 * (which declare ncclCommQueryProperties) do not compile warning-free as C.
 *
 * One rank of a job: RANK, WORLD_SIZE and NCCL_COMM_ID come from the environment. Built against
 * 2.32 the job grows: ranks 0..n-2 start a communicator, rank 0 makes a grow id and writes it
 * to a file, and rank n-1 (a process the job did not start with) reads it and joins them.
 * Every collective's result is checked exactly (integers). With SURFACE_PSK set, each process
 * turns TLS on (ncclSetEncryption) before anything else. Prints PASS; any failure exits non-zero
 * with a reason.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nccl.h>
#if NCCL_VERSION_CODE >= 23200
#include <nccl_device/host.h> /* ncclCommQueryProperties and its struct live there in 2.32 */
#endif

#include "client_check.h"

#ifndef EXPECT_VERSION
#error "build with -DEXPECT_VERSION=<the NCCL version code Braid reports>"
#endif

/* A call that must fail with `want`, and say `text` about it. */
#define EXPECT_FAILS(call, want, text, comm)                                                 \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != (want)) FAIL("%s returned %d, want %d", #call, (int)r_, (int)(want));          \
    if (strstr(ncclGetLastError(comm), (text)) == NULL)                                      \
      FAIL("%s: the error \"%s\" does not say \"%s\"", #call, ncclGetLastError(comm), text); \
  } while (0)

/* Rank r's element i: distinct per rank and element, small enough that sums stay exact. */
static int32_t input(int r, size_t i) { return (int32_t)((r + 1) * 1000 + (int)(i % 997)); }

static int32_t* filled(size_t n, int r) {
  int32_t* p = (int32_t*)malloc((n ? n : 1) * sizeof(int32_t));
  if (p == NULL) FAIL("out of memory");
  for (size_t i = 0; i < n; ++i) p[i] = input(r, i);
  return p;
}

static int32_t* zeroed(size_t n) {
  int32_t* p = (int32_t*)calloc(n ? n : 1, sizeof(int32_t));
  if (p == NULL) FAIL("out of memory");
  return p;
}

/* A per-call config, or NULL for the plain call. With a 2.28 header there is none. COLL calls
 * collective Name with the arguments before comm, through its Config form when cfg is set. */
#if NCCL_VERSION_CODE >= 23200
typedef const ncclCollConfig_t* CallConfig;
#define COLL(Name, comm, cfg, ...) \
  ((cfg) ? nccl##Name##Config(__VA_ARGS__, comm, NULL, cfg) : nccl##Name(__VA_ARGS__, comm, NULL))
#else
typedef const void* CallConfig;
#define COLL(Name, comm, cfg, ...) ((void)(cfg), nccl##Name(__VA_ARGS__, comm, NULL))
#endif

static ncclResult_t allReduce(const void* s, void* r, size_t n, ncclComm_t comm, CallConfig cfg) {
  return COLL(AllReduce, comm, cfg, s, r, n, ncclInt32, ncclSum);
}

/* Every collective once on `comm`, results checked; with cfg, through the Config forms. */
static void everyCollective(ncclComm_t comm, CallConfig cfg, const char* what) {
  int nranks = 0, rank = 0;
  NCCL_CHECK(ncclCommCount(comm, &nranks), comm);
  NCCL_CHECK(ncclCommUserRank(comm, &rank), comm);
  const size_t n = 4099;
  const size_t all = n * (size_t)nranks;
  const int root = nranks - 1;

  int32_t* send = filled(all, rank);
  int32_t* recv = zeroed(all);
  NCCL_CHECK(allReduce(send, recv, n, comm, cfg), comm);
  for (size_t i = 0; i < n; ++i) {
    int32_t want = 0;
    for (int r = 0; r < nranks; ++r) want += input(r, i);
    if (recv[i] != want) FAIL("%s AllReduce: [%zu] is %d, want %d", what, i, recv[i], want);
  }

  memset(recv, 0, all * sizeof(int32_t));
  NCCL_CHECK(COLL(Broadcast, comm, cfg, send, recv, n, ncclInt32, root), comm);
  for (size_t i = 0; i < n; ++i)
    if (recv[i] != input(root, i)) FAIL("%s Broadcast: [%zu] is %d", what, i, recv[i]);

  memset(recv, 0, all * sizeof(int32_t));
  NCCL_CHECK(COLL(Reduce, comm, cfg, send, recv, n, ncclInt32, ncclMax, root), comm);
  if (rank == root)
    for (size_t i = 0; i < n; ++i)
      if (recv[i] != input(nranks - 1, i)) FAIL("%s Reduce(max): [%zu] is %d", what, i, recv[i]);

  memset(recv, 0, all * sizeof(int32_t));
  NCCL_CHECK(COLL(AllGather, comm, cfg, send, recv, n, ncclInt32), comm);
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < n; ++i)
      if (recv[(size_t)r * n + i] != input(r, i))
        FAIL("%s AllGather: block %d [%zu] is %d", what, r, i, recv[(size_t)r * n + i]);

  memset(recv, 0, all * sizeof(int32_t));
  NCCL_CHECK(COLL(ReduceScatter, comm, cfg, send, recv, n, ncclInt32, ncclSum), comm);
  for (size_t i = 0; i < n; ++i) {
    int32_t want = 0;
    for (int r = 0; r < nranks; ++r) want += input(r, (size_t)rank * n + i);
    if (recv[i] != want) FAIL("%s ReduceScatter: [%zu] is %d, want %d", what, i, recv[i], want);
  }

  /* AlltoAll, Gather, Scatter: block b of rank r's send buffer is input(r, b * n + i). */
  memset(recv, 0, all * sizeof(int32_t));
  NCCL_CHECK(COLL(AlltoAll, comm, cfg, send, recv, n, ncclInt32), comm);
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < n; ++i)
      if (recv[(size_t)r * n + i] != input(r, (size_t)rank * n + i))
        FAIL("%s AlltoAll: block %d [%zu] is %d", what, r, i, recv[(size_t)r * n + i]);

  memset(recv, 0, all * sizeof(int32_t));
  NCCL_CHECK(COLL(Gather, comm, cfg, send, recv, n, ncclInt32, root), comm);
  if (rank == root)
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < n; ++i)
        if (recv[(size_t)r * n + i] != input(r, i))
          FAIL("%s Gather: block %d [%zu] is %d", what, r, i, recv[(size_t)r * n + i]);

  memset(recv, 0, all * sizeof(int32_t));
  NCCL_CHECK(COLL(Scatter, comm, cfg, send, recv, n, ncclInt32, root), comm);
  for (size_t i = 0; i < n; ++i)
    if (recv[i] != input(root, (size_t)rank * n + i))
      FAIL("%s Scatter: [%zu] is %d", what, i, recv[i]);

  /* A ring of sends in one group, and the in-place broadcast. */
  memset(recv, 0, all * sizeof(int32_t));
  NCCL_CHECK(ncclGroupStart(), comm);
  NCCL_CHECK(ncclSend(send, n, ncclInt32, (rank + 1) % nranks, comm, NULL), comm);
  NCCL_CHECK(ncclRecv(recv, n, ncclInt32, (rank + nranks - 1) % nranks, comm, NULL), comm);
  NCCL_CHECK(ncclGroupEnd(), comm);
  for (size_t i = 0; i < n; ++i)
    if (recv[i] != input((rank + nranks - 1) % nranks, i)) FAIL("%s Send/Recv: [%zu]", what, i);
  int32_t* buf = filled(n, rank);
  NCCL_CHECK(ncclBcast(buf, n, ncclInt32, 0, comm, NULL), comm);
  for (size_t i = 0; i < n; ++i)
    if (buf[i] != input(0, i)) FAIL("%s Bcast: [%zu] is %d", what, i, buf[i]);
  free(buf);
  free(recv);
  free(send);
}

#if NCCL_VERSION_CODE >= 23200

static void configForms(ncclComm_t comm) {
  ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
  everyCollective(comm, &cfg, "Config(default)");
  /* NCCL's names, which Braid shares, and a Braid name. */
  const char* selections[] = {"ring", "tree", "^ring", "direct,rhd"};
  for (size_t k = 0; k < sizeof selections / sizeof selections[0]; ++k) {
    cfg.algSelection = selections[k];
    cfg.forceAlgSelection = 0;
    everyCollective(comm, &cfg, selections[k]);
  }
  /* A selection nothing here meets: an error when forced, Braid's choice when not. */
  int32_t send[64], recv[64];
  for (int i = 0; i < 64; ++i) send[i] = 1;
  cfg.algSelection = "nvls";
  cfg.forceAlgSelection = 1;
  EXPECT_FAILS(allReduce(send, recv, 64, comm, &cfg), ncclInvalidArgument, "allows none", comm);
  cfg.forceAlgSelection = 0;
  NCCL_CHECK(allReduce(send, recv, 64, comm, &cfg), comm);
  int nranks = 0;
  NCCL_CHECK(ncclCommCount(comm, &nranks), comm);
  if (recv[63] != nranks) FAIL("AllReduce under an unmet selection gave %d", recv[63]);
  cfg.algSelection = "warp-drive";
  EXPECT_FAILS(allReduce(send, recv, 64, comm, &cfg), ncclInvalidArgument, "warp-drive", comm);
  ncclCollConfig_t bad = NCCL_COLLCONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_FAILS(allReduce(send, recv, 64, comm, &bad), ncclInvalidArgument, "magic", comm);
}

static void suspendResume(ncclComm_t comm) {
  uint64_t value = 7;
  NCCL_CHECK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &value), comm);
  if (value != 0)
    FAIL("a fresh communicator says it is suspended (%llu)", (unsigned long long)value);
  NCCL_CHECK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM), comm);
  NCCL_CHECK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &value), comm);
  if (value != 1) FAIL("a suspended communicator says %llu", (unsigned long long)value);
  int32_t send[8] = {1, 1, 1, 1, 1, 1, 1, 1}, recv[8];
  EXPECT_FAILS(allReduce(send, recv, 8, comm, NULL), ncclInvalidUsage, "suspended", comm);
  NCCL_CHECK(ncclCommResume(comm), comm);
  everyCollective(comm, NULL, "after resume");
  NCCL_CHECK(ncclCommMemStats(comm, ncclStatGpuMemTotal, &value), comm);
}

static void properties(ncclComm_t comm, int rank, int nranks) {
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  NCCL_CHECK(ncclCommQueryProperties(comm, &props), comm);
  if (props.rank != rank || props.nRanks != nranks)
    FAIL("properties say rank %d of %d, want %d of %d", props.rank, props.nRanks, rank, nranks);
  if (props.deviceApiSupport) FAIL("properties claim device API support");
  /* The hash names the communicator: the same on every rank. */
  uint64_t hashes[64];
  if (nranks > 64) FAIL("too many ranks for this check");
  NCCL_CHECK(ncclAllGather(&props.commHash, hashes, 1, ncclUint64, comm, NULL), comm);
  for (int r = 0; r < nranks; ++r)
    if (hashes[r] != props.commHash) FAIL("rank %d's commHash differs", r);
}

static void parameters(void) {
  ncclParamHandle_t h = NULL;
  NCCL_CHECK(ncclParamBind(&h, "NCCL_COMM_ID"), NULL);
  const char* text = NULL;
  NCCL_CHECK(ncclParamGetStr(h, &text), NULL);
  if (strcmp(text, getenv("NCCL_COMM_ID")) != 0)
    FAIL("NCCL_COMM_ID reads \"%s\", the environment has \"%s\"", text, getenv("NCCL_COMM_ID"));
  NCCL_CHECK(ncclParamBind(&h, "BRAID_CHUNK_BYTES"), NULL);
  int64_t chunk = 0;
  NCCL_CHECK(ncclParamGetI64(h, &chunk), NULL);
  if (chunk != 524288)
    FAIL("BRAID_CHUNK_BYTES reads %lld, its default is 524288", (long long)chunk);
  int8_t small = 0;
  EXPECT_FAILS(ncclParamGetI8(h, &small), ncclInvalidArgument, "does not fit", NULL);
  char raw[16];
  int len = 0;
  NCCL_CHECK(ncclParamGet(h, raw, sizeof raw, &len), NULL);
  if (len != 6 || memcmp(raw, "524288", 6) != 0) FAIL("ncclParamGet gave %d bytes", len);
  const char** keys = NULL;
  int nkeys = 0;
  NCCL_CHECK(ncclParamGetAllParameterKeys(&keys, &nkeys), NULL);
  int found = 0;
  for (int i = 0; i < nkeys; ++i) found += strcmp(keys[i], "NCCL_ALGO") == 0;
  if (found != 1) FAIL("NCCL_ALGO is listed %d times among %d keys", found, nkeys);
  const char* value = NULL;
  int valueLen = -1;
  NCCL_CHECK(ncclParamGetParameter("BRAID_CHUNK_BYTES", &value, &valueLen), NULL);
  if (strcmp(value, "524288") != 0 || valueLen != 6) FAIL("ncclParamGetParameter gave %s", value);
  EXPECT_FAILS(ncclParamBind(&h, "NCCL_NO_SUCH_THING"), ncclInvalidArgument, "NCCL_NO_SUCH_THING",
               NULL);
  ncclParamDumpAll();
}

/* The grow id goes from rank 0 to the joining process through a file, as a job's launcher
 * would hand it over; written whole, then renamed, so a reader never sees half of it. */
static void growPath(char* out, size_t size) {
  char job[128];
  snprintf(job, sizeof job, "%s", getenv("NCCL_COMM_ID")); /* unique to this job */
  for (char* p = job; *p; ++p)
    if (*p == ':' || *p == '/') *p = '_';
  const char* dir = getenv("TMPDIR");
  snprintf(out, size, "%s/surface-grow-%s.id", dir && *dir ? dir : "/tmp", job);
}

static void writeGrowId(const ncclUniqueId* id) {
  char path[PATH_MAX], tmp[PATH_MAX + 8];
  growPath(path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = fopen(tmp, "wb");
  if (f == NULL || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0)
    FAIL("cannot write %s", tmp);
  if (rename(tmp, path) != 0) FAIL("cannot rename %s", tmp);
}

static void readGrowId(ncclUniqueId* id) {
  char path[PATH_MAX];
  growPath(path, sizeof path);
  for (int tries = 0; tries < 6000; ++tries) { /* up to a minute */
    FILE* f = fopen(path, "rb");
    if (f != NULL) {
      size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) {
        unlink(path);
        return;
      }
    }
    struct timespec ten = {0, 10 * 1000 * 1000};
    nanosleep(&ten, NULL);
  }
  FAIL("no grow id appeared at %s", path);
}

#endif /* NCCL_VERSION_CODE >= 23200 */

int main(void) {
  g_rank = envInt("RANK");
  const int world = envInt("WORLD_SIZE");
  if (g_rank >= world) FAIL("RANK %d is not below WORLD_SIZE %d", g_rank, world);
  if (getenv("NCCL_COMM_ID") == NULL) FAIL("NCCL_COMM_ID is not set");

  int version = 0;
  NCCL_CHECK(ncclGetVersion(&version), NULL);
  if (version != EXPECT_VERSION) FAIL("ncclGetVersion gave %d, want %d", version, EXPECT_VERSION);

#if NCCL_VERSION_CODE >= 23200
  // SURFACE_PSK: the whole job over TLS, every process setting the key before its first init.
  if (const char* psk = getenv("SURFACE_PSK")) {
    ncclEncryptionConfig_t tls = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
    tls.mode = NCCL_ENCRYPTION_MODE_PSK;
    tls.psk = psk;
    NCCL_CHECK(ncclSetEncryption(&tls), NULL);
  }
  if (world < 3) FAIL("the 2.32 client grows a job: WORLD_SIZE must be at least 3");
  const int first = world - 1; /* the communicator before the grow */
  ncclComm_t grown = NULL;
  if (g_rank == world - 1) {
    ncclUniqueId id;
    readGrowId(&id);
    NCCL_CHECK(ncclCommGrow(NULL, world, &id, g_rank, &grown, NULL), NULL);
  } else {
    ncclUniqueId id;
    NCCL_CHECK(ncclGetUniqueId(&id), NULL);
    ncclComm_t comm = NULL;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    NCCL_CHECK(ncclCommInitRankConfig(&comm, first, id, g_rank, &config), NULL);
    everyCollective(comm, NULL, "before grow");
    configForms(comm);
    suspendResume(comm);
    properties(comm, g_rank, first);
    parameters();
    ncclUniqueId growId;
    if (g_rank == 0) {
      NCCL_CHECK(ncclCommGetUniqueId(comm, &growId), comm);
      EXPECT_FAILS(ncclCommGetUniqueId(comm, &growId), ncclInvalidUsage, "not been used", comm);
      writeGrowId(&growId);
    }
    NCCL_CHECK(ncclCommGrow(comm, world, g_rank == 0 ? &growId : NULL, -1, &grown, NULL), comm);
    everyCollective(comm, NULL, "the old communicator after grow");
    NCCL_CHECK(ncclCommDestroy(comm), NULL);
  }
  int rank = -1, count = 0;
  NCCL_CHECK(ncclCommUserRank(grown, &rank), grown);
  NCCL_CHECK(ncclCommCount(grown, &count), grown);
  if (rank != g_rank || count != world)
    FAIL("the grown communicator says rank %d of %d, want %d of %d", rank, count, g_rank, world);
  everyCollective(grown, NULL, "grown");
  ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
  everyCollective(grown, &cfg, "grown Config");
  ncclEncryptionConfig_t plain = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  NCCL_CHECK(ncclSetEncryption(&plain), NULL);
  NCCL_CHECK(ncclCommDestroy(grown), NULL);
#else
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id), NULL);
  ncclComm_t comm = NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  NCCL_CHECK(ncclCommInitRankConfig(&comm, world, id, g_rank, &config), NULL);
  everyCollective(comm, NULL, "2.28");
  NCCL_CHECK(ncclCommDestroy(comm), NULL);
#endif
  printf("rank %d: PASS\n", g_rank);
  return 0;
}
