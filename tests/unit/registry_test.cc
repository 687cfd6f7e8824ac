// Every registered algorithm (algos::algorithms()) on every collective it supports, run in
// memory for every rank (tests/common/schedule_sim.h) and checked element for element against
// what NCCL defines (tests/common/collective_reference.h), every byte of every rank's buffers:
// 1 to 17 ranks and 32, 64; counts 0, 1, p - 1, odd, many chunks; chunks of one element up;
// every root (a few at 32 and 64); in and out of place, and ranks mixing the two; sends that
// complete at once or only with their receive; on flat topologies and on hosts and uneven racks,
// where the topology-aware builders differ. Compressed algorithms run only with a codec and must
// equal their scheme computed directly, bit for bit (tests/common/compressed_reference.h).
// So an algorithm is tested the moment it is registered: one that no case here exercises fails
// Registry.EveryAlgorithmIsExercised.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>

#include "algos/algorithm.h"
#include "algos/pattern.h"
#include "common/collective_reference.h"
#include "common/compressed_reference.h"
#include "common/schedule_sim.h"

namespace braid {
namespace {

using algos::Collective;
using algos::Topology;
using testing::SendMode;

// Flat: no topology (every rank its own host). Hosts: hosts of 3 ranks. Racks: hosts of 1 to 4
// ranks in racks of 1 to 3 hosts. Rank numbers are scattered over the slots (slot i holds rank
// 7i mod n where 7 is coprime to n), so no level lines up with rank order.
enum class Shape { Flat, Hosts, Racks };

const char* shapeName(Shape s) {
  return s == Shape::Flat ? "Flat" : s == Shape::Hosts ? "Hosts" : "Racks";
}

const Topology* topologyFor(Shape shape, int n) {
  if (shape == Shape::Flat) return nullptr;
  static std::map<std::pair<Shape, int>, std::unique_ptr<Topology>> cache;
  std::unique_ptr<Topology>& slot = cache[{shape, n}];
  if (slot) return slot.get();
  constexpr int kHostSizes[] = {2, 1, 3, 4}, kRackSizes[] = {3, 1, 2};
  const bool scatter = std::gcd(7, n) == 1;
  std::vector<int> hostOf(static_cast<size_t>(n)), rackOf;
  int host = 0, filled = 0;
  for (int i = 0; i < n; ++i) {
    hostOf[static_cast<size_t>(scatter ? i * 7 % n : i)] = host;
    if (++filled == (shape == Shape::Hosts ? 3 : kHostSizes[host % 4])) ++host, filled = 0;
  }
  const int hosts = host + (filled > 0);
  if (shape == Shape::Racks) {
    int rack = 0;
    filled = 0;
    for (int h = 0; h < hosts; ++h) {
      rackOf.push_back(rack);
      if (++filled == kRackSizes[rack % 3]) ++rack, filled = 0;
    }
  }
  slot = std::make_unique<Topology>(
      Topology::hostsAndRacks(hostOf, rackOf, {0.5, 1e-4}, {2, 4e-4}, {5, 4e-3}));
  return slot.get();
}

// One call of the sweep: every rank's arguments, less the algorithm.
struct Point {
  Collective coll;
  Shape shape;
  int n;
  size_t count;
  size_t chunk;
  int root = 0;
  bool inPlace = false;
  bool mixed = false;  // odd ranks in place, even ranks not: each rank decides for itself
  bool average = false;
  SendMode mode = SendMode::Rendezvous;
  int shift = 0;           // Send/Recv: rank r sends to r + shift and receives from r - shift
  bool recvFirst = false;  // Send/Recv: the receive's schedule joined first
};

std::string describe(std::string_view algo, const Point& p) {
  std::ostringstream os;
  os << algo << " " << algos::collectiveName(p.coll) << " n=" << p.n << " count=" << p.count
     << " chunk=" << p.chunk << " root=" << p.root
     << (p.mixed     ? " mixed"
         : p.inPlace ? " in-place"
                     : " out-of-place")
     << (p.average ? " avg" : "") << (p.mode == SendMode::Buffered ? " buffered" : " rendezvous")
     << " " << shapeName(p.shape);
  if (p.coll == Collective::Send) os << " shift=" << p.shift << (p.recvFirst ? " recv first" : "");
  if (const Topology* t = topologyFor(p.shape, p.n)) os << "\n" << t->describe();
  return os.str();
}

algos::CollArgs argsFor(const Point& p, int rank, Collective coll, int root) {
  algos::CollArgs a;
  a.coll = coll;
  a.count = p.count;
  a.average = p.average;
  a.root = root;
  a.inPlace = p.mixed ? rank % 2 == 1 : p.inPlace;
  a.rank = rank;
  a.nranks = p.n;
  a.chunkCount = p.chunk;
  a.typeSize = 8;
  a.directMaxBytes =
      SIZE_MAX;  // direct and hierdirect at every size: the builders, not the threshold
  a.topology = topologyFor(p.shape, p.n);
  return a;
}

bool reduces(Collective c) {
  return c == Collective::AllReduce || c == Collective::Reduce || c == Collective::ReduceScatter;
}

// Calls visit(point) for every point of the sweep of `coll` on `shape` (Send stands for an
// ncclSend and an ncclRecv on every rank in one group), until it returns false.
void forEachPoint(Collective coll, Shape shape, const std::function<bool(const Point&)>& visit) {
  const bool flat = shape == Shape::Flat;
  std::vector<int> ranks;
  for (int n = flat ? 1 : 2; n <= 17; ++n) ranks.push_back(n);
  ranks.push_back(32);
  ranks.push_back(64);
  for (int n : ranks) {
    const size_t ns = static_cast<size_t>(n);
    const bool big = n > 17;
    if (coll == Collective::Send) {
      if (big) continue;
      for (int shift : {0, 1, n / 2, n - 1})  // shift 0: every rank sends to itself
        for (size_t count : flat ? std::vector<size_t>{0, 1, 7, 203} : std::vector<size_t>{0, 7})
          for (size_t chunk : {size_t{1}, size_t{3}, size_t{1} << 20})
            for (bool recvFirst : {false, true})
              for (SendMode mode : {SendMode::Rendezvous, SendMode::Buffered}) {
                if (mode == SendMode::Buffered && n > 8) continue;
                Point p{coll, shape, n, count, chunk};
                p.mode = mode;
                p.shift = shift;
                p.recvFirst = recvFirst;
                if (!visit(p)) return;
              }
      continue;
    }
    std::vector<size_t> counts, chunks;
    if (big) {
      counts = flat ? std::vector<size_t>{1, ns + 3, 130} : std::vector<size_t>{1, ns + 3};
      chunks = {16};
    } else {
      counts = flat ? std::vector<size_t>{0, 1, ns - 1, 7, 5 * ns + 3, 203}
                    : std::vector<size_t>{0, 1, ns - 1, 5 * ns + 3};
      chunks = flat ? std::vector<size_t>{1, 3, 64, 1 << 20} : std::vector<size_t>{1, 4, 1 << 20};
    }
    std::vector<int> roots = {0};
    if (testing::rooted(coll)) {
      if (big)
        roots = {0, n / 2, n - 1};
      else
        roots.resize(ns), std::iota(roots.begin(), roots.end(), 0);
    }
    for (size_t count : counts)
      for (size_t chunk : chunks)
        for (int root : roots) {
          // Many chunks already; keeps it fast (building costs steps squared).
          if (chunk == 1 && count > (flat ? 5 * ns + 3 : ns)) continue;
          for (bool inPlace : {false, true})
            for (SendMode mode : {SendMode::Rendezvous, SendMode::Buffered}) {
              if (mode == SendMode::Buffered && n > 8)
                continue;  // early sends change nothing either
              Point p{coll, shape, n, count, chunk, root, inPlace};
              p.mode = mode;
              if (!visit(p)) return;
            }
        }
    // Avg where the collective reduces, with ranks mixing in place and out of place.
    Point mixed{coll, shape, n, big ? ns + 3 : 2 * ns + 1, big ? size_t{16} : size_t{2}, n / 2};
    mixed.mixed = true;
    mixed.average = reduces(coll);
    if (!visit(mixed)) return;
    // Pipelined hierarchical builders need pieces of 64 KiB and more: a few large AllReduce calls.
    if (coll == Collective::AllReduce && !flat && (n == 5 || n == 13))
      for (bool inPlace : {false, true})
        for (SendMode mode : {SendMode::Rendezvous, SendMode::Buffered}) {
          if (mode == SendMode::Buffered && (n > 8 || inPlace)) continue;
          Point p{coll, shape, n, (size_t{256} << 10) / 8 + 3, 4096, 0, inPlace};
          p.mode = mode;
          p.average = inPlace;
          if (!visit(p)) return;
        }
  }
}

// The first element where got and want differ, or "" when they are equal.
std::string firstDifference(const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + ", expected " + std::to_string(want.size());
  for (size_t e = 0; e < got.size(); ++e)
    if (got[e] != want[e])
      return "element " + std::to_string(e) + ": " + std::to_string(got[e]) + ", expected " +
             std::to_string(want[e]);
  return "";
}

// Whether `algo` supports the call as every rank sees it; a failure where ranks disagree.
bool supportedByAll(const algos::Algorithm& algo, const std::vector<algos::CollArgs>& args,
                    const Point& p) {
  size_t yes = 0;
  for (const algos::CollArgs& a : args) yes += algo.supports(a);
  EXPECT_TRUE(yes == 0 || yes == args.size())
      << "ranks disagree whether it supports " << describe(algo.name(), p);
  return yes == args.size();
}

// Runs `schedules` from `before` and checks every rank's buffers against `after`.
void runAndCheck(const std::vector<algos::Schedule>& schedules,
                 const std::vector<testing::Expectation>& want, std::string_view algo,
                 const Point& p) {
  std::vector<testing::SimRank> ranks;
  for (const testing::Expectation& w : want) ranks.push_back(w.before);
  ASSERT_EQ(testing::simulate(schedules, ranks, p.mode), "") << describe(algo, p);
  for (size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_EQ(firstDifference(ranks[r].recv, want[r].after.recv), "")
        << "recvbuff of rank " << r << ", " << describe(algo, p);
    ASSERT_EQ(firstDifference(ranks[r].send, want[r].after.send), "")
        << "sendbuff of rank " << r << ", " << describe(algo, p);
  }
}

// Every exact algorithm that supports the point's collective, on every rank.
void runCollective(const Point& p) {
  std::vector<algos::CollArgs> args;
  for (int r = 0; r < p.n; ++r) args.push_back(argsFor(p, r, p.coll, p.root));
  std::vector<testing::Expectation> want;
  for (const algos::Algorithm* algo : algos::algorithms()) {
    if (algo->compressed() || !supportedByAll(*algo, args, p)) continue;
    if (want.empty())
      for (int r = 0; r < p.n; ++r)
        want.push_back(
            testing::expectation({p.coll, p.n, p.count, p.root, args[r].inPlace, p.average}, r));
    std::vector<algos::Schedule> schedules;
    for (const algos::CollArgs& a : args) schedules.push_back(algo->build(a));
    runAndCheck(schedules, want, algo->name(), p);
    if (::testing::Test::HasFailure()) return;
  }
}

// ncclSend to r + shift and ncclRecv from r - shift on every rank r, joined as a group runs
// them, for every pair of a Send and a Recv algorithm.
void runPointToPoint(const Point& p) {
  std::vector<algos::CollArgs> sends, recvs;
  std::vector<testing::Expectation> want(static_cast<size_t>(p.n));
  for (int r = 0; r < p.n; ++r) {
    sends.push_back(argsFor(p, r, Collective::Send, algos::mod(r + p.shift, p.n)));
    recvs.push_back(argsFor(p, r, Collective::Recv, algos::mod(r - p.shift, p.n)));
    want[r].before.send = testing::inputOf(r, p.count);
    want[r].before.recv.assign(p.count, testing::kUnset);
    want[r].after = want[r].before;
    want[r].after.recv = testing::inputOf(algos::mod(r - p.shift, p.n), p.count);
  }
  for (const algos::Algorithm* send : algos::algorithms()) {
    if (send->compressed() || !supportedByAll(*send, sends, p)) continue;
    for (const algos::Algorithm* recv : algos::algorithms()) {
      if (recv->compressed() || !supportedByAll(*recv, recvs, p)) continue;
      std::vector<algos::Schedule> schedules;
      for (int r = 0; r < p.n; ++r) {
        std::vector<algos::Schedule> parts = {send->build(sends[r]), recv->build(recvs[r])};
        if (p.recvFirst) std::swap(parts[0], parts[1]);
        schedules.push_back(algos::concatSchedules(parts));
      }
      runAndCheck(schedules, want, std::string(send->name()) + "/" + std::string(recv->name()), p);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

struct SweepParam {
  Collective coll;
  Shape shape;
};

void PrintTo(const SweepParam& p, std::ostream* os) {
  *os << algos::collectiveName(p.coll) << " " << shapeName(p.shape);
}
void PrintTo(Shape shape, std::ostream* os) { *os << shapeName(shape); }

class Sweep : public ::testing::TestWithParam<SweepParam> {};

TEST_P(Sweep, EveryAlgorithmMatchesNccl) {
  const SweepParam param = GetParam();
  forEachPoint(param.coll, param.shape, [&](const Point& p) {
    if (p.coll == Collective::Send)
      runPointToPoint(p);
    else
      runCollective(p);
    return !HasFailure();
  });
}

std::vector<SweepParam> sweepParams() {
  std::vector<SweepParam> out;
  for (Collective coll : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce,
                          Collective::AllGather, Collective::ReduceScatter, Collective::AlltoAll,
                          Collective::Gather, Collective::Scatter, Collective::Send})
    for (Shape shape : {Shape::Flat, Shape::Hosts, Shape::Racks}) out.push_back({coll, shape});
  return out;
}

std::string sweepName(const ::testing::TestParamInfo<SweepParam>& info) {
  std::string coll = algos::collectiveName(info.param.coll) + 4;  // without "nccl"
  if (info.param.coll == Collective::Send) coll = "SendRecv";
  return coll + "_" + shapeName(info.param.shape);
}

INSTANTIATE_TEST_SUITE_P(Registry, Sweep, ::testing::ValuesIn(sweepParams()), sweepName);

// Compressed algorithms: with an INT8 codec and a top-k codec (each algorithm serves the one it
// is for), on every rank count from 1 to 17 flat, and a spread of them on hosts and racks.
struct CodecPoint {
  const compress::Codec* codec;
  Shape shape;
  int n;
  size_t count, chunk;
  bool inPlace, average;
  SendMode mode;
};

void forEachCodecPoint(Shape shape, const std::vector<const compress::Codec*>& codecs,
                       const std::function<bool(const CodecPoint&)>& visit) {
  const std::vector<int> ranks =
      shape == Shape::Flat
          ? std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
          : std::vector<int>{2, 3, 4, 5, 7, 8, 12, 16, 17};
  for (const compress::Codec* codec : codecs)
    for (int n : ranks) {
      for (size_t count : {size_t{0}, size_t{1}, static_cast<size_t>(std::max(1, n - 1)),
                           size_t{333}, size_t{1031}})
        for (size_t chunk : {size_t{7}, size_t{13}, size_t{100}, size_t{1} << 20})
          for (bool inPlace : {false, true})
            for (SendMode mode : {SendMode::Rendezvous, SendMode::Buffered}) {
              if (mode == SendMode::Buffered && (n > 4 || chunk != 7)) continue;
              if (!visit({codec, shape, n, count, chunk, inPlace, (count + chunk) % 2 == 1, mode}))
                return;
            }
    }
}

std::vector<algos::CollArgs> codecArgs(const CodecPoint& p) {
  std::vector<algos::CollArgs> args;
  for (int r = 0; r < p.n; ++r) {
    args.push_back(
        testing::compressedArgs(*p.codec, p.n, r, p.count, p.chunk, p.inPlace, p.average, false));
    args.back().topology = topologyFor(p.shape, p.n);
  }
  return args;
}

class CompressedSweep : public ::testing::TestWithParam<Shape> {};

TEST_P(CompressedSweep, EveryAlgorithmIsItsSchemeBitForBit) {
  const auto int8 = testing::int8Codec();
  const auto topk = testing::topkCodec(0.1);
  forEachCodecPoint(GetParam(), {int8.get(), topk.get()}, [&](const CodecPoint& p) {
    const std::vector<algos::CollArgs> args = codecArgs(p);
    for (const algos::Algorithm* algo : algos::algorithms()) {
      if (!algo->compressed()) continue;
      size_t yes = 0;
      for (const algos::CollArgs& a : args) yes += algo->supports(a);
      const std::string what =
          std::string(algo->name()) + " " + p.codec->name() + " n=" + std::to_string(p.n) +
          " count=" + std::to_string(p.count) + " chunk=" + std::to_string(p.chunk) +
          (p.inPlace ? " in place" : "") + (p.average ? " avg" : "") +
          (p.mode == SendMode::Buffered ? " buffered " : " rendezvous ") + shapeName(p.shape);
      EXPECT_TRUE(yes == 0 || yes == args.size()) << "ranks disagree whether it supports " << what;
      if (yes != args.size()) continue;
      std::string error;
      const testing::SimRun run =
          testing::runCompressed(*algo, *p.codec, p.n, p.count, p.chunk, p.inPlace, p.average,
                                 p.mode, &error, args[0].topology);
      EXPECT_EQ(error, "") << what;
      std::vector<float> want;
      EXPECT_TRUE(testing::compressedReference(algo->name(), *p.codec, args[0], run.inputs, &want))
          << "no reference scheme for " << what
          << ": add one to tests/common/compressed_reference.h";
      if (HasFailure()) return false;
      for (int r = 0; r < p.n; ++r)
        for (size_t e = 0; e < p.count; ++e) {
          EXPECT_EQ(run.ranks[r].recv[e], want[e]) << what << " rank " << r << " element " << e;
          if (HasFailure()) return false;
        }
    }
    return true;
  });
}

INSTANTIATE_TEST_SUITE_P(Registry, CompressedSweep,
                         ::testing::Values(Shape::Flat, Shape::Hosts, Shape::Racks),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return shapeName(info.param);
                         });

// Every registered algorithm supports some point of the sweeps above (so they ran it), and
// every compressed one some point of the compressed sweep.
TEST(Registry, EveryAlgorithmIsExercised) {
  const auto int8 = testing::int8Codec();
  const auto topk = testing::topkCodec(0.1);
  std::map<const algos::Algorithm*, bool> seen;
  for (const algos::Algorithm* algo : algos::algorithms()) seen[algo] = false;
  size_t left = seen.size();
  auto see = [&](const algos::CollArgs& a, bool compressed) {
    for (auto& [algo, ran] : seen)
      if (!ran && algo->compressed() == compressed && algo->supports(a)) ran = true, --left;
    return left > 0;
  };
  for (const SweepParam& param : sweepParams())
    forEachPoint(param.coll, param.shape, [&](const Point& p) {  // rank 0's call
      if (p.coll != Collective::Send) return see(argsFor(p, 0, p.coll, p.root), false);
      return see(argsFor(p, 0, Collective::Send, algos::mod(p.shift, p.n)), false) &&
             see(argsFor(p, 0, Collective::Recv, algos::mod(-p.shift, p.n)), false);
    });
  for (Shape shape : {Shape::Flat, Shape::Hosts, Shape::Racks})
    forEachCodecPoint(shape, {int8.get(), topk.get()},
                      [&](const CodecPoint& p) { return see(codecArgs(p)[0], true); });
  for (const auto& [algo, ran] : seen)
    EXPECT_TRUE(ran) << algo->name() << " (" << (algo->compressed() ? "compressed" : "exact")
                     << ") supports no call of the registry sweeps: give them one it serves";
}

}  // namespace
}  // namespace braid

namespace braid {
namespace {

// A lone rank's collective is at most one copy per output, whatever the chunk size: its schedule
// runs as it is (on device buffers, each step is a kernel or a cudaMemcpyAsync on the stream), and
// a copy cut into chunks would cost a launch per chunk.
TEST(Registry, ALoneRankCopiesAtMostOnce) {
  for (const algos::Algorithm* algo : algos::algorithms()) {
    if (algo->compressed()) continue;
    for (Collective coll :
         {Collective::AllReduce, Collective::Broadcast, Collective::Reduce, Collective::AllGather,
          Collective::ReduceScatter, Collective::AlltoAll, Collective::Gather, Collective::Scatter})
      for (bool inPlace : {false, true}) {
        algos::CollArgs a;
        a.coll = coll;
        a.count = 1000000;
        a.chunkCount = 1024;
        a.root = 0;
        a.inPlace = inPlace;
        a.rank = 0;
        a.nranks = 1;
        a.typeSize = 4;
        if (!algo->supports(a)) continue;
        const algos::Schedule s = algo->build(a);
        EXPECT_LE(s.steps.size(), inPlace ? 0u : 1u)
            << algo->name() << ", " << algos::collectiveName(coll)
            << (inPlace ? " in place" : " out of place");
      }
  }
}

}  // namespace
}  // namespace braid
