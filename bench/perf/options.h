// nccl-tests' command line, plus -p for how ranks are laid out and -A/-P for Braid's algorithms.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "dtype.h"

namespace braid::perf {

enum class Mode {
  Process,  // one process per rank group: rank and size from RANK/WORLD_SIZE or MPI's env
  Thread,   // one process, -t threads as ranks, whatever the environment says
};

enum class Average { Rank0 = 0, Mean = 1, Min = 2, Max = 3 };

struct Options {
  size_t minBytes = 32u << 20, maxBytes = 32u << 20;
  size_t stepBytes = 1u << 20;
  double stepFactor = 0;  // > 1 selects multiplicative steps over stepBytes
  int iters = 20, warmup = 5, aggIters = 1;
  int check = 1;  // check iterations per row; 0 disables checking
  int blocking = 0;
  int registerBuffers = 0;  // -R: ncclMemAlloc'ed, ncclCommRegister'ed buffers
  int deviceBuffers = 0;    // -G: 1 CUDA device buffers, 2 pinned host ones, on a stream
  int nThreads = 1;
  Average average = Average::Mean;
  Mode mode = Mode::Process;
  std::vector<ncclDataType_t> types{ncclFloat32};
  std::vector<ncclRedOp_t> ops{ncclSum};
  int root = 0;
  bool allRoots = false;
  // -A: one round per name, each on a communicator created with BRAID_ALGO set to it ("auto":
  // unset, Braid chooses). Empty: BRAID_ALGO is left as the environment has it.
  std::vector<std::string> algos;
  bool predict = false;  // -P 1: also price every call with ncclGroupSimulateEnd
  // -Z: one round per value of BRAID_COMPRESS ("none", "int8", "topk:0.01", "auto"); each
  // row is then checked for accuracy against an exact fp64 AllReduce instead of exactness.
  std::vector<std::string> compress;

  std::vector<std::string> algoLabels() const {
    return algos.empty() ? std::vector<std::string>{"auto"} : algos;
  }
  // Rounds: one per -A name or one per -Z value (only one of the two may list several).
  size_t rounds() const { return std::max(algoLabels().size(), compress.size()); }
  std::string algoOf(size_t round) const {
    auto l = algoLabels();
    return l[std::min(round, l.size() - 1)];
  }
  std::string compressOf(size_t round) const {
    return compress.empty() ? "" : compress[std::min(round, compress.size() - 1)];
  }

  std::vector<size_t> sizes() const;
};

// Parses argv; on a bad flag prints why and the usage to stderr and returns false.
bool parseOptions(int argc, char** argv, const char* program, Options* out);

}  // namespace braid::perf
