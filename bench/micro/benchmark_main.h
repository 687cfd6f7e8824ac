// main() of the Google Benchmark programs here that register their benchmarks at run time
// (their sizes and ISAs depend on the machine): registers them, then runs what the flags select.
#pragma once

#include <benchmark/benchmark.h>

namespace braid::bench {

inline int benchmarkMain(int argc, char** argv, void (*registerAll)()) {
  benchmark::Initialize(&argc, argv);
  registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace braid::bench
