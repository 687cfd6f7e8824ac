// Which algorithm the library actually used for a call. BRAID_ALGO names an algorithm only
// where it applies (direct AllReduce stops at BRAID_DIRECT_MAX_BYTES; names a communicator does
// not know are ignored), so a round's label says what was asked, not what ran. Braid logs its
// choice per call shape under NCCL_DEBUG_SUBSYS=TUNING; with nothing but nccl.h and the
// environment to go on, that log is how the benchmark finds out.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <tuple>

#include "options.h"

namespace braid::perf {

class AlgoLog {
 public:
  // Key of one call shape: the NCCL function ("ncclAllReduce"), count argument, type size.
  using Key = std::tuple<std::string, size_t, size_t>;
  using Choices = std::map<Key, std::string>;

  // Call before any NCCL call of the process: the library reads NCCL_DEBUG once. Captures only
  // where algorithms are the point (-A or -P given) and the user has not set NCCL_DEBUG: their
  // own logging wins, and the used column then says "?".
  explicit AlgoLog(const Options&);
  ~AlgoLog();  // relays the log's warnings to stderr and removes the file
  AlgoLog(const AlgoLog&) = delete;
  AlgoLog& operator=(const AlgoLog&) = delete;

  bool active() const { return !path_.empty(); }
  // For a process about to _Exit (a failed NCCL call): relays the live log's warnings, which
  // say why, and removes its file. Safe from any thread; the first caller does the work.
  static void releaseBeforeExit();
  // Where the log ends now; choices() reads what was logged after it.
  size_t mark() const;
  Choices choices(size_t from) const;
  // The algorithm `choices` holds for a call (`function` as the harness names the collective:
  // "AllReduce", or "SendRecv" for the Send half); "?" when unknown.
  static std::string lookup(const Choices&, const char* function, size_t count, size_t typeSize);

 private:
  void release();

  std::string path_;
};

}  // namespace braid::perf
