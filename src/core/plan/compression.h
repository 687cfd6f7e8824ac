// Gradient compression as a communicator applies it: the policy (BRAID_COMPRESS, the
// communicator's default, or a compressed reduction op), the decision for one call (eligible?
// worth it?), the codecs, and the error-feedback residuals (one store per process, keyed by
// communicator, buffer, count and type, dropped when the communicator is destroyed).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "braid/braid.h"
#include "compress/codec.h"
#include "compress/error_feedback.h"

struct ncclComm;

namespace braid {

struct Plan;
namespace algos {
struct CollArgs;
}

using CompressPolicy = braidCompressPolicy_t;

// The defaults (codec none) with the environment's block size, feedback and minimum size.
CompressPolicy defaultCompressPolicy();
// "none", "int8", "topk", "topk:<ratio>", "auto" onto *out's other fields; `what` names the
// source in errors ("BRAID_COMPRESS").
Status parseCompressPolicy(std::string_view text, const char* what, CompressPolicy* out);
// Checks every field; names the bad one.
Status checkCompressPolicy(const CompressPolicy& policy, const char* what);
// "int8 (block 64, nearest, feedback)", for logs.
std::string describeCompressPolicy(const CompressPolicy& policy);

// The process's residuals, bounded by BRAID_COMPRESS_STATE_BYTES.
compress::ResidualStore& residualStore();

// One communicator's compression state.
class CommCompression {
 public:
  CommCompression();
  ~CommCompression();  // drops the communicator's residuals

  uint64_t id() const { return id_; }
  CompressPolicy defaultPolicy() const;
  void setDefaultPolicy(const CompressPolicy& policy);
  // Whether the default policy compresses at all: every reducing call asks, so no lock.
  bool defaultCompresses() const { return defaultOn_.load(std::memory_order_relaxed); }

  // The codec for a policy's codec and parameters, made once and kept for the communicator's
  // life (cached schedules point at it).
  Status codecFor(const CompressPolicy& policy, const compress::Codec** out);

  // Counts an exact fallback and logs the communicator's first, once; `why()` makes the reason
  // only then (small calls under a compressing policy fall back on every call).
  template <typename Why>
  void noteFallback(int rank, Why&& why) {
    exactCalls.fetch_add(1, std::memory_order_relaxed);
    if (fallbackLogged_.load(std::memory_order_relaxed) || fallbackLogged_.exchange(true)) return;
    logFallback(rank, why());
  }
  // True the first time `auto` decides a call of this shape (its decision is logged then).
  bool firstAutoDecision(size_t count, size_t typeSize, bool average);

  std::atomic<uint64_t> compressedCalls{0};
  std::atomic<uint64_t> exactCalls{0};
  std::atomic<uint64_t> seed{0};

 private:
  uint64_t id_;
  mutable std::mutex mu_;
  CompressPolicy default_;
  struct CodecEntry {
    int codec;
    double ratio;
    int blockSize;
    int stochastic;
    std::unique_ptr<compress::Codec> instance;
  };
  std::vector<CodecEntry> codecs_;
  std::vector<uint64_t> autoLogged_;
  std::atomic<bool> fallbackLogged_{false};
  std::atomic<bool> defaultOn_{false};
  static void logFallback(int rank, const std::string& why);
};

// Decides how one AllReduce call runs under `policy` (null: the communicator's default). Sets
// args->codec and args->feedback, and the plan's codec, residual, seed and tag, when the call
// runs compressed; leaves them exact otherwise (logging the first such fallback). `op` is the
// user's reduction resolved (Sum or Avg only are compressed).
struct CompressCall {
  const CompressPolicy* policy = nullptr;  // a compressed op's policy, else null
  ncclDataType_t type = ncclFloat32;
  bool sumOrAvg = false;
  const void* sendbuff = nullptr;
};
Status applyCompression(ncclComm* comm, const CompressCall& call, algos::CollArgs* args,
                        Plan* plan);

}  // namespace braid
