#include "accuracy.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "dtype.h"

namespace braid::perf {
namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

}  // namespace

double gradientInput(int rank, size_t i) {
  // Box-Muller on two hashed uniforms in (0, 1].
  const uint64_t h = mix((static_cast<uint64_t>(rank) << 40) ^ i ^ 0x9e3779b97f4a7c15ull);
  const double u1 = (static_cast<double>(h >> 11) + 1.0) * 0x1p-53;
  const double u2 = static_cast<double>(mix(h) >> 11) * 0x1p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

Accuracy compare(const void* result, ncclDataType_t type, const double* exact, size_t count) {
  Accuracy a;
  a.valid = true;
  double e2 = 0, x2 = 0, r2 = 0, dot = 0, sum = 0;
  for (size_t i = 0; i < count; ++i) {
    const double r = loadValue(result, i, type), x = exact[i], d = r - x;
    e2 += d * d;
    x2 += x * x;
    r2 += r * r;
    dot += r * x;
    sum += d;
    if (!(std::fabs(d) <= a.maxAbs)) a.maxAbs = std::fabs(d);  // NaN propagates
  }
  a.relL2 = x2 > 0 ? std::sqrt(e2 / x2) : std::sqrt(e2);
  a.cosine = x2 > 0 && r2 > 0 ? dot / std::sqrt(x2 * r2) : (e2 == 0 ? 1.0 : 0.0);
  a.bias = count ? sum / static_cast<double>(count) : 0;
  return a;
}

bool validCompressLabel(const std::string& label) {
  if (label == "none" || label == "int8" || label == "auto" || label == "topk") return true;
  if (label.rfind("topk:", 0) != 0) return false;
  const char* s = label.c_str() + 5;
  char* end = nullptr;
  const double r = std::strtod(s, &end);
  return end != s && *end == '\0' && r > 0 && r <= 1;
}

void printAccuracyTable(const std::string& label, const std::vector<AccuracyRow>& rows) {
  std::printf(
      "# Accuracy, compression %s: one out-of-place call on a fresh buffer (no residual\n"
      "# from earlier calls) against an exact fp64 AllReduce of the same inputs;\n"
      "# effbusbw = logical bytes of the buffer over the measured time, as busbw\n",
      label.c_str());
  std::printf("# %10s  %12s  %8s  %6s  %9s  %10s  %10s  %10s  %10s\n", "size", "count", "type",
              "redop", "effbusbw", "rel L2", "max abs", "cosine", "bias");
  std::printf("# %10s  %12s  %8s  %6s  %9s\n", "(B)", "(elements)", "", "", "(GB/s)");
  for (const AccuracyRow& r : rows) {
    if (!r.acc.valid) {
      std::printf("# %10zu  %12zu  %8s  %6s  %9.3f  %10s  %10s  %10s  %10s\n", r.bytes, r.count,
                  r.type, r.redop, r.busbw, "N/A", "N/A", "N/A", "N/A");
      continue;
    }
    std::printf("# %10zu  %12zu  %8s  %6s  %9.3f  %10.3e  %10.3e  %10.6f  %10.2e\n", r.bytes,
                r.count, r.type, r.redop, r.busbw, r.acc.relL2, r.acc.maxAbs, r.acc.cosine,
                r.acc.bias);
  }
  std::fflush(stdout);
}

}  // namespace braid::perf
