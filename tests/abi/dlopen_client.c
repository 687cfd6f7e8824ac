/* Frameworks often load NCCL with dlopen (Python's ctypes, plugins) rather than at startup. A
 * library whose thread-local storage needs the static TLS block (initial-exec accesses) then
 * fails to load ("cannot allocate memory in static TLS block") once its TLS outgrows the few
 * bytes glibc keeps spare, as it does when the CUDA runtime is linked in. So: dlopen each
 * library named on the command line, run one AllReduce on one rank through it, and close it. */
#include <dlfcn.h>
#include <stdio.h>

#include "nccl.h"

typedef ncclResult_t (*InitAll)(ncclComm_t*, int, const int*);
typedef ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                  ncclComm_t, cudaStream_t);
typedef ncclResult_t (*Destroy)(ncclComm_t);

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    void* lib = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fprintf(stderr, "dlopen %s: %s\n", argv[i], dlerror());
      return 1;
    }
    InitAll initAll = (InitAll)dlsym(lib, "ncclCommInitAll");
    AllReduce allReduce = (AllReduce)dlsym(lib, "ncclAllReduce");
    Destroy destroy = (Destroy)dlsym(lib, "ncclCommDestroy");
    ncclComm_t comm = NULL;
    double x = 2.0, y = 0.0;
    if (!initAll || !allReduce || !destroy || initAll(&comm, 1, NULL) != ncclSuccess ||
        allReduce(&x, &y, 1, ncclFloat64, ncclSum, comm, NULL) != ncclSuccess || y != 2.0 ||
        destroy(comm) != ncclSuccess) {
      fprintf(stderr, "%s: a one-rank AllReduce through dlopen failed\n", argv[i]);
      return 1;
    }
    printf("%s: loaded with dlopen, AllReduce ok\n", argv[i]);
  }
  return 0;
}
