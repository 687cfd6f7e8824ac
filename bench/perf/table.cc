#include "table.h"

#include <cstdio>
#include <string>

namespace braid::perf {
namespace {

// Keeps the time column 8 wide from nanoseconds to minutes.
std::string formatTime(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 1e4 ? "%.2f" : us < 1e6 ? "%.1f" : "%.0f", us);
  return buf;
}

}  // namespace

void printPreamble(const char* program, const Options& o, const World& w, const RankInfo* ranks, int nranks) {
  int version = 0;
  ncclGetVersion(&version);
  std::printf("# Collective test starting: %s\n", program);
  std::printf("# nccl version %d.%d.%d (ncclGetVersion %d), host memory buffers\n", version / 10000,
              version / 100 % 100, version % 100, version);
  std::printf("# nThread %d nGpus 1 minBytes %zu maxBytes %zu step: ", o.nThreads, o.minBytes, o.maxBytes);
  if (o.stepFactor > 1) std::printf("%g(factor)", o.stepFactor);
  else std::printf("%zu(bytes)", o.stepBytes);
  std::printf(" warmup iters: %d iters: %d agg iters: %d validation: %d graph: 0\n", o.warmup, o.iters,
              o.aggIters, o.check);
  std::printf("#\n# Using devices\n");
  for (int r = 0; r < nranks; ++r)
    std::printf("#  Rank %2d Group %2d Pid %7d on %10s device -1 [host] host memory\n", r, ranks[r].procRank,
                ranks[r].pid, ranks[r].host);
  std::printf("#\n");
  (void)w;
}

void printColumnHeader(const Collective&) {
  std::printf("# %10s  %12s  %8s  %6s  %6s  %36s  %36s\n", "", "", "", "", "", "out-of-place", "in-place");
  std::printf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (int k = 0; k < 2; ++k) std::printf("  %8s  %7s  %7s  %6s", "time", "algbw", "busbw", "#wrong");
  std::printf("\n# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  for (int k = 0; k < 2; ++k) std::printf("  %8s  %7s  %7s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
  std::printf("\n");
  std::fflush(stdout);
}

void printRow(const Row& row) {
  std::printf("%12zu  %12zu  %8s  %6s  %6d", row.bytes, row.count, row.type, row.redop, row.root);
  for (const auto& p : row.place) {
    std::string wrong = p.wrong < 0 ? "N/A" : std::to_string(p.wrong);
    std::printf("  %8s  %7.2f  %7.2f  %6s", formatTime(p.us).c_str(), p.algbw, p.busbw, wrong.c_str());
  }
  std::printf("\n");
  std::fflush(stdout);  // rows appear as they are measured, also through a pipe
}

void printFooter(const char* program, double wrongTotal, double avgBusbw) {
  std::printf("# Out of bounds values : %.0f %s\n", wrongTotal, wrongTotal > 0 ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    : %g \n", avgBusbw);
  std::printf("#\n# Collective test concluded: %s\n", program);
  std::fflush(stdout);
}

}  // namespace braid::perf
