// The price of a communicator's first call of each shape: choosing the algorithm (every
// candidate's schedules built for all ranks and simulated together) and building the winner's.
// Later calls of the same shape hit the communicator's schedule cache; a benchmark with few
// iterations per size pays this once per size.
#include <benchmark/benchmark.h>

#include <vector>

#include "algos/algorithm.h"
#include "algos/cost_model.h"
#include "algos/selector.h"
#include "algos/topology.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace braid::algos {
namespace {

// Ranks on one host, priced as shared memory; or 8 hosts in 2 racks, one rank each.
Topology oneHost(int n) {
  return Topology::hostsAndRacks(std::vector<int>(static_cast<size_t>(n), 0), {},
                                 braid::transport::kShmLinkCost, braid::transport::kTcpLinkCost,
                                 {});
}
Topology twoRacks(int n) {
  std::vector<int> host(static_cast<size_t>(n)), rack(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) host[r] = r, rack[r] = r % 2;
  return Topology::hostsAndRacks(host, rack, braid::transport::kShmLinkCost, {7, 8e-3 / 1.9},
                                 {9, 8e-3 / 0.64});
}

void choose(benchmark::State& state, Topology (*topology)(int)) {
  const int n = static_cast<int>(state.range(0));
  const size_t bytes = static_cast<size_t>(state.range(1));
  const Topology topo = topology(n);
  CollArgs args;
  args.coll = Collective::AllReduce;
  args.count = bytes / 4;
  args.typeSize = 4;
  args.nranks = n;
  args.chunkCount = (512 << 10) / 4;
  args.directMaxBytes = 64 << 10;
  args.topology = &topo;
  for (auto _ : state) {
    Choice choice;
    Status s = chooseAlgorithm(args, AlgoFilter{}, {}, &choice);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    Schedule built = choice.algorithm->build(args);
    benchmark::DoNotOptimize(built.steps.data());
  }
}

void sizes(benchmark::internal::Benchmark* b, std::initializer_list<int> ranks) {
  for (int n : ranks)
    for (int64_t bytes : {int64_t{1} << 10, int64_t{1} << 20, int64_t{16} << 20})
      b->Args({n, bytes});
}

BENCHMARK_CAPTURE(choose, one_host, oneHost)
    ->ArgNames({"ranks", "bytes"})
    ->Apply([](benchmark::internal::Benchmark* b) {
      sizes(b, {2, 4, 8});
    })
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(choose, two_racks, twoRacks)
    ->ArgNames({"ranks", "bytes"})
    ->Apply([](benchmark::internal::Benchmark* b) {
      sizes(b, {8, 16});
    })
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace braid::algos

BENCHMARK_MAIN();
