// Status: how every layer below the C boundary reports failure. The API guard turns it into an
// ncclResult_t plus the text ncclGetLastError returns.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "base/strfmt.h"
#include "nccl.h"

namespace braid {

// Success is the code alone: the message lives on the heap, and only failures have one. Every
// layer of every call returns a Status, so an Ok() that built and destroyed an empty string each
// time was measurable on an 8-byte AllReduce.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ncclResult_t code, std::string message)
      : code_(code),
        message_(message.empty() ? nullptr : std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& o)
      : code_(o.code_),
        message_(o.message_ ? std::make_unique<std::string>(*o.message_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) *this = Status(o);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Ok() { return {}; }
  bool ok() const { return code_ == ncclSuccess; }
  ncclResult_t code() const { return code_; }
  const std::string& message() const { return message_ ? *message_ : empty(); }

  // Prefixes context ("ncclAllReduce: ") so messages read from the outside in.
  Status withContext(const std::string& context) const {
    if (ok()) return *this;
    return {code_, context + ": " + message()};
  }

 private:
  static const std::string& empty() {
    static const std::string none;
    return none;
  }

  ncclResult_t code_ = ncclSuccess;
  std::unique_ptr<std::string> message_;
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
#define BRAID_TRY(expr)                                                                            \
  do {                                                                                             \
    ::braid::Status BRAID_CONCAT(braid_status_, __LINE__) = (expr);                                \
    if (!BRAID_CONCAT(braid_status_, __LINE__).ok()) return BRAID_CONCAT(braid_status_, __LINE__); \
  } while (0)
