// NCCL_DEBUG-compatible logging. Levels and subsystem names are NCCL's, so existing
// NCCL_DEBUG / NCCL_DEBUG_SUBSYS / NCCL_DEBUG_FILE settings behave the same with Braid.
#pragma once

#include <cstdint>
#include <string>

namespace braid::log {

enum class Level : int { None = 0, Version = 1, Warn = 2, Info = 3, Abort = 4, Trace = 5 };

enum Subsys : uint64_t {
  kInit = 1ull << 0,
  kColl = 1ull << 1,
  kP2P = 1ull << 2,
  kShm = 1ull << 3,
  kNet = 1ull << 4,
  kGraph = 1ull << 5,
  kTuning = 1ull << 6,
  kEnv = 1ull << 7,
  kAlloc = 1ull << 8,
  kCall = 1ull << 9,
  kProxy = 1ull << 10,
  kNvls = 1ull << 11,
  kBootstrap = 1ull << 12,
  kReg = 1ull << 13,
  kProfile = 1ull << 14,
  kRas = 1ull << 15,
  kAll = ~0ull,
};

// Cheap check used by the macros so that disabled logging costs one load and a compare.
bool enabled(Level level, uint64_t subsys);
// NCCL_DEBUG's value (a level name, any case; anything else: None) and NCCL_DEBUG_SUBSYS's
// (a comma list of subsystem names, ^ first inverts it; unset: INIT,BOOTSTRAP,ENV).
Level parseLevel(const char* value);
// A file name pattern as NCCL_DEBUG_FILE's: %h this host's name (up to its first dot), %p the
// process id, %% a percent sign.
std::string expandPath(const char* pattern);
uint64_t parseMask(const char* value);
[[gnu::format(printf, 5, 6)]] void write(Level level, uint64_t subsys, const char* file, int line,
                                         const char* fmt, ...);
// Re-reads NCCL_DEBUG* (ncclResetDebugInit).
void reset();

}  // namespace braid::log

#define BRAID_WARN(fmt, ...)                                                                 \
  do {                                                                                       \
    if (::braid::log::enabled(::braid::log::Level::Warn, ::braid::log::kAll))                \
      ::braid::log::write(::braid::log::Level::Warn, ::braid::log::kAll, __FILE__, __LINE__, \
                          fmt __VA_OPT__(, ) __VA_ARGS__);                                   \
  } while (0)
#define BRAID_INFO(subsys, fmt, ...)                                                           \
  do {                                                                                         \
    if (::braid::log::enabled(::braid::log::Level::Info, ::braid::log::subsys))                \
      ::braid::log::write(::braid::log::Level::Info, ::braid::log::subsys, __FILE__, __LINE__, \
                          fmt __VA_OPT__(, ) __VA_ARGS__);                                     \
  } while (0)
#define BRAID_TRACE(subsys, fmt, ...)                                                           \
  do {                                                                                          \
    if (::braid::log::enabled(::braid::log::Level::Trace, ::braid::log::subsys))                \
      ::braid::log::write(::braid::log::Level::Trace, ::braid::log::subsys, __FILE__, __LINE__, \
                          fmt __VA_OPT__(, ) __VA_ARGS__);                                      \
  } while (0)
