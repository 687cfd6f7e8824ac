// The libFuzzer entry points every target shares (fuzz_common.h).
#include "fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Keeps the decoders' warnings off stderr: printing them would take most of the fuzzer's time.
  setenv("NCCL_DEBUG", "NONE", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  braid::fuzz::Input in(data, size);
  const auto decoders = braid::fuzz::decoders();
  const size_t pick = decoders.size() > 1 ? in.u8() % decoders.size() : 0;
  decoders[pick](in);
  return 0;
}
