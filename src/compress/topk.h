// Top-k sparsification: keep the k = ratio x count elements of largest magnitude, exactly k,
// and send them as (index, value) pairs; the rest wait in the error-feedback residual.
//
// Message: Header (param = k) | indices[k] (uint32, ascending) | values[k] (fp32).
// The pairs are stored as two arrays rather than interleaved, so both halves stream. Values
// are fp32 whatever the input type: with error feedback the kept value is input + residual,
// which the input type may not hold, and sending it exactly leaves a residual of zero there.
//
// Which k: magnitudes are ranked by |value| and, among equal magnitudes (including +x and -x),
// the lower index first, so the choice is deterministic. NaN and Inf rank above every finite
// value, so they are always sent first, exactly; should a buffer hold more than k of them, the
// k sent already make the receiver's result non-finite, and the others stay in the residual.
//
// Selection is O(count): a sample of 4096 to 16384 magnitudes estimates the threshold, one
// vectorised pass counts the magnitudes at or above it (lowering it until at least k are),
// one pass collects those candidates, and an nth_element over the candidates fixes exactly k.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "compress/codec.h"

namespace braid::compress {

struct TopKOptions {
  double ratio = 0.01;  // fraction of elements kept, in (0, 1]
};

class TopKCodec final : public Codec {
 public:
  static Status create(const TopKOptions& options, std::unique_ptr<TopKCodec>* codec);

  std::string name() const override { return "topk"; }
  const TopKOptions& options() const { return options_; }
  // Elements kept out of count: round(ratio x count), at least 1 when count > 0.
  size_t keptCount(size_t count) const;

  size_t maxEncodedBytes(size_t count, ncclDataType_t type) const override;
  Status encode(const void* input, size_t count, ncclDataType_t type, float* residual,
                uint64_t seed, std::span<std::byte> out, size_t* written) const override;
  Status decodeAccumulate(std::span<const std::byte> in, size_t count, float* acc) const override;
  Status decode(std::span<const std::byte> in, size_t count, ncclDataType_t type,
                void* out) const override;

 private:
  explicit TopKCodec(const TopKOptions& options) : options_(options) {}
  TopKOptions options_;
};

// The k selected from v[0, count) by the rule above (ascending indices), for callers that
// want the selection without a message. Exposed for tests and benchmarks.
void selectTopK(const float* v, size_t count, size_t k, std::vector<uint32_t>* indices);

// Whether exchanging the sparse messages beats a dense exchange, for one AllReduce of `count`
// fp32 elements over `nranks` ranks each keeping k. Prices the bytes one rank receives:
//   sparse: an all-gather of every other rank's k pairs, (p - 1) x k x 8;
//   dense:  a ring AllReduce of the fp32 buffer, 2 (p - 1) / p x count x 4.
// With density d = k / count, sparse wins only while p x d < 1 (so at d = 1%, below 100
// ranks). The union of the kept indices, 1 - (1 - d)^p of the buffer for independent
// choices, is what a sum of the sparse messages fills: once it passes one half, a sparse
// sum (as a hierarchical or reduce-scatter scheme would forward) is larger than a dense one.
struct ExchangeEstimate {
  double density;         // k / count
  double unionDensity;    // 1 - (1 - d)^p
  double sparseBytes;     // received per rank by the sparse all-gather
  double denseBytes;      // received per rank by the dense ring AllReduce
  double sparseSumBytes;  // a sparse message of the summed union: unionDensity x count x 8
  bool denseCheaper;      // sparseBytes > denseBytes
};
ExchangeEstimate estimateExchange(size_t k, size_t count, int nranks);

}  // namespace braid::compress
