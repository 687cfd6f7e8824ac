#include <array>

#include "algos/algorithm.h"
#include "algos/direct_allreduce.h"
#include "algos/ring_allreduce.h"

namespace braid::algos {

const char* collectiveName(Collective coll) {
  switch (coll) {
    case Collective::AllReduce: return "ncclAllReduce";
    case Collective::Broadcast: return "ncclBroadcast";
    case Collective::Reduce: return "ncclReduce";
    case Collective::AllGather: return "ncclAllGather";
    case Collective::ReduceScatter: return "ncclReduceScatter";
    case Collective::AlltoAll: return "ncclAlltoAll";
    case Collective::Gather: return "ncclGather";
    case Collective::Scatter: return "ncclScatter";
    case Collective::Send: return "ncclSend";
    case Collective::Recv: return "ncclRecv";
  }
  return "?";
}

std::span<const Algorithm* const> algorithms() {
  static const DirectAllReduce direct;
  static const RingAllReduce ring;
  static const std::array<const Algorithm*, 2> all = {&direct, &ring};
  return all;
}

const Algorithm* selectAlgorithm(const CollArgs& args, std::string_view forced) {
  const Algorithm* fallback = nullptr;
  for (const Algorithm* algo : algorithms()) {
    if (!algo->supports(args)) continue;
    if (!forced.empty() && algo->name() == forced) return algo;
    if (!fallback) fallback = algo;
  }
  return fallback;
}

}  // namespace braid::algos

