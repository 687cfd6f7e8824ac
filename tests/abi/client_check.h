/* What the clients of tests/abi (built against NVIDIA's headers, run through LD_PRELOAD) share:
 * failing with a reason, checking a call, reading the rank's environment. C and C++. */
#ifndef BRAID_TESTS_ABI_CLIENT_CHECK_H_
#define BRAID_TESTS_ABI_CLIENT_CHECK_H_

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <nccl.h>

static int g_rank = -1; /* for the messages; set by main */

#define FAIL(...)                               \
  do {                                          \
    fprintf(stderr, "rank %d: FAIL: ", g_rank); \
    fprintf(stderr, __VA_ARGS__);               \
    fprintf(stderr, "\n");                      \
    exit(1);                                    \
  } while (0)

#define NCCL_CHECK(call, comm)                                                \
  do {                                                                        \
    ncclResult_t r_ = (call);                                                 \
    if (r_ != ncclSuccess)                                                    \
      FAIL("%s returned %d (%s): %s", #call, (int)r_, ncclGetErrorString(r_), \
           ncclGetLastError(comm));                                           \
  } while (0)

static int envInt(const char* name) {
  const char* text = getenv(name);
  if (text == NULL || *text == '\0') FAIL("environment variable %s is not set", name);
  char* end = NULL;
  long value = strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > INT_MAX) FAIL("%s=%s is not a rank number", name, text);
  return (int)value;
}

#endif
