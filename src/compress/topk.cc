#include "compress/topk.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compress/codec_kernels.h"
#include "compress/quant_math.h"
#include "kernels/functors.h"

namespace braid::compress {
namespace {

using quant::magnitudeKey;
using quant::rankKey;

// A larger sample S cuts the candidates' excess over k (about 2 / sqrt(k x S / n) of k) but
// costs its own selection: 1/64 of the elements, between 4096 and 16384, keeps both small
// (about 15% excess at 1% of 16M elements).
size_t sampleSize(size_t count) {
  return std::min(count, std::clamp<size_t>(count / 64, 4096, 16384));
}

size_t messageBytes(size_t k) { return sizeof(Header) + k * (sizeof(uint32_t) + sizeof(float)); }

// A magnitude threshold with at least k magnitudes at or above it (their number goes to
// *atLeast), found from a sample so that few more than k are: the sample's order statistics
// estimate the population's, and each miss doubles the sample rank (at most log2(S) extra
// counting passes, rarely one).
uint32_t findThreshold(const float* v, size_t count, size_t k, const CodecKernelTable& kt,
                       size_t* atLeast) {
  const size_t samples = sampleSize(count);
  std::vector<uint32_t> sample(samples);
  for (size_t j = 0; j < samples; ++j) sample[j] = magnitudeKey(v[j * count / samples]);
  // The expected rank of the k-th largest in the sample, plus a margin of two standard
  // deviations so that one counting pass usually suffices.
  double expected = double(k) * double(samples) / double(count);
  size_t rank = size_t(expected + 2.0 * std::sqrt(expected) + 2.0);
  for (; rank < samples; rank = rank * 2 + 1) {
    std::nth_element(sample.begin(), sample.begin() + ptrdiff_t(rank), sample.end(),
                     std::greater<>());
    uint32_t key = sample[rank];
    *atLeast = kt.countAtLeast(v, count, key);
    if (*atLeast >= k) return key;
  }
  *atLeast = count;  // everything qualifies
  return 0;
}

}  // namespace

void selectTopK(const float* v, size_t count, size_t k, std::vector<uint32_t>* indices) {
  indices->clear();
  if (k == 0) return;
  if (k >= count) {
    indices->resize(count);
    for (size_t i = 0; i < count; ++i) (*indices)[i] = uint32_t(i);
    return;
  }
  const CodecKernelTable& kt = activeCodecKernels();
  size_t atLeast = 0;
  uint32_t threshold = findThreshold(v, count, k, kt, &atLeast);
  if (threshold == 0) {
    // Zero magnitudes would qualify: the buffer holds few nonzero values (a sparse sum fed
    // back in place, say), and every element would become a candidate. The nonzero ones come
    // first; if they are fewer than k, zeros fill up from the lowest index, as the order says.
    const size_t nonzero = kt.countAtLeast(v, count, 1);
    if (nonzero < k) {
      indices->reserve(k);
      size_t zeros = k - nonzero;
      for (size_t i = 0; i < count && indices->size() < k; ++i) {
        const bool isZero = magnitudeKey(v[i]) == 0;
        if (!isZero || zeros > 0) indices->push_back(uint32_t(i));
        if (isZero && zeros > 0) --zeros;
      }
      return;
    }
    threshold = 1;
    atLeast = nonzero;
  }
  std::vector<uint32_t> candidates(atLeast + 16);
  candidates.resize(kt.collectAtLeast(v, count, threshold, candidates.data()));
  if (candidates.size() == k) {
    *indices = std::move(candidates);
    return;
  }
  // Exactly k: the k-th largest rank key among the candidates is the cut.
  std::vector<uint64_t> keys(candidates.size());
  for (size_t j = 0; j < candidates.size(); ++j) keys[j] = rankKey(v[candidates[j]], candidates[j]);
  std::nth_element(keys.begin(), keys.begin() + ptrdiff_t(k - 1), keys.end(), std::greater<>());
  const uint64_t cut = keys[k - 1];
  indices->reserve(k);
  for (uint32_t i : candidates)
    if (rankKey(v[i], i) >= cut) indices->push_back(i);
}

Status TopKCodec::create(const TopKOptions& options, std::unique_ptr<TopKCodec>* codec) {
  if (!(options.ratio > 0.0 && options.ratio <= 1.0))
    return invalidArgument("topk: ratio %g is outside (0, 1]", options.ratio);
  codec->reset(new TopKCodec(options));
  return Status::Ok();
}

size_t TopKCodec::keptCount(size_t count) const {
  if (count == 0) return 0;
  auto k = size_t(std::llround(options_.ratio * double(count)));
  return std::clamp<size_t>(k, 1, count);
}

size_t TopKCodec::maxEncodedBytes(size_t count, ncclDataType_t) const {
  return messageBytes(keptCount(count));
}

Status TopKCodec::encode(const void* input, size_t count, ncclDataType_t type, float* residual,
                         uint64_t, std::span<std::byte> out, size_t* written) const {
  if (!isCompressibleType(type))
    return invalidArgument("topk encode: datatype %d is not float, half or bfloat16", int(type));
  if (count > UINT32_MAX) return invalidArgument("topk encode: count %zu is above 2^32 - 1", count);
  const size_t k = keptCount(count);
  const size_t bytes = messageBytes(k);
  if (out.size() < bytes)
    return invalidArgument("topk encode: output of %zu bytes, %zu elements need %zu", out.size(),
                           count, bytes);
  const CodecKernelTable& kt = activeCodecKernels();
  const int kind = int(floatKind(type));

  // The values to select from, in fp32: input + residual in the residual itself, else the
  // input as it is, or widened.
  const float* v;
  std::vector<float> widened;
  if (residual) {
    kt.widenAccumulate[kind](residual, input, count);
    v = residual;
  } else if (type == ncclFloat32) {
    v = static_cast<const float*>(input);
  } else {
    widened.resize(count);
    kt.widen[kind](widened.data(), input, count);
    v = widened.data();
  }

  std::vector<uint32_t> kept;
  selectTopK(v, count, k, &kept);
  writeHeader(out, Header{uint8_t(CodecId::TopK), kFormatVersion, 0, 0, uint32_t(k), count});
  auto* base = reinterpret_cast<unsigned char*>(out.data()) + sizeof(Header);
  if (k > 0) std::memcpy(base, kept.data(), k * sizeof(uint32_t));
  float* values = reinterpret_cast<float*>(base + k * sizeof(uint32_t));
  for (size_t j = 0; j < k; ++j) {
    const float value = v[kept[j]];
    std::memcpy(&values[j], &value, sizeof value);
  }
  // Sent exactly, so nothing of them is left behind.
  if (residual)
    for (uint32_t i : kept) residual[i] = 0.0f;
  *written = bytes;
  return Status::Ok();
}

namespace {

// A checked message: k, and its indices (ascending, below count) and values.
struct Pairs {
  size_t k;
  const unsigned char* indices;
  const unsigned char* values;
  uint32_t index(size_t j) const {
    uint32_t i;
    std::memcpy(&i, indices + 4 * j, 4);
    return i;
  }
  float value(size_t j) const {
    float x;
    std::memcpy(&x, values + 4 * j, 4);
    return x;
  }
};

Status readPairs(std::span<const std::byte> in, size_t count, Pairs* pairs) {
  Header h;
  BRAID_TRY(readHeader(in, CodecId::TopK, count, &h).withContext("topk decode"));
  if (h.param > count)
    return invalidArgument("topk decode: k %u is above the count %zu", h.param, count);
  if (in.size() != messageBytes(h.param))
    return invalidArgument("topk decode: message of %zu bytes where k = %u takes %zu", in.size(),
                           h.param, messageBytes(h.param));
  const auto* base = reinterpret_cast<const unsigned char*>(in.data()) + sizeof(Header);
  *pairs = Pairs{h.param, base, base + 4 * size_t(h.param)};
  // Checked before anything is written: a corrupt index must not write out of bounds.
  for (size_t j = 0; j < pairs->k; ++j) {
    uint32_t i = pairs->index(j);
    if (i >= count || (j > 0 && i <= pairs->index(j - 1)))
      return invalidArgument("topk decode: index %u at position %zu is out of order or range", i,
                             j);
  }
  return Status::Ok();
}

template <typename T>
void scatter(const Pairs& p, void* outv) {
  T* out = static_cast<T*>(outv);
  for (size_t j = 0; j < p.k; ++j) out[p.index(j)] = kernels::ElemTraits<T>::store(p.value(j));
}

}  // namespace

Status TopKCodec::decodeAccumulate(std::span<const std::byte> in, size_t count, float* acc) const {
  Pairs p;
  BRAID_TRY(readPairs(in, count, &p));
  for (size_t j = 0; j < p.k; ++j) acc[p.index(j)] += p.value(j);
  return Status::Ok();
}

Status TopKCodec::decode(std::span<const std::byte> in, size_t count, ncclDataType_t type,
                         void* out) const {
  if (!isCompressibleType(type))
    return invalidArgument("topk decode: datatype %d is not float, half or bfloat16", int(type));
  Pairs p;
  BRAID_TRY(readPairs(in, count, &p));
  if (count > 0) std::memset(out, 0, count * (type == ncclFloat32 ? 4 : 2));  // +0 in all three
  if (type == ncclFloat32)
    scatter<float>(p, out);
  else if (type == ncclFloat16)
    scatter<kernels::Half>(p, out);
  else
    scatter<kernels::BFloat16>(p, out);
  return Status::Ok();
}

ExchangeEstimate estimateExchange(size_t k, size_t count, int nranks) {
  ExchangeEstimate e{};
  if (count == 0 || nranks < 1) return e;
  const double p = nranks;
  e.density = double(std::min(k, count)) / double(count);
  e.unionDensity = 1.0 - std::pow(1.0 - e.density, p);
  e.sparseBytes = (p - 1.0) * double(k) * 8.0;
  e.denseBytes = 2.0 * (p - 1.0) / p * double(count) * 4.0;
  e.sparseSumBytes = e.unionDensity * double(count) * 8.0;
  e.denseCheaper = e.sparseBytes > e.denseBytes;
  return e;
}

}  // namespace braid::compress
