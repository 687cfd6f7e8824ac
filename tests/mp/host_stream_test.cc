// Host streams between processes (shared memory, TCP): the collective sweep queued on a host
// stream, and a priority class's twin connections made and used beside a large call of the
// normal class (tests/inproc/host_stream_test.cc has the same on threads, and the rest).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "braid/braid.h"
#include "common/coll_sweep.h"
#include "common/ranks.h"

namespace braid {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

cudaStream_t asCuda(braidHostStream_t s) { return reinterpret_cast<cudaStream_t>(s); }

int report(int rank, const std::string& e) {
  if (!e.empty()) std::fprintf(stderr, "rank %d: %s\n", rank, e.c_str());
  return e.empty() ? 0 : 1;
}

// All cases queued at once on one stream, then checked.
std::string sweepQueued(int rank, int nranks, ncclComm_t comm) {
  braidHostStream_t s = nullptr;
  if (braidHostStreamCreate(&s, 0) != ncclSuccess) return "create";
  testing::callStream = asCuda(s);
  const auto cases = testing::sweepCases(nranks, {false, true, true});
  std::vector<std::unique_ptr<testing::CaseRun>> runs;
  for (const auto& c : cases) {
    runs.push_back(std::make_unique<testing::CaseRun>(c, rank, nranks));
    if (runs.back()->call(comm) != ncclSuccess)
      return testing::describe(c) + ": " + ncclGetLastError(comm);
  }
  if (braidHostStreamSynchronize(s) != ncclSuccess)
    return std::string("synchronize: ") + ncclGetLastError(nullptr);
  for (size_t i = 0; i < cases.size(); ++i)
    if (std::string e = runs[i]->check(); !e.empty()) return testing::describe(cases[i]) + ": " + e;
  braidHostStreamDestroy(s);
  return "";
}

// Urgent small calls while a large normal one is queued: every result right. The urgent ones
// are synchronized before the large one is, so their twin connections work alone.
std::string urgentBesideLarge(int rank, int nranks, ncclComm_t comm) {
  braidHostStream_t normal = nullptr, urgent = nullptr;
  if (braidHostStreamCreate(&normal, 0) != ncclSuccess ||
      braidHostStreamCreate(&urgent, -2) != ncclSuccess)
    return "create";
  std::vector<float> large(1 << 22, 1.0f);
  std::vector<std::vector<int>> small(8, std::vector<int>(16384, rank));
  if (ncclAllReduce(large.data(), large.data(), large.size(), ncclFloat32, ncclSum, comm,
                    asCuda(normal)) != ncclSuccess)
    return std::string("large: ") + ncclGetLastError(comm);
  for (auto& b : small)
    if (ncclAllReduce(b.data(), b.data(), b.size(), ncclInt32, ncclSum, comm, asCuda(urgent)) !=
        ncclSuccess)
      return std::string("small: ") + ncclGetLastError(comm);
  if (braidHostStreamSynchronize(urgent) != ncclSuccess ||
      braidHostStreamSynchronize(normal) != ncclSuccess)
    return std::string("synchronize: ") + ncclGetLastError(nullptr);
  const int want = nranks * (nranks - 1) / 2;
  for (auto& b : small)
    if (b[0] != want || b.back() != want) return "small: wrong sum";
  if (large[0] != static_cast<float>(nranks) || large.back() != static_cast<float>(nranks))
    return "large: wrong sum";
  braidHostStreamDestroy(normal);
  braidHostStreamDestroy(urgent);
  return "";
}

void expectAllPass(int nranks, std::string (*fn)(int, int, ncclComm_t), const Env& env) {
  auto results = testing::runProcesses(
      nranks, [&](int rank, ncclComm_t comm) { return report(rank, fn(rank, nranks, comm)); }, env);
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

const Env kTcp = {{"NCCL_SHM_DISABLE", "1"}, {"BRAID_TIMEOUT_MS", "30000"}};
const Env kShm = {{"BRAID_TIMEOUT_MS", "30000"}};

TEST(HostStream, SweepQueuedOverSharedMemory) { expectAllPass(3, sweepQueued, kShm); }
TEST(HostStream, SweepQueuedOverTcp) { expectAllPass(3, sweepQueued, kTcp); }
TEST(HostStream, UrgentBesideLargeOverSharedMemory) { expectAllPass(4, urgentBesideLarge, kShm); }
TEST(HostStream, UrgentBesideLargeOverTcp) { expectAllPass(2, urgentBesideLarge, kTcp); }

}  // namespace
}  // namespace braid
