/* Proves the drop-in claim: a client built against NVIDIA's nccl.h and linked against
 * NVIDIA's libnccl.so.2 runs unchanged on Braid's libnccl.so.2 loaded with LD_PRELOAD.
 *
 * One rank of a job started by run_preload.sh: RANK and WORLD_SIZE come from the
 * environment and NCCL_COMM_ID makes the unique id deterministic, so the processes never
 * exchange it. Checks the version, the communicator's size and rank, and exact results of
 * float and int32 sum all-reduces on host buffers (in place and out of place, counts from 0
 * to past a million). Prints PASS on success; any failure exits non-zero with a reason.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "client_check.h"

/* With LD_PRELOAD set, the entry points must come from the preloaded library: otherwise the
 * test would pass on NVIDIA's library and prove nothing about Braid's. */
static void checkProvider(void) {
  const char* preload = getenv("LD_PRELOAD");
  if (preload == NULL || *preload == '\0') return;
  Dl_info info;
  if (dladdr((void*)&ncclAllReduce, &info) == 0 || info.dli_fname == NULL)
    FAIL("dladdr cannot tell which library defines ncclAllReduce");
  char want[PATH_MAX], got[PATH_MAX];
  if (realpath(preload, want) == NULL) FAIL("LD_PRELOAD=%s does not exist", preload);
  if (realpath(info.dli_fname, got) == NULL) FAIL("cannot resolve %s", info.dli_fname);
  if (strcmp(want, got) != 0) FAIL("ncclAllReduce comes from %s, not from %s", got, want);
}

/* Small integers keep float sums exact in any summation order. */
static float floatInput(int rank, size_t i) { return (float)((int)(i % 61) - 30 + rank); }
static int32_t intInput(int rank, size_t i) { return (int32_t)(i % 100003) * (rank + 1) - rank; }

static void allReduceFloat(ncclComm_t comm, int rank, int nranks, size_t count, int inPlace) {
  float* send = (float*)malloc((count + 1) * sizeof(float));
  float* recv = inPlace ? send : (float*)malloc((count + 1) * sizeof(float));
  if (send == NULL || recv == NULL) FAIL("out of memory for %zu floats", count);
  for (size_t i = 0; i < count; ++i) send[i] = floatInput(rank, i);
  if (!inPlace)
    for (size_t i = 0; i <= count; ++i) recv[i] = -12345.0f;
  send[count] = 777.0f; /* one past the end must stay untouched */

  NCCL_CHECK(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, NULL), comm);

  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += floatInput(r, i);
    if (recv[i] != want)
      FAIL("float %s count %zu: element %zu is %g, want %g", inPlace ? "in-place" : "out-of-place",
           count, i, (double)recv[i], (double)want);
    if (!inPlace && send[i] != floatInput(rank, i))
      FAIL("float count %zu: send buffer changed at %zu", count, i);
  }
  if (send[count] != 777.0f || (!inPlace && recv[count] != -12345.0f))
    FAIL("float count %zu: wrote past the end of a buffer", count);
  if (!inPlace) free(recv);
  free(send);
}

static void allReduceInt(ncclComm_t comm, int rank, int nranks, size_t count, int inPlace) {
  int32_t* send = (int32_t*)malloc((count + 1) * sizeof(int32_t));
  int32_t* recv = inPlace ? send : (int32_t*)malloc((count + 1) * sizeof(int32_t));
  if (send == NULL || recv == NULL) FAIL("out of memory for %zu ints", count);
  for (size_t i = 0; i < count; ++i) send[i] = intInput(rank, i);
  if (!inPlace)
    for (size_t i = 0; i <= count; ++i) recv[i] = -12345;
  send[count] = 777;

  NCCL_CHECK(ncclAllReduce(send, recv, count, ncclInt32, ncclSum, comm, NULL), comm);

  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < nranks; ++r) want += intInput(r, i);
    if (recv[i] != want)
      FAIL("int32 %s count %zu: element %zu is %d, want %d", inPlace ? "in-place" : "out-of-place",
           count, i, (int)recv[i], (int)want);
    if (!inPlace && send[i] != intInput(rank, i))
      FAIL("int32 count %zu: send buffer changed at %zu", count, i);
  }
  if (send[count] != 777 || (!inPlace && recv[count] != -12345))
    FAIL("int32 count %zu: wrote past the end of a buffer", count);
  if (!inPlace) free(recv);
  free(send);
}

int main(void) {
  g_rank = envInt("RANK");
  int nranks = envInt("WORLD_SIZE");
  if (g_rank >= nranks) FAIL("RANK %d is not below WORLD_SIZE %d", g_rank, nranks);
  if (getenv("NCCL_COMM_ID") == NULL) FAIL("NCCL_COMM_ID is not set");
  checkProvider();

  int version = 0;
  NCCL_CHECK(ncclGetVersion(&version), NULL);
  if (version != EXPECT_VERSION) FAIL("ncclGetVersion gave %d, want %d", version, EXPECT_VERSION);

  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id), NULL);
  ncclComm_t comm = NULL;
  NCCL_CHECK(ncclCommInitRank(&comm, nranks, id, g_rank), NULL);
  if (comm == NULL) FAIL("ncclCommInitRank succeeded without a communicator");

  int count = -1, rank = -1;
  NCCL_CHECK(ncclCommCount(comm, &count), comm);
  NCCL_CHECK(ncclCommUserRank(comm, &rank), comm);
  if (count != nranks || rank != g_rank)
    FAIL("communicator says rank %d of %d, want %d of %d", rank, count, g_rank, nranks);

  const size_t counts[] = {0, 1, 7, 4099, (1u << 20) + 3};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
    for (int inPlace = 0; inPlace <= 1; ++inPlace) {
      allReduceFloat(comm, g_rank, nranks, counts[c], inPlace);
      allReduceInt(comm, g_rank, nranks, counts[c], inPlace);
    }
  }

  NCCL_CHECK(ncclCommDestroy(comm), NULL);
  printf("rank %d: PASS\n", g_rank);
  return 0;
}
