// One table of every environment variable Braid reads: name, default, and what it does.
// Reading a name that is not in the table is a programming error (caught by the unit tests),
// so the README's table, generated from this one by `braid-env --markdown`, cannot drift.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace braid::env {

struct Var {
  const char* name;
  const char* defaultValue;  // nullptr: unset by default
  const char* doc;
};

std::span<const Var> table();

// Value from the environment, else from NCCL_CONF_FILE, else the table's default (may be null).
const char* get(const char* name);
int64_t getInt(const char* name);  // unparsable values fall back to the default, with a warning
bool isSet(const char* name);

}  // namespace braid::env
