#include "algos/compressed_allreduce.h"

#include <vector>

#include "algos/pattern.h"
#include "compress/codec.h"

namespace braid::algos {
namespace {

bool isSparse(const compress::Codec& codec) { return codec.name() == "topk"; }

// Packed memory handed out front to back: every message gets a region of its own, so no
// receive ever waits for a send to finish reading its buffer.
class PackedArena {
 public:
  Region take(size_t bytes) {
    Region r{Buffer::Packed, used_, bytes};
    used_ += bytes;
    return r;
  }
  size_t used() const { return used_; }

 private:
  size_t used_ = 0;
};

// One rank with nothing to exchange: the result is the input (Avg of one rank is itself).
Schedule single(std::string name, const CollArgs& a) {
  ScheduleBuilder b(std::move(name));
  if (!a.inPlace && a.count > 0) b.copy({Buffer::Send, 0, a.count}, {Buffer::Recv, 0, a.count});
  return std::move(b).finish();
}

}  // namespace

bool TwoShotCompressedAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce && args.codec && !isSparse(*args.codec);
}

Schedule TwoShotCompressedAllReduce::build(const CollArgs& a) const {
  if (a.nranks == 1 || a.count == 0) return single("c2shot", a);
  const int n = a.nranks, r = a.rank;
  const compress::Codec& codec = *a.codec;
  ScheduleBuilder b("c2shot");
  const Buffer in = inputBuffer(a);
  PackedArena arena;
  auto msgBytes = [&](size_t elements, ncclDataType_t type) { return codec.maxEncodedBytes(elements, type); };
  const Range mine = evenPart(a.count, n, r);

  // Reduce-scatter: shard j of the input, chunk by chunk, encoded once and sent to rank j
  // (destinations in the order r+1, r+2, ... so that not every rank starts with rank 0). Our
  // own shard is encoded too: every contribution then carries the same kind of error, and the
  // residual of every element is kept.
  std::vector<std::vector<Region>> ownMessages;  // our shard's encoded chunks
  for (int k = 0; k < n; ++k) {
    const int j = (r + k) % n;
    forEachChunk(evenPart(a.count, n, j), a.chunkCount, [&](size_t off, size_t len) {
      Region packed = arena.take(msgBytes(len, a.type));
      b.encode({in, off, len}, packed, a.feedback, off);
      if (j == r) ownMessages.push_back({packed});
      else b.send(j, packed);
    });
  }

  // Our shard: every rank's message decoded into fp32 in rank order (the order fixes the bits),
  // divided for Avg, encoded once, sent to every rank and decoded here like theirs.
  b.needAccum(mine.count);
  size_t chunk = 0;
  forEachChunk(mine, a.chunkCount, [&](size_t off, size_t len) {
    const Region acc{Buffer::Accum, off - mine.offset, len};
    for (int i = 0; i < n; ++i) {
      Region packed = ownMessages[chunk][0];
      if (i != r) {
        packed = arena.take(msgBytes(len, a.type));
        b.recv(i, packed);
      }
      b.decodeAccumulate(packed, acc);
    }
    if (a.average) b.finishAvg(acc);
    Region sum = arena.take(msgBytes(len, ncclFloat32));
    b.encode(acc, sum, /*feedback=*/false, 0);
    for (int k = 1; k < n; ++k) b.send((r + k) % n, sum);
    b.decode(sum, {Buffer::Recv, off, len});
    ++chunk;
  });

  // All-gather: every other shard as its owner encoded it.
  for (int k = 1; k < n; ++k) {
    const int j = (r - k + n) % n;
    forEachChunk(evenPart(a.count, n, j), a.chunkCount, [&](size_t off, size_t len) {
      Region packed = arena.take(msgBytes(len, ncclFloat32));
      b.recv(j, packed);
      b.decode(packed, {Buffer::Recv, off, len});
    });
  }
  b.needPacked(arena.used());
  return std::move(b).finish();
}

bool SparseCompressedAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce && args.codec && isSparse(*args.codec);
}

Schedule SparseCompressedAllReduce::build(const CollArgs& a) const {
  if (a.nranks == 1 || a.count == 0) return single("csparse", a);
  const int n = a.nranks, r = a.rank;
  const compress::Codec& codec = *a.codec;
  ScheduleBuilder b("csparse");
  const Buffer in = inputBuffer(a);
  PackedArena arena;
  std::vector<Region> own;
  forEachChunk(a.count, a.chunkCount, [&](size_t off, size_t len) {
    Region packed = arena.take(codec.maxEncodedBytes(len, a.type));
    b.encode({in, off, len}, packed, a.feedback, off);
    for (int k = 1; k < n; ++k) b.send((r + k) % n, packed);
    own.push_back(packed);
  });
  b.needAccum(a.count);
  size_t chunk = 0;
  forEachChunk(a.count, a.chunkCount, [&](size_t off, size_t len) {
    const Region acc{Buffer::Accum, off, len};
    for (int i = 0; i < n; ++i) {
      Region packed = own[chunk];
      if (i != r) {
        packed = arena.take(codec.maxEncodedBytes(len, a.type));
        b.recv(i, packed);
      }
      b.decodeAccumulate(packed, acc);
    }
    if (a.average) b.finishAvg(acc);
    b.copy(acc, {Buffer::Recv, off, len});  // fp32 to the data type
    ++chunk;
  });
  b.needPacked(arena.used());
  return std::move(b).finish();
}

}  // namespace braid::algos
