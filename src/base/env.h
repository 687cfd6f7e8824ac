// Environment variables. Each one Braid reads is an env::Var (name, default, what it does),
// declared by the layer whose code reads it, in that layer's variables.h (a transport's in its
// own folder, listed in its registry entry), so that a read names the variable itself: a name
// cannot be misspelt at a read, and its default is written once. api/variables.h gathers every
// layer's list for `braid-env` and the README's table, which a test checks against it.
#pragma once

#include <cstdint>
#include <span>

namespace braid::env {

struct Var {
  const char* name;
  const char* defaultValue;  // nullptr: unset by default
  const char* doc;
};

// A layer's variables, for api/variables.h to gather.
using List = std::span<const Var* const>;

// The value from the environment, else from NCCL_CONF_FILE, else the default (may be null).
const char* get(const Var& var);
int64_t getInt(const Var& var);  // an unparsable value falls back to the default, with a warning
bool isSet(const Var& var);      // set in the environment itself

}  // namespace braid::env
