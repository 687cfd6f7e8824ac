// The environment variables the base layer (the configuration file, the log, the socket toolkit)
// reads (base/env.h says how variables are declared and gathered).
#pragma once

#include "base/env.h"

namespace braid::env {

extern const Var kNcclConfFile;
extern const Var kNcclDebug;
extern const Var kNcclDebugFile;
extern const Var kNcclDebugSubsys;
extern const Var kNcclSocketFamily;
extern const Var kNcclSocketIfname;
extern const Var kBraidTlsPsk;
extern const Var kBraidTlsRecords;
extern const Var kBraidTlsGcm;

List baseVariables();

}  // namespace braid::env
