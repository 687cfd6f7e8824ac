#include "compress/variables.h"

namespace braid::env {

const Var kBraidCompressBlock = {
    "BRAID_COMPRESS_BLOCK", "64",
    "INT8 block quantisation: elements per block (one scale each), 32 to 256; smaller blocks "
    "follow outliers more closely and cost more scale bytes"};
const Var kBraidCompressStateBytes = {
    "BRAID_COMPRESS_STATE_BYTES", "1073741824",
    "compression's error-feedback residuals (fp32, one per communicator, buffer, count and type) "
    "are kept within this many bytes; the least recently used are dropped first"};

List compressVariables() {
  static const Var* const kList[] = {&kBraidCompressBlock, &kBraidCompressStateBytes};
  return kList;
}

}  // namespace braid::env
