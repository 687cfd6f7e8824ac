/* A one-rank stand-in for libnccl.so.2, just enough for preload_client.c: proves that the
 * client accepts a correct single-rank all-reduce and catches a wrong one. Built with
 * FAKE_BUG=1 it gets the last element wrong; with FAKE_BUG=2 it writes one element past
 * the end of the receive buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

#ifndef FAKE_BUG
#define FAKE_BUG 0
#endif

struct ncclComm {
  int nranks, rank;
};

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  memset(id, 0, sizeof *id);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  (void)id;
  if (nranks != 1 || rank != 0) return ncclInvalidArgument;
  *comm = (ncclComm_t)calloc(1, sizeof(struct ncclComm));
  if (*comm == NULL) return ncclSystemError;
  (*comm)->nranks = nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  (void)comm, (void)stream;
  if (op != ncclSum || (datatype != ncclFloat32 && datatype != ncclInt32))
    return ncclInvalidArgument;
  memmove(recvbuff, sendbuff, count * 4);
  if (FAKE_BUG == 1 && count > 0) {
    if (datatype == ncclFloat32)
      ((float*)recvbuff)[count - 1] += 1.0f;
    else
      ((int32_t*)recvbuff)[count - 1] += 1;
  }
  if (FAKE_BUG == 2 && count > 0) memset((char*)recvbuff + count * 4, 0, 4);
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  free(comm);
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  return result == ncclSuccess ? "ok" : "error";
}
const char* ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return "";
}
