// The environment variables the communicator, its planning and its executor reads (base/env.h says
// how variables are declared and gathered).
#pragma once

#include "base/env.h"

namespace braid::env {

extern const Var kNcclAlgo;
extern const Var kNcclCommId;
extern const Var kBraidAdapt;
extern const Var kBraidAlgo;
extern const Var kBraidBootstrapRootTimeoutMs;
extern const Var kBraidCheckMismatch;
extern const Var kBraidChunkBytes;
extern const Var kBraidCompress;
extern const Var kBraidCompressFeedback;
extern const Var kBraidCompressMinBytes;
extern const Var kBraidCuda;
extern const Var kBraidDeviceIpc;
extern const Var kBraidDeviceIpcSlotBytes;
extern const Var kBraidDevicePieceBytes;
extern const Var kBraidDeviceStreamCopyBytes;
extern const Var kBraidDirectMaxBytes;
extern const Var kBraidInitTimeoutMs;
extern const Var kBraidStatsFile;
extern const Var kBraidStatsIntervalMs;
extern const Var kBraidTimeoutMs;

List coreVariables();

}  // namespace braid::env
