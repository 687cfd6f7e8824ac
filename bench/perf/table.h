// The output users (and scripts written for nccl-tests) read: '#' preamble lines, the two-level
// column header, one row per size, and the footer with the wrong-value count and mean busbw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"
#include "options.h"
#include "world.h"

namespace braid::perf {

// One rank's entry in the "Using devices" list; gathered from every rank by a byte-wise sum.
struct RankInfo {
  int32_t pid;
  int32_t procRank;
  char host[56];
};

struct Row {
  size_t bytes, count;
  const char* type;
  const char* redop;
  int root;
  struct Place {
    double us = 0, algbw = 0, busbw = 0;
    long long wrong = -1;  // -1: not checked
  } place[2];              // out-of-place, in-place
};

// One row of the prediction table (-P 1): a round's out-of-place time next to the cost model's.
struct Prediction {
  std::string used;         // the algorithm the library logged for the call; "?" when unknown
  double predictedUs = -1;  // ncclGroupSimulateEnd's estimatedTime; < 0: not available
  double measuredUs = 0;
};

void printPreamble(const char* program, const Options&, const World&, const RankInfo* ranks,
                   int nranks);
void printColumnHeader(const Collective&);
void printRow(const Row&);
// "# Algorithm ring (BRAID_ALGO=ring)" ahead of a round's table.
void printRoundTitle(const std::string& label);
// After a round's rows: which algorithm ran, over runs of rows ("direct 8 B..64 KiB, ring 128
// KiB..1 MiB"). `used` and `bytes` hold one entry per row.
void printUsedSummary(const std::string& label, const std::vector<std::string>& used,
                      const std::vector<size_t>& bytes);
// The prediction table: per row the key columns, then per algorithm used, predicted, measured
// and measured / predicted.
void printPredictHeader(const std::vector<std::string>& labels);
void printPredictRow(const Row& key, const std::vector<Prediction>& perAlgo);
void printFooter(const char* program, double wrongTotal, double avgBusbw);

}  // namespace braid::perf
