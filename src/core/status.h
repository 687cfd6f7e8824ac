// Status: how every layer below the C boundary reports failure. The API guard turns it into an
// ncclResult_t plus the text ncclGetLastError returns.
#pragma once

#include <string>
#include <utility>

#include "nccl.h"
#include "core/strfmt.h"

namespace braid {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ncclResult_t code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == ncclSuccess; }
  ncclResult_t code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("ncclAllReduce: ") so messages read from the outside in.
  Status withContext(const std::string& context) const {
    if (ok()) return *this;
    return {code_, context + ": " + message_};
  }

 private:
  ncclResult_t code_ = ncclSuccess;
  std::string message_;
};

template <typename... Args>
Status invalidArgument(const char* fmt, Args&&... args) {
  return {ncclInvalidArgument, strfmt(fmt, std::forward<Args>(args)...)};
}
template <typename... Args>
Status invalidUsage(const char* fmt, Args&&... args) {
  return {ncclInvalidUsage, strfmt(fmt, std::forward<Args>(args)...)};
}
template <typename... Args>
Status systemError(const char* fmt, Args&&... args) {
  return {ncclSystemError, strfmt(fmt, std::forward<Args>(args)...)};
}
template <typename... Args>
Status internalError(const char* fmt, Args&&... args) {
  return {ncclInternalError, strfmt(fmt, std::forward<Args>(args)...)};
}
template <typename... Args>
Status remoteError(const char* fmt, Args&&... args) {
  return {ncclRemoteError, strfmt(fmt, std::forward<Args>(args)...)};
}

}  // namespace braid

#define BRAID_CONCAT_INNER(a, b) a##b
#define BRAID_CONCAT(a, b) BRAID_CONCAT_INNER(a, b)
#define BRAID_TRY(expr)                                                 \
  do {                                                                  \
    ::braid::Status BRAID_CONCAT(braid_status_, __LINE__) = (expr);     \
    if (!BRAID_CONCAT(braid_status_, __LINE__).ok())                    \
      return BRAID_CONCAT(braid_status_, __LINE__);                     \
  } while (0)
