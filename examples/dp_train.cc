// Data-parallel training with compressed gradients: logistic regression on synthetic data, one
// thread per rank (4 ranks), each with its own shard, gradients averaged by ncclAllReduce on
// host memory. It trains the same model four times: exact, INT8 blocks with error feedback,
// top-k 1% with error feedback and top-k 1% without, and prints the final loss of each.
//
//   dp_train [--steps N] [--check]
//
// --check turns the run into a test (ctest runs it so): exit 1 unless the final loss with
// int8 + feedback is within 2% of the exact run's and top-k 1% + feedback within 5%. The run
// without feedback is reported, not judged.
//
// Uses Braid's extension header (include/braid/braid.h) for per-call compression, so it links
// libbraid.so.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "nccl.h"

namespace {

constexpr int kRanks = 4;
constexpr int kFeatures = 4096;
constexpr int kSamplesPerRank = 1024;
constexpr int kBatch = 128;
constexpr float kLearningRate = 0.5f;
constexpr float kL2 = 1e-4f;

#define CHECK_NCCL(call, comm)                                                   \
  do {                                                                           \
    ncclResult_t r_ = (call);                                                    \
    if (r_ != ncclSuccess) {                                                     \
      std::fprintf(stderr, "%s failed: %s: %s\n", #call, ncclGetErrorString(r_), \
                   ncclGetLastError(comm));                                      \
      std::exit(2);                                                              \
    }                                                                            \
  } while (0)

struct Shard {
  std::vector<float> x;  // kSamplesPerRank x kFeatures, row-major
  std::vector<float> y;  // 0 or 1
};

// A sparse-ish true model, and each rank's samples labelled by it (with label noise).
std::vector<Shard> makeData() {
  std::mt19937 gen(2026);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> truth(kFeatures, 0.0f);
  for (int f = 0; f < kFeatures; ++f)
    if (f % 8 == 0) truth[f] = normal(gen);
  std::vector<Shard> shards(kRanks);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (Shard& s : shards) {
    s.x.resize(static_cast<size_t>(kSamplesPerRank) * kFeatures);
    s.y.resize(kSamplesPerRank);
    for (int i = 0; i < kSamplesPerRank; ++i) {
      double z = 0;
      for (int f = 0; f < kFeatures; ++f) {
        float v = normal(gen) / std::sqrt(static_cast<float>(kFeatures) / 8);
        s.x[static_cast<size_t>(i) * kFeatures + f] = v;
        z += v * truth[f];
      }
      const double p = 1.0 / (1.0 + std::exp(-4.0 * z));
      s.y[i] = unit(gen) < p ? 1.0f : 0.0f;
    }
  }
  return shards;
}

// Mean logistic loss over samples [from, to) and, if grad is not null, its gradient (+ L2).
double lossAndGradient(const Shard& s, const std::vector<float>& w, int from, int to, float* grad) {
  double loss = 0;
  if (grad) std::memset(grad, 0, sizeof(float) * kFeatures);
  for (int i = from; i < to; ++i) {
    const float* xi = &s.x[static_cast<size_t>(i) * kFeatures];
    double z = 0;
    for (int f = 0; f < kFeatures; ++f) z += xi[f] * w[f];
    const double p = 1.0 / (1.0 + std::exp(-z));
    loss += -(s.y[i] * std::log(p + 1e-12) + (1 - s.y[i]) * std::log(1 - p + 1e-12));
    if (grad) {
      const float d = static_cast<float>(p - s.y[i]) / static_cast<float>(to - from);
      for (int f = 0; f < kFeatures; ++f) grad[f] += d * xi[f];
    }
  }
  if (grad)
    for (int f = 0; f < kFeatures; ++f) grad[f] += kL2 * w[f];
  return loss / (to - from);
}

struct Mode {
  const char* name;
  const char* policy;  // nullptr: exact ncclAvg
  int feedback;
};

// Trains on every rank; returns the final mean loss over all ranks' data.
double train(const std::vector<Shard>& shards, const Mode& mode, int steps) {
  std::vector<ncclComm_t> comms(kRanks);
  CHECK_NCCL(ncclCommInitAll(comms.data(), kRanks, nullptr), nullptr);
  std::vector<double> finalLoss(kRanks, 0.0);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      ncclComm_t comm = comms[r];
      ncclRedOp_t op = ncclAvg;
      if (mode.policy) {
        braidCompressPolicy_t p;
        CHECK_NCCL(braidCompressPolicyParse(mode.policy, &p), comm);
        p.errorFeedback = mode.feedback;
        p.minBytes = 0;  // the gradient is 16 KiB: compress it anyway
        CHECK_NCCL(braidRedOpCreateCompressed(comm, ncclAvg, &p, &op), comm);
      }
      std::vector<float> w(kFeatures, 0.0f), grad(kFeatures);
      for (int step = 0; step < steps; ++step) {
        const int from = (step * kBatch) % kSamplesPerRank;
        lossAndGradient(shards[r], w, from, from + kBatch, grad.data());
        CHECK_NCCL(
            ncclAllReduce(grad.data(), grad.data(), kFeatures, ncclFloat32, op, comm, nullptr),
            comm);
        for (int f = 0; f < kFeatures; ++f) w[f] -= kLearningRate * grad[f];
      }
      double loss = lossAndGradient(shards[r], w, 0, kSamplesPerRank, nullptr);
      CHECK_NCCL(ncclAllReduce(&loss, &loss, 1, ncclFloat64, ncclAvg, comm, nullptr), comm);
      finalLoss[r] = loss;
      if (mode.policy) CHECK_NCCL(ncclRedOpDestroy(op, comm), comm);
    });
  }
  for (auto& t : threads) t.join();
  for (ncclComm_t c : comms) CHECK_NCCL(ncclCommDestroy(c), c);
  return finalLoss[0];
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 400;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check"))
      check = true;
    else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--steps N] [--check]\n", argv[0]);
      return 2;
    }
  }
  if (steps <= 0) {
    std::fprintf(stderr, "%s: --steps must be positive\n", argv[0]);
    return 2;
  }
  const std::vector<Shard> shards = makeData();
  const Mode modes[] = {{"exact", nullptr, 1},
                        {"int8 + feedback", "int8", 1},
                        {"topk 1% + feedback", "topk:0.01", 1},
                        {"topk 1%, no feedback", "topk:0.01", 0}};
  std::printf(
      "# logistic regression, %d ranks x %d samples, %d features, batch %d per rank, %d steps\n",
      kRanks, kSamplesPerRank, kFeatures, kBatch, steps);
  std::printf("# %-22s %12s %12s\n", "gradients", "final loss", "vs exact");
  double loss[4];
  for (int m = 0; m < 4; ++m) {
    loss[m] = train(shards, modes[m], steps);
    std::printf("  %-22s %12.6f %+11.2f%%\n", modes[m].name, loss[m],
                100.0 * (loss[m] / loss[0] - 1.0));
    std::fflush(stdout);
  }
  if (!check) return 0;
  bool ok = true;
  const double limits[] = {0, 0.02, 0.05};
  for (int m = 1; m <= 2; ++m) {
    const double rel = std::fabs(loss[m] / loss[0] - 1.0);
    if (!(rel <= limits[m])) {
      std::printf("FAIL: %s ends %.2f%% from exact (limit %.0f%%)\n", modes[m].name, 100 * rel,
                  100 * limits[m]);
      ok = false;
    }
  }
  std::printf("%s\n", ok ? "PASS: int8 + feedback within 2% of exact, topk 1% + feedback within 5%"
                         : "FAIL");
  return ok ? 0 : 1;
}
