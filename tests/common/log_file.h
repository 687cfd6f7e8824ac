// A test's own log: INFO lines of the given subsystems go to a file while a LogFile lives
// (NCCL_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE, re-read through ncclResetDebugInit).
#pragma once

#include <glob.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "nccl.h"

namespace braid::testing {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // ncclResetDebugInit
class LogFile {
 public:
  explicit LogFile(const char* subsystems) {
    char tmpl[] = "/tmp/braid-test-log.XXXXXX";
    const int fd = mkstemp(tmpl);
    close(fd);
    path_ = tmpl;
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", subsystems, 1);
    setenv("NCCL_DEBUG_FILE", path_.c_str(), 1);
    ncclResetDebugInit();
  }
  ~LogFile() {
    unsetenv("NCCL_DEBUG");
    unsetenv("NCCL_DEBUG_FILE");
    ncclResetDebugInit();
    std::remove(path_.c_str());
  }
  std::string read() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::string path_;
};

#pragma GCC diagnostic pop

// What the processes of a test wrote with NCCL_DEBUG_FILE=<prefix>.%p.log, concatenated; the
// files are removed.
inline std::string takeProcessLogs(const std::string& prefix) {
  std::string out;
  glob_t found{};
  if (glob((prefix + ".*.log").c_str(), 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) {
      std::ifstream in(found.gl_pathv[i]);
      std::stringstream s;
      s << in.rdbuf();
      out += s.str();
      std::remove(found.gl_pathv[i]);
    }
  }
  globfree(&found);
  return out;
}

}  // namespace braid::testing
