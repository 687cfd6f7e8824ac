#include "algo_log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace braid::perf {
namespace {

// Braid's line: "<host>:<pid>:<tid> [-1] NCCL INFO ncclAllReduce count 1024 x 4 B, 4 ranks: ring
// (forced by BRAID_ALGO)". Anything else (another library's TUNING lines) is skipped.
bool parseChoice(const std::string& line, AlgoLog::Key* key, std::string* algo) {
  size_t at = line.find("NCCL INFO ");
  if (at == std::string::npos) return false;
  char function[64] = {}, name[64] = {};
  size_t count = 0, typeSize = 0;
  int ranks = 0;
  if (std::sscanf(line.c_str() + at + 10, "%63s count %zu x %zu B, %d ranks: %63s", function,
                  &count, &typeSize, &ranks, name) != 5)
    return false;
  *key = {function, count, typeSize};
  *algo = name;
  return true;
}

// The one live log, for releaseBeforeExit; taken by exchange so it is released once.
std::atomic<AlgoLog*> live{nullptr};

}  // namespace

AlgoLog::AlgoLog(const Options& o) {
  if ((o.algos.empty() && o.compress.empty() && !o.predict) || std::getenv("NCCL_DEBUG")) return;
  const char* dir = std::getenv("TMPDIR");
  path_ = std::string(dir && *dir ? dir : "/tmp") + "/braid_perf_tuning." +
          std::to_string(getpid()) + ".log";
  // The path holds no '%': NCCL_DEBUG_FILE would expand it.
  if (path_.find('%') != std::string::npos) {
    path_.clear();
    return;
  }
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "TUNING", 1);
  setenv("NCCL_DEBUG_FILE", path_.c_str(), 1);
  live.store(this);
}

AlgoLog::~AlgoLog() {
  AlgoLog* self = this;
  if (live.compare_exchange_strong(self, nullptr)) release();
}

void AlgoLog::releaseBeforeExit() {
  if (AlgoLog* log = live.exchange(nullptr)) log->release();
}

void AlgoLog::release() {
  if (!active()) return;
  // Warnings went to the file instead of stderr: they must not vanish with it.
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line))
    if (line.find(" NCCL WARN ") != std::string::npos) std::fprintf(stderr, "%s\n", line.c_str());
  std::remove(path_.c_str());
}

size_t AlgoLog::mark() const {
  if (!active()) return 0;
  std::ifstream in(path_, std::ios::binary | std::ios::ate);
  return in ? static_cast<size_t>(in.tellg()) : 0;
}

AlgoLog::Choices AlgoLog::choices(size_t from) const {
  Choices out;
  if (!active()) return out;
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(from));
  std::string line, algo;
  Key key;
  while (std::getline(in, line))
    if (parseChoice(line, &key, &algo)) out[key] = algo;
  return out;
}

std::string AlgoLog::lookup(const Choices& c, const char* function, size_t count, size_t typeSize) {
  std::string name = std::strcmp(function, "SendRecv") == 0 ? "Send" : function;
  auto it = c.find(Key{"nccl" + name, count, typeSize});
  return it == c.end() ? "?" : it->second;
}

}  // namespace braid::perf
