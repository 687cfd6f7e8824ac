#include "base/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "base/env.h"
#include "base/strfmt.h"
#include "base/variables.h"

namespace braid::log {
namespace {

struct Names {
  const char* name;
  uint64_t bits;
};
constexpr Names kSubsysNames[] = {
    {"INIT", kInit},
    {"COLL", kColl},
    {"P2P", kP2P},
    {"SHM", kShm},
    {"NET", kNet},
    {"GRAPH", kGraph},
    {"TUNING", kTuning},
    {"ENV", kEnv},
    {"ALLOC", kAlloc},
    {"CALL", kCall},
    {"PROXY", kProxy},
    {"NVLS", kNvls},
    {"BOOTSTRAP", kBootstrap},
    {"REG", kReg},
    {"PROFILE", kProfile},
    {"RAS", kRas},
    {"ALL", kAll},
};

struct State {
  std::atomic<int> level{-1};  // -1: not initialised yet
  std::atomic<uint64_t> mask{0};
  FILE* file = stderr;
  std::mutex mu;
  char host[64] = {};
};
State& state() {
  static State s;
  return s;
}

std::string expand(const char* pattern, const char* host) {
  std::string path;
  for (const char* p = pattern; *p; ++p) {
    if (p[0] == '%' && p[1]) {
      ++p;
      if (*p == 'h')
        path += host;
      else if (*p == 'p')
        path += std::to_string(getpid());
      else
        path += *p;
    } else {
      path += *p;
    }
  }
  return path;
}

// NCCL_DEBUG_FILE: %h host, %p pid, %% percent.
FILE* openFile(const char* pattern, const char* host) {
  if (!pattern || !*pattern) return stderr;
  FILE* f = std::fopen(expand(pattern, host).c_str(), "w");
  if (!f) return stderr;
  setvbuf(f, nullptr, _IOLBF, 0);
  return f;
}

void init() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.level.load(std::memory_order_relaxed) >= 0) return;
  gethostname(s.host, sizeof(s.host) - 1);
  if (char* dot = std::strchr(s.host, '.')) *dot = '\0';
  Level level = parseLevel(env::get(env::kNcclDebug));
  s.mask.store(parseMask(env::get(env::kNcclDebugSubsys)), std::memory_order_relaxed);
  if (s.file != stderr) std::fclose(s.file);
  s.file = level > Level::None ? openFile(env::get(env::kNcclDebugFile), s.host) : stderr;
  s.level.store(static_cast<int>(level), std::memory_order_release);
}

}  // namespace

std::string expandPath(const char* pattern) {
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  if (char* dot = std::strchr(host, '.')) *dot = '\0';
  return expand(pattern, host);
}

Level parseLevel(const char* v) {
  if (!v || !*v) return Level::None;
  if (!strcasecmp(v, "VERSION")) return Level::Version;
  if (!strcasecmp(v, "WARN")) return Level::Warn;
  if (!strcasecmp(v, "INFO")) return Level::Info;
  if (!strcasecmp(v, "ABORT")) return Level::Abort;
  if (!strcasecmp(v, "TRACE")) return Level::Trace;
  return Level::None;
}

// NCCL_DEBUG_SUBSYS: comma list; a leading ^ inverts the whole list (NCCL's rule).
uint64_t parseMask(const char* v) {
  if (!v || !*v) return kInit | kBootstrap | kEnv;
  bool invert = v[0] == '^';
  if (invert) ++v;
  uint64_t mask = 0;
  std::string list(v);
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string tok =
        list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    for (const auto& n : kSubsysNames)
      if (!strcasecmp(tok.c_str(), n.name)) mask |= n.bits;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return invert ? ~mask : mask;
}

bool enabled(Level level, uint64_t subsys) {
  State& s = state();
  int current = s.level.load(std::memory_order_acquire);
  if (current < 0) {
    init();
    current = s.level.load(std::memory_order_acquire);
  }
  if (current < static_cast<int>(level)) return false;
  return level <= Level::Warn || (s.mask.load(std::memory_order_relaxed) & subsys) != 0;
}

void write(Level level, uint64_t subsys, const char* file, int line, const char* fmt, ...) {
  (void)subsys;
  State& s = state();
  va_list ap;
  va_start(ap, fmt);
  std::string text = vstrfmt(fmt, ap);
  va_end(ap);
  long tid = syscall(SYS_gettid);
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  std::string out;
  if (level == Level::Warn)
    out = strfmt("%s:%d:%ld [0] %s:%d NCCL WARN %s\n", s.host, getpid(), tid, base, line,
                 text.c_str());
  else
    out = strfmt("%s:%d:%ld [0] NCCL %s %s\n", s.host, getpid(), tid,
                 level == Level::Trace ? "TRACE" : "INFO", text.c_str());
  std::lock_guard<std::mutex> lock(s.mu);
  std::fputs(out.c_str(), s.file);
  std::fflush(s.file);
}

void reset() { state().level.store(-1, std::memory_order_release); }

}  // namespace braid::log
