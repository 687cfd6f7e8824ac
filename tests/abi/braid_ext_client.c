/* Braid's extension header as a C program sees it: include/braid/braid.h compiles as strict
 * C11 without warnings, its functions link from libbraid.so, and the policy helpers answer as
 * documented (defaults, BRAID_COMPRESS's syntax, a bad value refused by name). */
#include <stdio.h>
#include <string.h>

#include "braid/braid.h"

static int failures = 0;
#define CHECK(cond)                                             \
  do {                                                          \
    if (!(cond)) {                                              \
      fprintf(stderr, "FAIL: %s (line %d)\n", #cond, __LINE__); \
      failures++;                                               \
    }                                                           \
  } while (0)

int main(void) {
  braidCompressPolicy_t p;
  CHECK(braidCompressPolicyInit(&p) == ncclSuccess);
  CHECK(p.codec == braidCompressNone);
  CHECK(p.errorFeedback == 1);
  CHECK(p.blockSize == 64);
  CHECK(braidCompressPolicyParse("topk:0.05", &p) == ncclSuccess);
  CHECK(p.codec == braidCompressTopK && p.topkRatio == 0.05);
  CHECK(braidCompressPolicyParse("int8", &p) == ncclSuccess && p.codec == braidCompressInt8);
  CHECK(braidCompressPolicyParse("int9", &p) == ncclInvalidArgument);
  CHECK(strstr(ncclGetLastError(NULL), "int9") != NULL);
  CHECK(braidCompressStats(NULL, NULL) == ncclInvalidArgument);
  if (failures == 0) printf("PASS: braid.h from C\n");
  return failures ? 1 : 0;
}
