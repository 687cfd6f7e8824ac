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

// "64 KiB" for whole binary units, else bytes: summary lines stay short.
std::string formatBytes(size_t b) {
  static const char* const kUnits[] = {"GiB", "MiB", "KiB"};
  for (int i = 0; i < 3; ++i) {
    size_t unit = size_t{1} << (30 - 10 * i);
    if (b >= unit && b % unit == 0) return std::to_string(b / unit) + " " + kUnits[i];
  }
  return std::to_string(b) + " B";
}

constexpr int kPredictGroup = 8 + 2 + 9 + 2 + 9 + 2 + 6;  // used, predicted, measured, ratio

}  // namespace

void printPreamble(const char* program, const Options& o, const World& w, const RankInfo* ranks,
                   int nranks) {
  int version = 0;
  ncclGetVersion(&version);
  std::printf("# Collective test starting: %s\n", program);
  static const char* const kBuffers[] = {"host memory buffers", "CUDA device buffers on a stream",
                                         "pinned host buffers on a CUDA stream"};
  std::printf("# nccl version %d.%d.%d (ncclGetVersion %d), %s\n", version / 10000,
              version / 100 % 100, version % 100, version, kBuffers[o.deviceBuffers]);
  std::printf("# nThread %d nGpus 1 minBytes %zu maxBytes %zu step: ", o.nThreads, o.minBytes,
              o.maxBytes);
  if (o.stepFactor > 1)
    std::printf("%g(factor)", o.stepFactor);
  else
    std::printf("%zu(bytes)", o.stepBytes);
  std::printf(" warmup iters: %d iters: %d agg iters: %d validation: %d graph: 0\n", o.warmup,
              o.iters, o.aggIters, o.check);
  std::printf("#\n# Using devices\n");
  // Every rank's buffers are of one kind; with a stream, every rank is on device 0.
  static const char* const kKinds[] = {"[host] host memory", "[cuda] device memory",
                                       "[cuda] pinned host memory"};
  for (int r = 0; r < nranks; ++r)
    std::printf("#  Rank %2d Group %2d Pid %7d on %10s device %d %s\n", r, ranks[r].procRank,
                ranks[r].pid, ranks[r].host, o.deviceBuffers ? 0 : -1, kKinds[o.deviceBuffers]);
  std::printf("#\n");
  (void)w;
}

void printColumnHeader(const Collective&) {
  std::printf("# %10s  %12s  %8s  %6s  %6s  %36s  %36s\n", "", "", "", "", "", "out-of-place",
              "in-place");
  std::printf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (int k = 0; k < 2; ++k)
    std::printf("  %8s  %7s  %7s  %6s", "time", "algbw", "busbw", "#wrong");
  std::printf("\n# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  for (int k = 0; k < 2; ++k) std::printf("  %8s  %7s  %7s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
  std::printf("\n");
  std::fflush(stdout);
}

void printRow(const Row& row) {
  std::printf("%12zu  %12zu  %8s  %6s  %6d", row.bytes, row.count, row.type, row.redop, row.root);
  for (const auto& p : row.place) {
    std::string wrong = p.wrong < 0 ? "N/A" : std::to_string(p.wrong);
    std::printf("  %8s  %7.2f  %7.2f  %6s", formatTime(p.us).c_str(), p.algbw, p.busbw,
                wrong.c_str());
  }
  std::printf("\n");
  std::fflush(stdout);  // rows appear as they are measured, also through a pipe
}

void printRoundTitle(const std::string& label) {
  if (label == "auto")
    std::printf("#\n# Algorithm auto (BRAID_ALGO unset: the library chooses)\n");
  else
    std::printf("#\n# Algorithm %s (BRAID_ALGO=%s)\n", label.c_str(), label.c_str());
  std::fflush(stdout);
}

void printUsedSummary(const std::string& label, const std::vector<std::string>& used,
                      const std::vector<size_t>& bytes) {
  std::string text;
  for (size_t i = 0; i < used.size();) {
    size_t j = i;
    while (j + 1 < used.size() && used[j + 1] == used[i]) ++j;
    if (!text.empty()) text += ", ";
    text += used[i] + " " + formatBytes(bytes[i]);
    if (j > i) text += ".." + formatBytes(bytes[j]);
    i = j + 1;
  }
  std::printf("# Algorithm %s used: %s\n", label.c_str(),
              text.empty() ? "(no rows)" : text.c_str());
  std::fflush(stdout);
}

void printPredictHeader(const std::vector<std::string>& labels) {
  std::printf(
      "#\n# Predicted time (ncclGroupSimulateEnd on a group holding the one call) against measured "
      "time, out-of-place; ratio = measured / predicted; used = the algorithm that ran\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s", "", "", "", "", "");
  for (const auto& l : labels) std::printf("  %*s", kPredictGroup, l.c_str());
  std::printf("\n# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (size_t k = 0; k < labels.size(); ++k)
    std::printf("  %8s  %9s  %9s  %6s", "used", "predicted", "measured", "ratio");
  std::printf("\n# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  for (size_t k = 0; k < labels.size(); ++k)
    std::printf("  %8s  %9s  %9s  %6s", "", "(us)", "(us)", "");
  std::printf("\n");
  std::fflush(stdout);
}

void printPredictRow(const Row& key, const std::vector<Prediction>& perAlgo) {
  std::printf("%12zu  %12zu  %8s  %6s  %6d", key.bytes, key.count, key.type, key.redop, key.root);
  for (const auto& p : perAlgo) {
    bool known = p.predictedUs >= 0;
    std::string predicted = known ? formatTime(p.predictedUs) : "N/A";
    char ratio[32] = "N/A";
    if (known && p.predictedUs > 0)
      std::snprintf(ratio, sizeof ratio, "%.2f", p.measuredUs / p.predictedUs);
    std::printf("  %8s  %9s  %9s  %6s", p.used.c_str(), predicted.c_str(),
                formatTime(p.measuredUs).c_str(), ratio);
  }
  std::printf("\n");
  std::fflush(stdout);
}

void printFooter(const char* program, double wrongTotal, double avgBusbw) {
  std::printf("# Out of bounds values : %.0f %s\n", wrongTotal, wrongTotal > 0 ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    : %g \n", avgBusbw);
  std::printf("#\n# Collective test concluded: %s\n", program);
  std::fflush(stdout);
}

}  // namespace braid::perf
