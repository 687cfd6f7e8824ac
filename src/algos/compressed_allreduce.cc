#include "algos/compressed_allreduce.h"

#include <vector>

#include "algos/pattern.h"
#include "algos/topology_pattern.h"
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

// The sparse schedules' sum of one chunk: every rank's message (`from`, in rank order) decoded
// and added in fp32. An fp32 call sums straight into the result (the first message decoded,
// the others added), saving the accumulator's zeroing and the copy out of it: for top-k those
// dense passes cost more than the sparse decodes.
void sumSparse(ScheduleBuilder& b, const CollArgs& a, const std::vector<Region>& from,
               Range chunk) {
  const bool direct = a.type == ncclFloat32;
  const Region acc = direct ? Region{Buffer::Recv, chunk.offset, chunk.count}
                            : Region{Buffer::Accum, chunk.offset, chunk.count};
  if (!direct) b.needAccum(a.count);
  for (size_t i = 0; i < from.size(); ++i) {
    if (direct && i == 0)
      b.decode(from[i], acc);
    else
      b.decodeAccumulate(from[i], acc);
  }
  if (a.average) b.finishAvg(acc);
  if (!direct) b.copy(acc, {Buffer::Recv, chunk.offset, chunk.count});  // fp32 to the data type
}

}  // namespace

std::vector<std::vector<int>> forwardingGroups(const CollArgs& a) {
  if (!a.topology || a.topology->nranks() != a.nranks) return {};
  std::vector<int> all(static_cast<size_t>(a.nranks));
  for (int r = 0; r < a.nranks; ++r) all[static_cast<size_t>(r)] = r;
  for (int level = a.topology->levels() - 1; level >= 0; --level) {
    std::vector<std::vector<int>> groups = groupsAt(*a.topology, level, all);
    if (groups.size() < 2) continue;
    for (const auto& g : groups)
      if (g.size() >= 2) return groups;
  }
  return {};
}

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
  auto msgBytes = [&](size_t elements, ncclDataType_t type) {
    return codec.maxEncodedBytes(elements, type);
  };
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
      if (j == r)
        ownMessages.push_back({packed});
      else
        b.send(j, packed);
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

bool HierCompressedAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce && args.codec && !isSparse(*args.codec) &&
         !forwardingGroups(args).empty();
}

Schedule HierCompressedAllReduce::build(const CollArgs& a) const {
  const std::vector<std::vector<int>> groups = forwardingGroups(a);
  if (groups.empty() || a.count == 0) return single("c2hier", a);
  const compress::Codec& codec = *a.codec;
  ScheduleBuilder b("c2hier");
  const Buffer in = inputBuffer(a);
  PackedArena arena;
  const int G = static_cast<int>(groups.size());
  int units = 0;
  for (const auto& grp : groups) units = std::max(units, static_cast<int>(grp.size()));
  const int g = static_cast<int>(groupHolding(groups, a.rank));
  const std::vector<int>& mates = groups[static_cast<size_t>(g)];
  const int s = static_cast<int>(mates.size()), j = positionOf(mates, a.rank);
  auto size = [&](int q) { return static_cast<int>(groups[static_cast<size_t>(q)].size()); };
  // Unit u (one of `units` even parts of the buffer) is summed in group q by its handler there,
  // member u mod size(q); unit u's handlers, one per group, run the two-shot on it.
  auto handler = [&](int u, int q) {
    return groups[static_cast<size_t>(q)][static_cast<size_t>(u % size(q))];
  };
  auto unit = [&](int u) { return evenPart(a.count, units, u); };
  auto sub = [&](int u, int q) {  // sub-shard q of unit u
    Range p = unit(u), r = evenPart(p.count, G, q);
    return Range{p.offset + r.offset, r.count};
  };
  auto msg = [&](size_t len, ncclDataType_t type) {
    return arena.take(codec.maxEncodedBytes(len, type));
  };
  auto handledBy = [&](int member) {
    std::vector<int> out;
    for (int u = member; u < units; u += s) out.push_back(u);
    return out;
  };
  const std::vector<int> mine = handledBy(j);

  // Accum: the group sum of each unit we handle, then the total of our sub-shard of each.
  std::vector<size_t> groupSumAt(static_cast<size_t>(units)), totalAt(static_cast<size_t>(units));
  size_t accum = 0;
  for (int u : mine) {
    groupSumAt[static_cast<size_t>(u)] = accum;
    accum += unit(u).count;
  }
  for (int u : mine) {
    totalAt[static_cast<size_t>(u)] = accum;
    accum += sub(u, g).count;
  }
  b.needAccum(accum);
  auto groupSum = [&](int u, size_t off, size_t len) {  // off: into the buffer
    return Region{Buffer::Accum, groupSumAt[static_cast<size_t>(u)] + (off - unit(u).offset), len};
  };

  // Stage 1: every unit of our input, encoded once, to its handler in our group.
  std::vector<std::vector<Region>> ownUnit(static_cast<size_t>(units));
  for (int u = 0; u < units; ++u)
    forEachChunk(unit(u), a.chunkCount, [&](size_t off, size_t len) {
      Region m = msg(len, a.type);
      b.encode({in, off, len}, m, a.feedback, off);
      if (handler(u, g) == a.rank)
        ownUnit[static_cast<size_t>(u)].push_back(m);
      else
        b.send(handler(u, g), m);
    });
  // The units we handle, summed over the group in member order.
  for (int u : mine) {
    size_t c = 0;
    forEachChunk(unit(u), a.chunkCount, [&](size_t off, size_t len) {
      for (int member = 0; member < s; ++member) {
        Region from = member == j ? ownUnit[static_cast<size_t>(u)][c] : msg(len, a.type);
        if (member != j) b.recv(mates[static_cast<size_t>(member)], from);
        b.decodeAccumulate(from, groupSum(u, off, len));
      }
      ++c;
    });
  }
  // Stage 2, per unit among its handlers: sub-shard q of our group's sum to the handler in q.
  std::vector<std::vector<Region>> ownSub(static_cast<size_t>(units));
  for (int u : mine)
    for (int q = 0; q < G; ++q)
      forEachChunk(sub(u, q), a.chunkCount, [&](size_t off, size_t len) {
        Region m = msg(len, ncclFloat32);
        b.encode(groupSum(u, off, len), m, false, 0);
        if (q == g)
          ownSub[static_cast<size_t>(u)].push_back(m);
        else
          b.send(handler(u, q), m);
      });
  // Our sub-shard of each unit: the G group sums in group order, divided for Avg, encoded once
  // and sent to the unit's other handlers. results[u][q]: the messages of sub-shard q of unit u.
  std::vector<std::vector<std::vector<Region>>> results(
      static_cast<size_t>(units), std::vector<std::vector<Region>>(static_cast<size_t>(G)));
  for (int u : mine) {
    const Range mineSub = sub(u, g);
    size_t c = 0;
    forEachChunk(mineSub, a.chunkCount, [&](size_t off, size_t len) {
      const Region acc{Buffer::Accum, totalAt[static_cast<size_t>(u)] + (off - mineSub.offset),
                       len};
      for (int q = 0; q < G; ++q) {
        Region from = q == g ? ownSub[static_cast<size_t>(u)][c] : msg(len, ncclFloat32);
        if (q != g) b.recv(handler(u, q), from);
        b.decodeAccumulate(from, acc);
      }
      if (a.average) b.finishAvg(acc);
      Region result = msg(len, ncclFloat32);
      b.encode(acc, result, false, 0);
      for (int q = 0; q < G; ++q)
        if (q != g) b.send(handler(u, q), result);
      results[static_cast<size_t>(u)][static_cast<size_t>(g)].push_back(result);
      ++c;
    });
  }
  for (int u : mine)
    for (int q = 0; q < G; ++q) {
      if (q == g) continue;
      forEachChunk(sub(u, q), a.chunkCount, [&](size_t, size_t len) {
        Region from = msg(len, ncclFloat32);
        b.recv(handler(u, q), from);
        results[static_cast<size_t>(u)][static_cast<size_t>(q)].push_back(from);
      });
    }
  // Every result message of our units, as received, to every other member of our group, and
  // decoded here; theirs from them, in the same order.
  auto decodeInto = [&](int u, int q, const std::vector<Region>& messages) {
    size_t c = 0;
    forEachChunk(sub(u, q), a.chunkCount, [&](size_t off, size_t len) {
      b.decode(messages[c++], {Buffer::Recv, off, len});
    });
  };
  for (int u : mine)
    for (int q = 0; q < G; ++q) {
      const auto& messages = results[static_cast<size_t>(u)][static_cast<size_t>(q)];
      for (const Region& m : messages)
        for (int step = 1; step < s; ++step) b.send(mates[static_cast<size_t>((j + step) % s)], m);
      decodeInto(u, q, messages);
    }
  for (int step = 1; step < s; ++step) {
    const int member = (j - step + s) % s;
    for (int u : handledBy(member))
      for (int q = 0; q < G; ++q) {
        std::vector<Region> received;
        forEachChunk(sub(u, q), a.chunkCount, [&](size_t, size_t len) {
          Region from = msg(len, ncclFloat32);
          b.recv(mates[static_cast<size_t>(member)], from);
          received.push_back(from);
        });
        decodeInto(u, q, received);
      }
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
  const size_t chunkCount = a.chunkCount * kSparseChunkFactor;
  forEachChunk(a.count, chunkCount, [&](size_t off, size_t len) {
    Region packed = arena.take(codec.maxEncodedBytes(len, a.type));
    b.encode({in, off, len}, packed, a.feedback, off);
    for (int k = 1; k < n; ++k) b.send((r + k) % n, packed);
    own.push_back(packed);
  });
  size_t chunk = 0;
  forEachChunk(a.count, chunkCount, [&](size_t off, size_t len) {
    std::vector<Region> from(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      from[static_cast<size_t>(i)] = own[chunk];
      if (i != r) {
        from[static_cast<size_t>(i)] = arena.take(codec.maxEncodedBytes(len, a.type));
        b.recv(i, from[static_cast<size_t>(i)]);
      }
    }
    sumSparse(b, a, from, {off, len});
    ++chunk;
  });
  b.needPacked(arena.used());
  return std::move(b).finish();
}

bool HierSparseCompressedAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce && args.codec && isSparse(*args.codec) &&
         !forwardingGroups(args).empty();
}

Schedule HierSparseCompressedAllReduce::build(const CollArgs& a) const {
  const std::vector<std::vector<int>> groups = forwardingGroups(a);
  if (groups.empty() || a.count == 0) return single("csparsehier", a);
  const compress::Codec& codec = *a.codec;
  ScheduleBuilder b("csparsehier");
  const Buffer in = inputBuffer(a);
  PackedArena arena;
  const int n = a.nranks, G = static_cast<int>(groups.size());
  const int g = static_cast<int>(groupHolding(groups, a.rank));
  const std::vector<int>& mates = groups[static_cast<size_t>(g)];
  const int s = static_cast<int>(mates.size()), j = positionOf(mates, a.rank);
  auto size = [&](int q) { return static_cast<int>(groups[static_cast<size_t>(q)].size()); };
  auto at = [&](int q, int m) { return groups[static_cast<size_t>(q)][static_cast<size_t>(m)]; };
  // Origin (position p of group q) reaches group h != q through its gateway there: position
  // p mod size(h), who forwards it to the rest of group h.
  auto gateway = [&](int h, int p) { return at(h, p % size(h)); };
  std::vector<Range> chunks;
  forEachChunk(a.count, a.chunkCount * kSparseChunkFactor, [&](size_t off, size_t len) {
    chunks.push_back({off, len});
  });
  // message[c][origin]: where origin's encoded chunk c is (or will be) on this rank.
  std::vector<std::vector<Region>> message(chunks.size(),
                                           std::vector<Region>(static_cast<size_t>(n)));
  auto take = [&](size_t c) { return arena.take(codec.maxEncodedBytes(chunks[c].count, a.type)); };
  // The origins whose messages `member` of our group receives from group q (it is their
  // gateway), in position order.
  auto gatewayOf = [&](int q, int member) {
    std::vector<int> origins;
    for (int p = 0; p < size(q); ++p)
      if (p % s == member) origins.push_back(at(q, p));
    return origins;
  };

  // Our chunks: encoded once, to every mate and to our gateway in every other group.
  for (size_t c = 0; c < chunks.size(); ++c) {
    Region m = take(c);
    b.encode({in, chunks[c].offset, chunks[c].count}, m, a.feedback, chunks[c].offset);
    for (int step = 1; step < s; ++step) b.send(at(g, (j + step) % s), m);
    for (int step = 1; step < G; ++step) b.send(gateway((g + step) % G, j), m);
    message[c][static_cast<size_t>(a.rank)] = m;
  }
  // The other groups' messages we are the gateway for, forwarded to every mate as received.
  for (size_t c = 0; c < chunks.size(); ++c)
    for (int step = 1; step < G; ++step)
      for (int origin : gatewayOf((g - step + G) % G, j)) {
        Region m = take(c);
        b.recv(origin, m);
        for (int k = 1; k < s; ++k) b.send(at(g, (j + k) % s), m);
        message[c][static_cast<size_t>(origin)] = m;
      }
  // From each mate: its own chunks, then what it forwards, in the order it sends them.
  for (int k = 1; k < s; ++k) {
    const int mate = at(g, (j - k + s) % s);
    for (size_t c = 0; c < chunks.size(); ++c) {
      Region m = take(c);
      b.recv(mate, m);
      message[c][static_cast<size_t>(mate)] = m;
    }
  }
  for (int k = 1; k < s; ++k) {
    const int matePos = (j - k + s) % s, mate = at(g, matePos);
    for (size_t c = 0; c < chunks.size(); ++c)
      for (int step = 1; step < G; ++step)
        for (int origin : gatewayOf((g - step + G) % G, matePos)) {
          Region m = take(c);
          b.recv(mate, m);
          message[c][static_cast<size_t>(origin)] = m;
        }
  }
  // Every chunk summed in origin-rank order, as csparse sums it.
  for (size_t c = 0; c < chunks.size(); ++c) sumSparse(b, a, message[c], chunks[c]);
  b.needPacked(arena.used());
  return std::move(b).finish();
}

}  // namespace braid::algos
