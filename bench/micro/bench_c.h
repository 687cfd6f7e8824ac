/* What the C benchmarks here share: failing on an NCCL error with its text, byte counts with
 * K/M/G suffixes, and a communicator over the ranks a launcher (braidrun, tools/netcluster)
 * started, from RANK, WORLD_SIZE and NCCL_COMM_ID. */
#ifndef BRAID_BENCH_MICRO_BENCH_C_H_
#define BRAID_BENCH_MICRO_BENCH_C_H_

#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

/* Exits 1 naming `what` and the error (and comm's last error, where there is a comm). */
static void benchCheck(ncclResult_t r, const char* what, ncclComm_t comm) {
  if (r == ncclSuccess) return;
  fprintf(stderr, "%s: %s: %s\n", what, ncclGetErrorString(r), ncclGetLastError(comm));
  exit(1);
}

/* "64K", "8M", "1G", "4096". */
static size_t benchParseBytes(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  if (*end == 'G' || *end == 'g') v *= 1024 * 1024 * 1024;
  return (size_t)v;
}

/* This rank's communicator over the launcher's ranks; exits 2 when not under one. */
static ncclComm_t benchInitWorld(int* rank, int* nranks) {
  const char* rankEnv = getenv("RANK");
  const char* sizeEnv = getenv("WORLD_SIZE");
  if (!rankEnv || !sizeEnv) {
    fprintf(stderr, "run under braidrun or tools/netcluster (RANK and WORLD_SIZE unset)\n");
    exit(2);
  }
  *rank = atoi(rankEnv);
  *nranks = atoi(sizeEnv);
  ncclUniqueId id;
  ncclComm_t comm;
  benchCheck(ncclGetUniqueId(&id), "ncclGetUniqueId", NULL);
  benchCheck(ncclCommInitRank(&comm, *nranks, id, *rank), "ncclCommInitRank", NULL);
  return comm;
}

#endif /* BRAID_BENCH_MICRO_BENCH_C_H_ */
