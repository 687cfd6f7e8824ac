// Compressed AllReduce in memory with the real codecs: the codecs, random fp32 inputs, every
// rank's schedule run on the simulator (schedule_sim.h), and what each scheme defines, computed
// directly (every contribution encoded once, summed in fp32 in a fixed order, each sum encoded
// once): a schedule's result must equal it bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algos/algorithm.h"
#include "algos/compressed_allreduce.h"
#include "algos/pattern.h"
#include "common/schedule_sim.h"
#include "compress/int8_block.h"
#include "compress/topk.h"

namespace braid::testing {

inline std::unique_ptr<compress::Int8BlockCodec> int8Codec(uint32_t block = 64) {
  compress::Int8BlockOptions o;
  o.blockSize = block;
  std::unique_ptr<compress::Int8BlockCodec> c;
  EXPECT_TRUE(compress::Int8BlockCodec::create(o, &c).ok());
  return c;
}

inline std::unique_ptr<compress::TopKCodec> topkCodec(double ratio) {
  std::unique_ptr<compress::TopKCodec> c;
  EXPECT_TRUE(compress::TopKCodec::create({ratio}, &c).ok());
  return c;
}

inline algos::CollArgs compressedArgs(const compress::Codec& codec, int n, int r, size_t count,
                                      size_t chunk, bool inPlace, bool average, bool feedback) {
  return {.count = count,
          .average = average,
          .inPlace = inPlace,
          .rank = r,
          .nranks = n,
          .chunkCount = chunk,
          .typeSize = 4,
          .codec = &codec,
          .feedback = feedback};
}

inline std::vector<float> randomInput(size_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = d(gen);
  return v;
}

// decode(encode(x)) of one piece, accumulated into acc (fp32).
inline void roundTripAdd(const compress::Codec& c, const float* x, size_t n, float* acc) {
  std::vector<std::byte> msg(c.maxEncodedBytes(n, ncclFloat32));
  size_t written = 0;
  ASSERT_TRUE(c.encode(x, n, ncclFloat32, nullptr, 0, msg, &written).ok());
  ASSERT_TRUE(c.decodeAccumulate(msg, n, acc).ok());
}

struct SimRun {
  std::vector<std::vector<float>> inputs;
  std::vector<FloatRank> ranks;
};

// Builds every rank's schedule (on `topo`, null: none), runs it on random inputs (rank r's
// seeded seedBase + r), and returns the ranks, the inputs kept aside.
inline SimRun runCompressed(const algos::Algorithm& algo, const compress::Codec& codec, int n,
                            size_t count, size_t chunk, bool inPlace, bool average, SendMode mode,
                            std::string* error, const algos::Topology* topo = nullptr,
                            uint32_t seedBase = 1000) {
  SimRun run;
  std::vector<algos::Schedule> schedules;
  run.ranks.resize(n);
  for (int r = 0; r < n; ++r) {
    algos::CollArgs a = compressedArgs(codec, n, r, count, chunk, inPlace, average, false);
    a.topology = topo;
    schedules.push_back(algo.build(a));
    run.inputs.push_back(randomInput(count, seedBase + static_cast<uint32_t>(r)));
    if (inPlace)
      run.ranks[r].recv = run.inputs[r];
    else {
      run.ranks[r].send = run.inputs[r];
      run.ranks[r].recv.assign(count, -7.0f);
    }
  }
  *error = simulateCompressed(schedules, run.ranks, codec, 1, mode);
  return run;
}

// What the two-shot scheme defines for fp32 input with rounding to nearest: per chunk of each
// shard, every rank's piece round-tripped and summed in rank order, then the sum round-tripped.
inline std::vector<float> twoShotReference(const compress::Codec& c,
                                           const std::vector<std::vector<float>>& in, size_t count,
                                           size_t chunk, bool average) {
  const int n = static_cast<int>(in.size());
  std::vector<float> out(count);
  for (int j = 0; j < n; ++j) {
    algos::forEachChunk(algos::evenPart(count, n, j), chunk, [&](size_t off, size_t len) {
      std::vector<float> acc(len, 0.0f);
      for (int i = 0; i < n; ++i) roundTripAdd(c, in[i].data() + off, len, acc.data());
      if (average)
        for (float& v : acc) v /= static_cast<float>(n);
      std::vector<float> res(len, 0.0f);
      roundTripAdd(c, acc.data(), len, res.data());
      std::copy(res.begin(), res.end(), out.begin() + static_cast<long>(off));
    });
  }
  return out;
}

// Top-k: per chunk (the call's chunk times kSparseChunkFactor), every rank's piece round-tripped
// and added in rank order.
inline std::vector<float> sparseReference(const compress::Codec& c,
                                          const std::vector<std::vector<float>>& in, size_t count,
                                          size_t chunk, bool average) {
  const int n = static_cast<int>(in.size());
  std::vector<float> out(count, 0.0f);
  algos::forEachChunk(count, chunk * algos::kSparseChunkFactor, [&](size_t off, size_t len) {
    for (int i = 0; i < n; ++i) roundTripAdd(c, in[i].data() + off, len, out.data() + off);
    if (average)
      for (size_t e = off; e < off + len; ++e) out[e] /= static_cast<float>(n);
  });
  return out;
}

// The hierarchical two-shot over `groups` (c2hier's, each in rank order): the buffer cut in as
// many even units as the largest group has ranks; per unit, each group's sum (its members'
// chunks round-tripped and added in member order); per sub-shard q of the unit (one per group)
// and chunk of it, the group sums round-tripped and added in group order, then that total
// round-tripped once.
inline std::vector<float> hierTwoShotReference(const compress::Codec& c,
                                               const std::vector<std::vector<float>>& in,
                                               const std::vector<std::vector<int>>& groups,
                                               size_t count, size_t chunk, bool average) {
  const int n = static_cast<int>(in.size()), G = static_cast<int>(groups.size());
  int units = 0;
  for (const auto& g : groups) units = std::max(units, static_cast<int>(g.size()));
  std::vector<float> out(count);
  for (int u = 0; u < units; ++u) {
    const algos::Range unit = algos::evenPart(count, units, u);
    std::vector<std::vector<float>> groupSum(G, std::vector<float>(unit.count, 0.0f));
    for (int q = 0; q < G; ++q)
      algos::forEachChunk(unit, chunk, [&](size_t off, size_t len) {
        for (int member : groups[q])
          roundTripAdd(c, in[member].data() + off, len, groupSum[q].data() + (off - unit.offset));
      });
    for (int s = 0; s < G; ++s) {
      const algos::Range part = algos::evenPart(unit.count, G, s);
      algos::forEachChunk(
          algos::Range{unit.offset + part.offset, part.count}, chunk, [&](size_t off, size_t len) {
            std::vector<float> acc(len, 0.0f), res(len, 0.0f);
            for (int q = 0; q < G; ++q)
              roundTripAdd(c, groupSum[q].data() + (off - unit.offset), len, acc.data());
            if (average)
              for (float& v : acc) v /= static_cast<float>(n);
            roundTripAdd(c, acc.data(), len, res.data());
            std::copy(res.begin(), res.end(), out.begin() + static_cast<long>(off));
          });
    }
  }
  return out;
}

// What compressed algorithm `name` defines for these inputs and the call (any rank's args), or
// false when no reference for it is known here. One rank: its input.
inline bool compressedReference(std::string_view name, const compress::Codec& c,
                                const algos::CollArgs& args,
                                const std::vector<std::vector<float>>& in,
                                std::vector<float>* out) {
  const size_t count = args.count, chunk = args.chunkCount;
  const bool average = args.average;
  if (in.size() == 1) {
    *out = in[0];
    return true;
  }
  if (name == "c2shot")
    *out = twoShotReference(c, in, count, chunk, average);
  else if (name == "csparse" || name == "csparsehier")
    *out = sparseReference(c, in, count, chunk, average);
  else if (name == "c2hier")
    *out = hierTwoShotReference(c, in, algos::forwardingGroups(args), count, chunk, average);
  else
    return false;
  return true;
}

}  // namespace braid::testing
