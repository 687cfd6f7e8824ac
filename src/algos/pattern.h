// Index math shared by the schedule builders, kept in one place so that every builder (and
// both ends of every message) cuts buffers the same way.
#pragma once

#include <cstddef>
#include <vector>

#include "algos/algorithm.h"
#include "algos/schedule.h"

namespace braid::algos {

// a mod n in [0, n), for ring positions that step below zero.
inline int mod(int a, int n) { return ((a % n) + n) % n; }

// Where a rank's input lives. When sendbuff == recvbuff every step goes through Buffer::Recv,
// so that the builder sees every conflict between reading the input and writing the result.
// (AllGather, ReduceScatter, Gather and Scatter alias a slice, not the whole buffer; their
// builders say so.)
inline Buffer inputBuffer(const CollArgs& a) { return a.inPlace ? Buffer::Recv : Buffer::Send; }

// Block `index` of `count` elements: a rank's slot in AllGather, AlltoAll, Gather, Scatter...
inline Region block(Buffer buffer, int index, size_t count) {
  return {buffer, static_cast<size_t>(index) * count, count};
}

// The piece [offset, offset + count) of `r`.
inline Region slice(Region r, size_t offset, size_t count) {
  return {r.buffer, r.offset + offset, count};
}

// Calls fn(offset, count) for each chunk of [0, count). Both ends of a message derive their
// chunks from the same count and chunkCount, so the k-th send meets a k-th recv of equal size.
template <typename Fn>
void forEachChunk(size_t count, size_t chunk, Fn&& fn) {
  forEachChunk(Range{0, count}, chunk, fn);
}

// Moves `region` to or from `peer` in chunks, as one pipelined message stream.
inline void sendChunks(ScheduleBuilder& b, int peer, Region region, size_t chunk) {
  forEachChunk(region.count, chunk,
               [&](size_t off, size_t n) { b.send(peer, slice(region, off, n)); });
}
inline void recvChunks(ScheduleBuilder& b, int peer, Region region, size_t chunk) {
  forEachChunk(region.count, chunk,
               [&](size_t off, size_t n) { b.recv(peer, slice(region, off, n)); });
}

// Calls first(offset, n) then second(offset, n) chunk by chunk over [0, firstCount) and
// [0, secondCount), so that the two directions of one ring step pipeline together.
template <typename First, typename Second>
void interleaveChunks(size_t firstCount, size_t secondCount, size_t chunk, First&& first,
                      Second&& second) {
  if (chunk == 0) chunk = 1;
  const size_t total = firstCount > secondCount ? firstCount : secondCount;
  for (size_t off = 0; off < total; off += chunk) {
    if (off < firstCount) first(off, firstCount - off < chunk ? firstCount - off : chunk);
    if (off < secondCount) second(off, secondCount - off < chunk ? secondCount - off : chunk);
  }
}

// A rank's neighbours on the chain root -> root+1 -> ... -> root-1 (data flows that way in a
// broadcast, the other way in a reduce). -1 where the chain ends.
struct ChainLinks {
  int towardRoot;    // the rank before this one; -1 at the root
  int awayFromRoot;  // the rank after this one; -1 at the tail
};
inline ChainLinks chainLinks(int rank, int nranks, int root) {
  const int pos = mod(rank - root, nranks);
  return {pos == 0 ? -1 : mod(rank - 1, nranks), pos == nranks - 1 ? -1 : mod(rank + 1, nranks)};
}

// An in-order binary tree over positions 0..m-1: position q is node q + 1, whose parent is the
// nearest node above it with twice its lowest set bit; nodes past m are skipped. Positions
// 0, 2, 4... are the leaves, so a tree mirrored onto the odd positions has them as its inner
// nodes (the double binary tree). The root is the largest power of two <= m, less one.
inline int binaryTreeParent(int q, int m) {
  int root = 1;
  while (root * 2 <= m) root *= 2;
  int v = q + 1;
  if (v == root) return -1;
  do {
    const int low = v & -v;
    v = (v | (2 * low)) & ~low;
  } while (v > m);
  return v - 1;
}
inline std::vector<int> binaryTreeChildren(int q, int m) {
  std::vector<int> children;  // at most two: the ones below and above q
  for (int c = 0; c < m; ++c)
    if (binaryTreeParent(c, m) == q) children.push_back(c);
  return children;
}

}  // namespace braid::algos
