// Environment variables. Each one Braid reads is an env::Var (name, default, what it does),
// declared by the layer whose code reads it, in that layer's variables.h (a transport's in its
// own folder, listed in its registry entry), so that a read names the variable itself: a name
// cannot be misspelt at a read, and its default is written once. api/variables.h gathers every
// layer's list for `braid-env` and the README's table, which a test checks against it.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

namespace braid::env {

struct Var {
  const char* name;
  const char* defaultValue;  // nullptr: unset by default
  const char* doc;
  bool secret = false;  // a key: the parameter API (ncclParamGet*) never hands out its value
};

// A layer's variables, for api/variables.h to gather.
using List = std::span<const Var* const>;

// The value from the environment, else from NCCL_CONF_FILE, else the default (may be null).
const char* get(const Var& var);
int64_t getInt(const Var& var);  // an unparsable value falls back to the default, with a warning
bool isSet(const Var& var);      // set in the environment itself

// The parsers behind get and getInt, pure so the fuzz target (tests/fuzz/fuzz_env.cc) runs them.
// An integer as strtoll reads it (base 0: 12, 0x1f, 017), the whole text, in int64_t's range.
bool parseInt(const char* text, int64_t* out);
// NCCL_CONF_FILE's text: one NAME=value a line; empty lines, lines starting '#' and lines
// without '=' are skipped; a later line for a name replaces an earlier one.
void parseConf(std::string_view text, std::map<std::string, std::string>* out);

}  // namespace braid::env
