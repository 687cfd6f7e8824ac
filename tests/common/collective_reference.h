// What NCCL defines a collective to leave in each rank's buffers, for int64 inputs that differ
// for every rank and element (so a misplaced block cannot go unnoticed): each rank's buffers
// before the call and what they must hold after it, element for element, for the in-memory
// schedule simulator (schedule_sim.h). A buffer NCCL does not give a rank (recvbuff off the root
// of a Reduce, ...) is empty, so a schedule that touches it fails with "out of bounds".
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "algos/algorithm.h"
#include "common/schedule_sim.h"

namespace braid::testing {

constexpr int64_t kUnset = -1;

inline int64_t value(int rank, size_t e) {
  return (rank + 1) * 1000003 + static_cast<int64_t>(e) * 7;
}

inline std::vector<int64_t> inputOf(int rank, size_t len) {
  std::vector<int64_t> v(len);
  for (size_t e = 0; e < len; ++e) v[e] = value(rank, e);
  return v;
}

inline bool rooted(algos::Collective coll) {
  return coll == algos::Collective::Broadcast || coll == algos::Collective::Reduce ||
         coll == algos::Collective::Gather || coll == algos::Collective::Scatter;
}

// One rank's call (count as CollArgs counts it; inPlace as this rank decides it).
struct RankCall {
  algos::Collective coll;
  int n;
  size_t count;
  int root = 0;
  bool inPlace = false;
  bool average = false;
};

// One rank's buffers before the call, and what they must hold after it.
struct Expectation {
  SimRank before, after;
};

inline Expectation expectation(const RankCall& c, int r) {
  using algos::Collective;
  using Values = std::vector<int64_t>;
  const size_t count = c.count, n = static_cast<size_t>(c.n), rank = static_cast<size_t>(r);
  const bool root = r == c.root;
  const Values unset(count, kUnset), unsetAll(n * count, kUnset);
  auto reduced = [&](size_t e) {
    int64_t sum = 0;
    for (int p = 0; p < c.n; ++p) sum += value(p, e);
    return c.average ? sum / c.n : sum;
  };
  // Overwrites `len` elements of `v` at block `index` with f(e).
  auto setBlock = [](Values& v, size_t index, size_t len, auto f) {
    for (size_t e = 0; e < len; ++e) v[index * len + e] = f(e);
  };
  SimRank before, after;
  // Whole-buffer in-place calls hold their input in recvbuff (see algos::inputBuffer).
  auto input = [&](Values v) { (c.inPlace ? before.recv : before.send) = std::move(v); };
  switch (c.coll) {
    case Collective::AllReduce: {
      input(inputOf(r, count));
      if (!c.inPlace) before.recv = unset;
      after = before;
      for (size_t e = 0; e < count; ++e) after.recv[e] = reduced(e);
      break;
    }
    case Collective::Broadcast: {
      const Values data = inputOf(c.root, count);
      if (root) input(data);
      if (!root || !c.inPlace) before.recv = unset;
      after = before;
      after.recv = data;
      break;
    }
    case Collective::Reduce: {
      input(inputOf(r, count));
      if (root && !c.inPlace) before.recv = unset;
      after = before;
      if (root)
        for (size_t e = 0; e < count; ++e) after.recv[e] = reduced(e);
      break;
    }
    case Collective::AllGather: {
      if (c.inPlace) {
        before.recv = unsetAll;
        setBlock(before.recv, rank, count, [&](size_t e) { return value(r, e); });
      } else {
        before.send = inputOf(r, count);
        before.recv = unsetAll;
      }
      after = before;
      for (int p = 0; p < c.n; ++p)
        setBlock(after.recv, p, count, [&](size_t e) { return value(p, e); });
      break;
    }
    case Collective::ReduceScatter: {
      before.send = inputOf(r, n * count);
      if (!c.inPlace) before.recv = unset;
      after = before;
      if (c.inPlace)
        setBlock(after.send, rank, count, [&](size_t e) { return reduced(rank * count + e); });
      else
        setBlock(after.recv, 0, count, [&](size_t e) { return reduced(rank * count + e); });
      break;
    }
    case Collective::AlltoAll: {
      input(inputOf(r, n * count));
      if (!c.inPlace) before.recv = unsetAll;
      after = before;
      for (int p = 0; p < c.n; ++p)
        setBlock(after.recv, p, count, [&](size_t e) { return value(p, rank * count + e); });
      break;
    }
    case Collective::Gather: {
      if (root && c.inPlace) {  // sendbuff == recvbuff + root * count
        before.recv = unsetAll;
        setBlock(before.recv, rank, count, [&](size_t e) { return value(r, e); });
      } else {
        before.send = inputOf(r, count);  // off the root, only sendbuff is used
        if (root) before.recv = unsetAll;
      }
      after = before;
      if (root)
        for (int p = 0; p < c.n; ++p)
          setBlock(after.recv, p, count, [&](size_t e) { return value(p, e); });
      break;
    }
    case Collective::Scatter: {
      if (root) before.send = inputOf(r, n * count);
      // In place the root's recvbuff is sendbuff's block root, which already holds its result.
      if (!root || !c.inPlace) before.recv = unset;
      after = before;
      if (!root || !c.inPlace)
        setBlock(after.recv, 0, count, [&](size_t e) { return value(c.root, rank * count + e); });
      break;
    }
    default: ADD_FAILURE() << "no expectation for " << algos::collectiveName(c.coll);
  }
  return {before, after};
}

}  // namespace braid::testing
