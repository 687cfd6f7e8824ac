// Compressed AllReduce schedules: each rank's contribution is encoded once (with error
// feedback), the bytes move, and whoever sums decodes every contribution into an fp32
// accumulator. Nothing is decoded, added and re-encoded hop by hop, so the error of a result is
// that of one encode per contribution plus (two-shot) one of the sum; see docs/compression.md
// for the measured comparison with a ring that requantises at every hop.
#pragma once

#include <vector>

#include "algos/algorithm.h"

namespace braid::algos {

// Two-shot ("c2shot", dense codecs such as INT8 blocks): shard j of every rank's input is
// encoded once and sent to rank j (all-to-all reduce-scatter); rank j decodes the p messages
// into fp32 in rank order, divides for Avg, encodes the sum once and sends it to everyone
// (all-gather); every rank decodes every shard, its own included, so all ranks hold the same
// bits. Each rank sends and receives 2 (p - 1)/p of the encoded buffer, as a ring would.
class TwoShotCompressedAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "c2shot"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
  bool compressed() const override { return true; }
};

// Hierarchical two-shot ("c2hier", dense codecs): the flat two-shot sends half of every
// rank's bytes across the slowest boundary (a rack uplink shared by the rack's hosts). Here the
// ranks are split at the highest topology level with two or more groups (racks, or hosts), of
// any sizes. The buffer is cut in U units (U: the largest group's size); in group q unit u is
// handled by member u mod size(q). Stage 1, inside each group: every member's unit u goes,
// encoded, to its handler, who sums the group's messages in fp32. Stage 2, across groups: unit
// u's handlers (one per group) run the two-shot on it (sub-shard q to the handler in group q,
// encoded once from fp32, summed, the sum encoded once). Each sum message goes to the unit's
// other handlers and is forwarded, as received, to every member of each group; everyone decodes
// every message. Only about 1/size of the encoded buffer crosses the group boundary; each
// element is quantised three times (input, group sum, total) instead of twice.
class HierCompressedAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "c2hier"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
  bool compressed() const override { return true; }
};

// The groups c2hier and csparsehier work across: those of the highest level (below the top)
// with at least two groups, one of them holding two or more ranks (sizes may differ), each in
// rank order; empty when there is none (or the call carries no topology of its size).
std::vector<std::vector<int>> forwardingGroups(const CollArgs& a);

// The sparse schedules cut the buffer in chunks this many times the call's chunk: a top-k
// message holds about ratio x 8 bytes per element, so ordinary chunks make tiny messages, and
// each chunk pays a fixed selection cost (a sample of at least 4096 magnitudes). Measured on
// the emulated cluster (docs/compression.md): 16 MiB fp32 in 65 ms with 512 KiB chunks, 53 ms
// with 4 MiB.
constexpr size_t kSparseChunkFactor = 8;

// Sparse all-gather ("csparse", top-k): each rank encodes its whole input once (per chunk) and
// sends the same message to every other rank; every rank decodes the p messages into fp32 in
// rank order and stores the sum. A sum of sparse messages is not sparse (its union grows with
// p), so it is never forwarded: each rank receives (p - 1) messages of k pairs, which beats a
// dense exchange while p x k/count < 1 (compress::estimateExchange; the policy checks it).
class SparseCompressedAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "csparse"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
  bool compressed() const override { return true; }
};

// Sparse all-gather with hierarchical forwarding ("csparsehier", top-k): the same messages and
// the same sum (bit for bit) as csparse, but each rank's message crosses the group boundary
// once per other group (to its gateway there: the member at its own position, modulo the
// group's size), which forwards it to its group; csparse sends it once per rank of the other
// groups. Groups may differ in size (at the highest level with two or more groups, one of
// them holding two or more ranks).
class HierSparseCompressedAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "csparsehier"; }
  bool supports(const CollArgs& args) const override;
  Schedule build(const CollArgs& args) const override;
  bool compressed() const override { return true; }
};

}  // namespace braid::algos
