#include "algos/selector.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "algos/cost_model.h"
#include "algos/operation_cost.h"
#include "base/strfmt.h"

namespace braid::algos {
namespace {

// Up to this many ranks the selector prices whole operations (n schedules per candidate, once
// per distinct call); above it, representative ranks.
constexpr int kWholeOperationRanks = 16;
// Prices this close are a tie, and the algorithm listed first wins (registry.cc). Where shaped
// links are priced in a steady stream of calls, several schedules reach the slowest link's rate
// alike; the one-shot schedules then queue their burst at that link, which the model does not
// price: on the emulated cluster at 256 KiB, rhd 6.3-6.9 ms, hier 3.7-4.5 ms, hierpipe 3.35 ms,
// all priced 3.29 ms (bench/results/netcluster_allreduce.md, runs S1-S3).
constexpr double kTiePercent = 1.0;

int collectiveFromName(std::string_view name) {
  static constexpr const char* kNames[] = {"allreduce", "broadcast", "reduce", "allgather",
                                           "reducescatter", "alltoall", "gather", "scatter",
                                           "send", "recv"};
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i)
    if (name.size() == std::strlen(kNames[i]) && strncasecmp(name.data(), kNames[i], name.size()) == 0)
      return i;
  return -2;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(sep, pos);
    if (end == std::string_view::npos) end = s.size();
    std::string_view part = s.substr(pos, end - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) out.push_back(part);
    pos = end + 1;
  }
  return out;
}

}  // namespace

Status AlgoFilter::parse(std::string_view spec, AlgoFilter* out) {
  *out = AlgoFilter{};
  for (std::string_view segment : split(spec, ';')) {
    Rule rule;
    if (size_t colon = segment.find(':'); colon != std::string_view::npos) {
      rule.coll = collectiveFromName(segment.substr(0, colon));
      if (rule.coll < -1)
        return invalidArgument("NCCL_ALGO: unknown collective \"%.*s\"", static_cast<int>(colon), segment.data());
      segment.remove_prefix(colon + 1);
    }
    if (!segment.empty() && segment.front() == '^') {
      rule.exclude = true;
      segment.remove_prefix(1);
    }
    for (std::string_view name : split(segment, ',')) {
      std::string lower(name);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      rule.names.push_back(std::move(lower));
    }
    if (rule.names.empty()) return invalidArgument("NCCL_ALGO: empty list in \"%.*s\"",
                                                   static_cast<int>(spec.size()), spec.data());
    out->rules_.push_back(std::move(rule));
  }
  return Status::Ok();
}

bool AlgoFilter::allows(Collective coll, std::string_view algorithm) const {
  const Rule* rule = nullptr;
  for (const Rule& r : rules_) {
    if (r.coll == static_cast<int>(coll)) rule = &r;  // a collective's own rule wins
    else if (r.coll == -1 && (!rule || rule->coll == -1)) rule = &r;
  }
  if (!rule) return true;
  bool listed = std::find(rule->names.begin(), rule->names.end(), algorithm) != rule->names.end();
  return rule->exclude ? !listed : listed;
}

// Every rank prices the same thing, so every rank picks the same algorithm: the whole operation
// (all ranks' schedules run together, links and uplinks shared) where that is affordable, else
// the slowest of a few representative ranks on their own.
double priceOperation(const Algorithm& algo, const CollArgs& args, double* linksUs) {
  const int n = args.nranks;
  auto view = [&](int r) {
    CollArgs v = args;
    v.rank = r;
    v.inPlace = false;  // ranks decide in-place each for itself: price what they share
    return v;
  };
  if (n <= kWholeOperationRanks) {
    std::vector<Schedule> all;
    all.reserve(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) all.push_back(algo.build(view(r)));
    return estimateMicroseconds(std::span<const Schedule>(all), args.typeSize, *args.topology,
                                needsEveryInput(args.coll), linksUs);
  }
  double worst = 0.0;
  for (int r : {0, n / 2, n - 1, args.root}) {
    if (r < 0 || r >= n) continue;
    worst = std::max(worst, estimateMicroseconds(algo.build(view(r)), args.typeSize, *args.topology, r));
  }
  if (linksUs) *linksUs = worst;
  return worst;
}

Status chooseAlgorithm(const CollArgs& args, const AlgoFilter& filter, std::string_view forced,
                       Choice* out) {
  *out = Choice{};
  std::vector<const Algorithm*> candidates;
  for (const Algorithm* algo : algorithms()) {
    if (algo->compressed() != (args.codec != nullptr) || !algo->supports(args)) continue;
    if (!forced.empty() && algo->name() == forced) {
      out->algorithm = algo;
      out->reason = "forced by BRAID_ALGO";
      if (args.topology) out->estimateUs = priceOperation(*algo, args);
      return Status::Ok();
    }
    candidates.push_back(algo);
  }
  if (candidates.empty())
    return internalError("no algorithm implements %s", collectiveName(args.coll));
  std::vector<const Algorithm*> allowed;
  for (const Algorithm* algo : candidates)
    if (filter.allows(args.coll, algo->name())) allowed.push_back(algo);
  if (allowed.empty()) {
    out->reason = "NCCL_ALGO allows none of them; ";
    allowed = candidates;
  }
  if (!args.topology) {
    out->algorithm = allowed.front();
    out->reason += "no topology to price with";
    return Status::Ok();
  }
  // A tie is broken by the time without the memory bound: where host memory makes two
  // algorithms alike (large local calls), the one whose messages and reductions would finish
  // first still overlaps better (4 local ranks, 8 and 16 MiB: rhd 10-15% faster than the ring in
  // five interleaved rounds, where the bound had priced both alike and the ring was listed first).
  double bestLinks = 0;
  for (const Algorithm* algo : allowed) {
    double links = 0;
    const double worst = priceOperation(*algo, args, &links);
    out->reason += strfmt("%s%.*s %.1f us", out->reason.empty() ? "" : ", ",
                          static_cast<int>(algo->name().size()), algo->name().data(), worst);
    if (links < worst) out->reason += strfmt(" (links %.1f)", links);
    const bool cheaper = worst < out->estimateUs * (1 - kTiePercent / 100);
    const bool tie = worst <= out->estimateUs * (1 + kTiePercent / 100);
    if (!out->algorithm || cheaper || (tie && links < bestLinks * (1 - kTiePercent / 100))) {
      out->algorithm = algo;
      out->estimateUs = worst;
      bestLinks = links;
    }
  }
  return Status::Ok();
}

}  // namespace braid::algos
