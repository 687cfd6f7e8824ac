#include <algorithm>
#include <array>

#include "algos/algorithm.h"
#include "algos/chain.h"
#include "algos/compressed_allreduce.h"
#include "algos/direct_allreduce.h"
#include "algos/direct_gather_scatter.h"
#include "algos/hier_allgather.h"
#include "algos/hier_allreduce.h"
#include "algos/hier_broadcast.h"
#include "algos/hier_reduce_scatter.h"
#include "algos/pairwise_alltoall.h"
#include "algos/point_to_point.h"
#include "algos/rack_ring_allreduce.h"
#include "algos/rhd_allreduce.h"
#include "algos/ring_allgather.h"
#include "algos/ring_allreduce.h"
#include "algos/ring_reduce_scatter.h"
#include "algos/selector.h"
#include "algos/tree_allreduce.h"

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

bool needsEveryInput(Collective coll) {
  return coll == Collective::AllReduce || coll == Collective::AllGather ||
         coll == Collective::ReduceScatter || coll == Collective::AlltoAll;
}

size_t pipelineChunk(Collective coll, size_t count, int nranks, size_t typeSize,
                     size_t chunkBytes) {
  const bool blocks = coll == Collective::AllGather || coll == Collective::ReduceScatter ||
                      coll == Collective::AlltoAll || coll == Collective::Gather ||
                      coll == Collective::Scatter;
  // The caller checked count x type size x nranks fits in 64 bits (core/plan's checkExtents).
  const size_t elements = count * (blocks ? static_cast<size_t>(std::max(nranks, 1)) : 1);
  const size_t fewest = elements / kMaxChunksPerCall + (elements % kMaxChunksPerCall != 0);
  return std::max({size_t{1}, chunkBytes / std::max<size_t>(typeSize, 1), fewest});
}

std::span<const Algorithm* const> algorithms() {
  static const DirectAllReduce directAllReduce;
  static const HierDirectAllReduce hierDirectAllReduce;
  static const RingAllReduce ringAllReduce;
  static const ChainBroadcast chainBroadcast;
  static const ChainReduce chainReduce;
  static const RingAllGather ringAllGather;
  static const RingReduceScatter ringReduceScatter;
  static const PairwiseAlltoAll pairwiseAlltoAll;
  static const DirectGather directGather;
  static const DirectScatter directScatter;
  static const PointToPointSend send;
  static const PointToPointRecv recv;
  static const RhdAllReduce rhdAllReduce;
  static const RackRingAllReduce rackRingAllReduce;
  static const HierAllGather hierAllGather;
  static const HierReduceScatter hierReduceScatter;
  static const HierBroadcast hierBroadcast;
  static const TreeAllReduce treeAllReduce;
  static const HierAllReduce hierAllReduce;
  static const HierAllReduce hierPipeAllReduce(4);
  static const TwoShotCompressedAllReduce twoShotCompressed;
  static const SparseCompressedAllReduce sparseCompressed;
  static const HierCompressedAllReduce hierCompressed;
  static const HierSparseCompressedAllReduce hierSparseCompressed;
  // The order plays no part in any choice: communicators choose by cost (selector.h), and
  // selectAlgorithm by the tie preference of selector.cc. The compressed ones serve only calls
  // that carry a codec, and those only them.
  static const std::array all = std::to_array<const Algorithm*>({&directAllReduce,
                                                                 &ringAllReduce,
                                                                 &chainBroadcast,
                                                                 &chainReduce,
                                                                 &ringAllGather,
                                                                 &ringReduceScatter,
                                                                 &pairwiseAlltoAll,
                                                                 &directGather,
                                                                 &directScatter,
                                                                 &send,
                                                                 &recv,
                                                                 &hierPipeAllReduce,
                                                                 &hierAllReduce,
                                                                 &rhdAllReduce,
                                                                 &treeAllReduce,
                                                                 &rackRingAllReduce,
                                                                 &hierDirectAllReduce,
                                                                 &hierAllGather,
                                                                 &hierReduceScatter,
                                                                 &hierBroadcast,
                                                                 &twoShotCompressed,
                                                                 &hierCompressed,
                                                                 &sparseCompressed,
                                                                 &hierSparseCompressed});
  return all;
}

const Algorithm* selectAlgorithm(const CollArgs& args, std::string_view forced) {
  const Algorithm* first = nullptr;
  for (const Algorithm* algo : algorithms()) {
    if (algo->compressed() != (args.codec != nullptr) || !algo->supports(args)) continue;
    if (!forced.empty() && algo->name() == forced) return algo;
    if (!first || preferred(*algo, *first)) first = algo;
  }
  return first;
}

}  // namespace braid::algos
