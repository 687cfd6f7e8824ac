// The output users (and scripts written for nccl-tests) read: '#' preamble lines, the two-level
// column header, one row per size, and the footer with the wrong-value count and mean busbw.
#pragma once

#include <cstddef>
#include <cstdint>

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

void printPreamble(const char* program, const Options&, const World&, const RankInfo* ranks, int nranks);
void printColumnHeader(const Collective&);
void printRow(const Row&);
void printFooter(const char* program, double wrongTotal, double avgBusbw);

}  // namespace braid::perf
