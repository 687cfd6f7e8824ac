// The environment variables the codecs reads (base/env.h says how variables are declared and
// gathered).
#pragma once

#include "base/env.h"

namespace braid::env {

extern const Var kBraidCompressBlock;
extern const Var kBraidCompressStateBytes;

List compressVariables();

}  // namespace braid::env
