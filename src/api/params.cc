// NCCL 2.32's parameter API, served from Braid's one table of environment variables
// (api/variables.h: the list `braid-env` prints). A key is a variable's name, NCCL_* or BRAID_*;
// its value is what Braid reads: the environment, else NCCL_CONF_FILE, else the default. A
// handle is the address of the variable's entry, so a stale or made-up handle is not found.
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "api/guard.h"
#include "api/variables.h"
#include "base/env.h"
#include "base/log.h"

using braid::Status;
using braid::api::guard;

namespace {

const std::vector<const braid::env::Var*>& table() {
  static const std::vector<const braid::env::Var*> all = braid::allVariables();
  return all;
}

Status find(const char* key, const braid::env::Var** out) {
  if (!key) return braid::invalidArgument("key is NULL");
  for (const braid::env::Var* v : table())
    if (std::strcmp(v->name, key) == 0) {
      *out = v;
      return Status::Ok();
    }
  return braid::invalidArgument(
      "key \"%.200s\" is not a parameter Braid reads (ncclParamGetAllParameterKeys and braid-env "
      "list them)",
      key);
}

Status fromHandle(ncclParamHandle_t h, const braid::env::Var** out) {
  for (const braid::env::Var* v : table())
    if (reinterpret_cast<ncclParamHandle_t>(const_cast<braid::env::Var*>(v)) == h) {
      *out = v;
      return Status::Ok();
    }
  return braid::invalidArgument("handle %p did not come from ncclParamBind", static_cast<void*>(h));
}

// A key (BRAID_TLS_PSK) is never read out: its name is listed, its value stays inside.
Status readable(const braid::env::Var& v) {
  if (v.secret)
    return braid::invalidUsage("%s is a secret: the parameter API does not read its value", v.name);
  return Status::Ok();
}

// The value as text; "" when the variable is unset and has no default.
const char* valueOf(const braid::env::Var& v) {
  const char* value = braid::env::get(v);
  return value ? value : "";
}

template <typename T>
ncclResult_t getInteger(ncclParamHandle_t h, T* out, const char* function) {
  braid::api::noteClient232();
  return guard(nullptr, function, [&]() -> Status {
    if (!out) return braid::invalidArgument("out is NULL");
    const braid::env::Var* v = nullptr;
    BRAID_TRY(fromHandle(h, &v));
    BRAID_TRY(readable(*v));
    const char* text = braid::env::get(*v);
    if (!text) return braid::invalidUsage("%s is unset and has no default", v->name);
    int64_t value = 0;
    if (!braid::env::parseInt(text, &value)) {
      // An unsigned 64-bit value past INT64_MAX is still an integer.
      if (std::is_same_v<T, uint64_t> && text[0] != '-') {
        char* end = nullptr;
        errno = 0;
        const unsigned long long u = std::strtoull(text, &end, 0);
        if (errno == 0 && end != text && *end == '\0') {
          *out = static_cast<T>(u);
          return Status::Ok();
        }
      }
      return braid::invalidArgument("%s = \"%.200s\" is not an integer", v->name, text);
    }
    const bool fits =
        std::is_signed_v<T>
            ? value >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                  value <= static_cast<int64_t>(std::numeric_limits<T>::max())
            : value >= 0 && static_cast<uint64_t>(value) <= std::numeric_limits<T>::max();
    if (!fits)
      return braid::invalidArgument("%s = %lld does not fit the type asked for (%s)", v->name,
                                    static_cast<long long>(value), function);
    *out = static_cast<T>(value);
    return Status::Ok();
  });
}

}  // namespace

BRAID_API(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key) {
  braid::api::noteClient232();
  return guard(nullptr, "ncclParamBind", [&]() -> Status {
    if (!out) return braid::invalidArgument("out is NULL");
    *out = nullptr;
    const braid::env::Var* v = nullptr;
    BRAID_TRY(find(key, &v));
    *out = reinterpret_cast<ncclParamHandle_t>(const_cast<braid::env::Var*>(v));
    return Status::Ok();
  });
}

#define BRAID_PARAM_GET(suffix, T)                                             \
  BRAID_API(ncclResult_t, ncclParamGet##suffix, ncclParamHandle_t h, T* out) { \
    return getInteger(h, out, "ncclParamGet" #suffix);                         \
  }
BRAID_PARAM_GET(I8, int8_t)
BRAID_PARAM_GET(I16, int16_t)
BRAID_PARAM_GET(I32, int32_t)
BRAID_PARAM_GET(I64, int64_t)
BRAID_PARAM_GET(U8, uint8_t)
BRAID_PARAM_GET(U16, uint16_t)
BRAID_PARAM_GET(U32, uint32_t)
BRAID_PARAM_GET(U64, uint64_t)

BRAID_API(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out) {
  braid::api::noteClient232();
  return guard(nullptr, "ncclParamGetStr", [&]() -> Status {
    if (!out) return braid::invalidArgument("out is NULL");
    const braid::env::Var* v = nullptr;
    BRAID_TRY(fromHandle(h, &v));
    BRAID_TRY(readable(*v));
    thread_local std::string text;  // valid until this thread's next call, as NCCL documents
    text = valueOf(*v);
    *out = text.c_str();
    return Status::Ok();
  });
}

// The value's characters (no terminating NUL); a buffer too small gets nothing and *len says
// how many bytes it needs.
BRAID_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len) {
  braid::api::noteClient232();
  return guard(nullptr, "ncclParamGet", [&]() -> Status {
    if (!len) return braid::invalidArgument("len is NULL");
    const braid::env::Var* v = nullptr;
    BRAID_TRY(fromHandle(h, &v));
    BRAID_TRY(readable(*v));
    const char* value = valueOf(*v);
    const size_t n = std::strlen(value);
    if (n > INT_MAX) return braid::invalidArgument("%s's value is longer than INT_MAX", v->name);
    *len = static_cast<int>(n);
    if (maxLen < 0) return braid::invalidArgument("maxLen %d is negative", maxLen);
    if (n > static_cast<size_t>(maxLen))
      return braid::invalidArgument("maxLen %d is too small for %s's value (%zu bytes)", maxLen,
                                    v->name, n);
    if (n > 0 && !out) return braid::invalidArgument("out is NULL");
    if (n > 0) std::memcpy(out, value, n);
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclParamGetParameter, const char* key, const char** value, int* valueLen) {
  braid::api::noteClient232();
  return guard(nullptr, "ncclParamGetParameter", [&]() -> Status {
    if (!value) return braid::invalidArgument("value is NULL");
    const braid::env::Var* v = nullptr;
    BRAID_TRY(find(key, &v));
    BRAID_TRY(readable(*v));
    thread_local std::string text;
    text = valueOf(*v);
    *value = text.c_str();
    if (valueLen) *valueLen = static_cast<int>(text.size());
    return Status::Ok();
  });
}

BRAID_API(ncclResult_t, ncclParamGetAllParameterKeys, const char*** keys, int* count) {
  braid::api::noteClient232();
  return guard(nullptr, "ncclParamGetAllParameterKeys", [&]() -> Status {
    if (!keys) return braid::invalidArgument("table is NULL");
    if (!count) return braid::invalidArgument("tableLen is NULL");
    thread_local std::vector<const char*> names;
    names.clear();
    for (const braid::env::Var* v : table()) names.push_back(v->name);
    *keys = names.data();
    *count = static_cast<int>(names.size());
    return Status::Ok();
  });
}

// One INFO line per parameter (NCCL_DEBUG=INFO shows them), "NAME = value (default ...)".
BRAID_API(void, ncclParamDumpAll, void) {
  braid::api::noteClient232();
  for (const braid::env::Var* v : table()) {
    const char* value = !braid::env::get(*v) ? "(unset)"
                        : v->secret          ? "(set, not shown)"
                                             : valueOf(*v);
    BRAID_INFO(kEnv, "%s = %s (default %s)", v->name, value,
               v->defaultValue ? v->defaultValue : "(unset)");
  }
}
