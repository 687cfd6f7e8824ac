#include "core/plan/compression.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "algos/algorithm.h"
#include "base/env.h"
#include "base/log.h"
#include "base/strfmt.h"
#include "compress/int8_block.h"
#include "compress/topk.h"
#include "compress/variables.h"
#include "core/comm/comm.h"
#include "core/exec/executor.h"
#include "core/variables.h"
#include "kernels/reduce.h"

namespace braid {
namespace {

std::atomic<uint64_t> nextCommId{1};

const char* codecName(int codec) {
  switch (codec) {
    case braidCompressNone: return "none";
    case braidCompressInt8: return "int8";
    case braidCompressTopK: return "topk";
    case braidCompressAuto: return "auto";
  }
  return "?";
}

// What ranks compare (signature.h): the codec in bits 8-9, a hash of the parameters that shape
// its messages below. Feedback is each rank's own business and stays out.
uint16_t compressTag(const CompressPolicy& p, int codec) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  if (codec == braidCompressInt8) {
    mix(static_cast<uint64_t>(p.blockSize));
    mix(static_cast<uint64_t>(p.stochasticRounding != 0));
  } else {
    uint64_t bits;
    std::memcpy(&bits, &p.topkRatio, sizeof bits);
    mix(bits);
  }
  return static_cast<uint16_t>((codec << 8) | ((h ^ (h >> 32)) & 0xff));
}

// Whether every rank shares one host: compression then only costs time.
bool allOneHost(const algos::Topology& t) {
  if (t.groupOf.empty()) return false;
  for (int g : t.groupOf[0])
    if (g != t.groupOf[0][0]) return false;
  return true;
}

}  // namespace

CompressPolicy defaultCompressPolicy() {
  CompressPolicy p{};
  p.codec = braidCompressNone;
  p.topkRatio = 0.01;
  p.blockSize = static_cast<int>(env::getInt(env::kBraidCompressBlock));
  p.stochasticRounding = 0;
  p.errorFeedback = env::getInt(env::kBraidCompressFeedback) != 0 ? 1 : 0;
  p.minBytes = static_cast<size_t>(std::max<int64_t>(0, env::getInt(env::kBraidCompressMinBytes)));
  return p;
}

Status parseCompressPolicy(std::string_view text, const char* what, CompressPolicy* out) {
  std::string_view name = text, arg;
  if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    arg = text.substr(colon + 1);
  }
  auto bad = [&] {
    return invalidArgument("%s=\"%.*s\": expected none, int8, topk, topk:<ratio in (0, 1]> or auto",
                           what, static_cast<int>(text.size()), text.data());
  };
  if (name == "none" || name.empty())
    out->codec = braidCompressNone;
  else if (name == "int8")
    out->codec = braidCompressInt8;
  else if (name == "auto")
    out->codec = braidCompressAuto;
  else if (name == "topk")
    out->codec = braidCompressTopK;
  else
    return bad();
  if (!arg.empty()) {
    if (out->codec != braidCompressTopK) return bad();
    std::string s(arg);
    char* end = nullptr;
    double ratio = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0' || !(ratio > 0.0 && ratio <= 1.0)) return bad();
    out->topkRatio = ratio;
  }
  return checkCompressPolicy(*out, what);
}

Status checkCompressPolicy(const CompressPolicy& p, const char* what) {
  if (p.codec < braidCompressNone || p.codec > braidCompressAuto)
    return invalidArgument("%s: codec %d is not a braidCompressCodec_t", what,
                           static_cast<int>(p.codec));
  if (!(p.topkRatio > 0.0 && p.topkRatio <= 1.0))
    return invalidArgument("%s: topkRatio %g is not in (0, 1]", what, p.topkRatio);
  if (p.blockSize < static_cast<int>(compress::Int8BlockOptions::kMinBlock) ||
      p.blockSize > static_cast<int>(compress::Int8BlockOptions::kMaxBlock))
    return invalidArgument("%s: blockSize %d is not in [32, 256] (BRAID_COMPRESS_BLOCK)", what,
                           p.blockSize);
  if (p.stochasticRounding != 0 && p.stochasticRounding != 1)
    return invalidArgument("%s: stochasticRounding %d is neither 0 nor 1", what,
                           p.stochasticRounding);
  if (p.errorFeedback != 0 && p.errorFeedback != 1)
    return invalidArgument("%s: errorFeedback %d is neither 0 nor 1", what, p.errorFeedback);
  return Status::Ok();
}

std::string describeCompressPolicy(const CompressPolicy& p) {
  std::string out = codecName(p.codec);
  if (p.codec == braidCompressTopK)
    out += strfmt(" (ratio %g", p.topkRatio);
  else if (p.codec == braidCompressInt8 || p.codec == braidCompressAuto)
    out += strfmt(" (block %d, %s", p.blockSize, p.stochasticRounding ? "stochastic" : "nearest");
  else
    return out;
  return out +
         strfmt(", %s, from %zu B)", p.errorFeedback ? "feedback" : "no feedback", p.minBytes);
}

compress::ResidualStore& residualStore() {
  static compress::ResidualStore* store =
      new compress::ResidualStore(compress::ResidualStore::capacityFromEnv());
  return *store;
}

CommCompression::CommCompression()
    : id_(nextCommId.fetch_add(1)), default_(defaultCompressPolicy()) {
  defaultOn_.store(default_.codec != braidCompressNone);
}

CommCompression::~CommCompression() { residualStore().resetComm(id_); }

CompressPolicy CommCompression::defaultPolicy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return default_;
}

void CommCompression::setDefaultPolicy(const CompressPolicy& policy) {
  std::lock_guard<std::mutex> lock(mu_);
  default_ = policy;
  defaultOn_.store(policy.codec != braidCompressNone);
}

Status CommCompression::codecFor(const CompressPolicy& p, const compress::Codec** out) {
  const int codec = p.codec == braidCompressAuto ? braidCompressInt8 : p.codec;
  std::lock_guard<std::mutex> lock(mu_);
  for (const CodecEntry& e : codecs_) {
    if (e.codec != codec) continue;
    if (codec == braidCompressTopK
            ? e.ratio == p.topkRatio
            : e.blockSize == p.blockSize && e.stochastic == p.stochasticRounding) {
      *out = e.instance.get();
      return Status::Ok();
    }
  }
  CodecEntry e{codec, p.topkRatio, p.blockSize, p.stochasticRounding, nullptr};
  if (codec == braidCompressTopK) {
    std::unique_ptr<compress::TopKCodec> c;
    BRAID_TRY(compress::TopKCodec::create(compress::TopKOptions{p.topkRatio}, &c));
    e.instance = std::move(c);
  } else {
    compress::Int8BlockOptions o;
    o.blockSize = static_cast<uint32_t>(p.blockSize);
    o.rounding =
        p.stochasticRounding ? compress::Rounding::Stochastic : compress::Rounding::Nearest;
    std::unique_ptr<compress::Int8BlockCodec> c;
    BRAID_TRY(compress::Int8BlockCodec::create(o, &c));
    e.instance = std::move(c);
  }
  *out = e.instance.get();
  codecs_.push_back(std::move(e));
  return Status::Ok();
}

bool CommCompression::firstAutoDecision(size_t count, size_t typeSize, bool average) {
  const uint64_t key = (static_cast<uint64_t>(count) << 5) ^ (typeSize << 1) ^ (average ? 1 : 0);
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t k : autoLogged_)
    if (k == key) return false;
  if (autoLogged_.size() < 256) autoLogged_.push_back(key);
  return true;
}

void CommCompression::logFallback(int rank, const std::string& why) {
  BRAID_INFO(kInit,
             "rank %d: compression requested but %s: the call runs exact "
             "(logged once per communicator)",
             rank, why.c_str());
}

Status applyCompression(ncclComm* comm, const CompressCall& c, algos::CollArgs* args, Plan* plan) {
  if (!c.policy && !comm->compression.defaultCompresses()) return Status::Ok();  // the usual case
  CompressPolicy policy = c.policy ? *c.policy : comm->compression.defaultPolicy();
  if (policy.codec == braidCompressNone) return Status::Ok();
  CommCompression& cc = comm->compression;
  const size_t bytes = args->count * args->typeSize;
  const char* call = algos::collectiveName(args->coll);
  // The call stays exact; why() says why, for the communicator's first such call.
  auto exact = [&](auto why) {
    cc.noteFallback(comm->rank, why);
    return Status::Ok();
  };
  if (args->coll != algos::Collective::AllReduce)
    return exact([&] { return strfmt("%s is not ncclAllReduce", call); });
  if (!c.sumOrAvg)
    return exact([] { return std::string("the op is neither ncclSum nor ncclAvg"); });
  if (!compress::isCompressibleType(c.type))
    return exact(
        [&] { return strfmt("%s is not float, half or bfloat16", kernels::typeName(c.type)); });
  if (args->nranks == 1) return exact([] { return std::string("the communicator has one rank"); });
  if (bytes < policy.minBytes)
    return exact([&] {
      return strfmt("%zu bytes is below the minimum of %zu (BRAID_COMPRESS_MIN_BYTES)", bytes,
                    policy.minBytes);
    });
  const compress::Codec* codec = nullptr;
  BRAID_TRY(cc.codecFor(policy, &codec));
  if (policy.codec == braidCompressTopK) {
    const auto* topk = static_cast<const compress::TopKCodec*>(codec);
    const compress::ExchangeEstimate e =
        compress::estimateExchange(topk->keptCount(args->count), args->count, args->nranks);
    if (e.denseCheaper)
      return exact([&] {
        return strfmt(
            "top-k at ratio %g on %d ranks receives %.0f bytes, more than a dense exchange's %.0f",
            policy.topkRatio, args->nranks, e.sparseBytes, e.denseBytes);
      });
  }
  algos::CollArgs compressed = *args;
  compressed.codec = codec;
  compressed.feedback = policy.errorFeedback != 0;
  compressed.type = c.type;
  if (policy.codec == braidCompressAuto) {
    if (allOneHost(comm->topology))
      return exact(
          [] { return std::string("auto never compresses between ranks that share memory"); });
    std::shared_ptr<const algos::Schedule> exactSchedule, compressedSchedule;
    double exactUs = 0, compressedUs = 0;
    BRAID_TRY(comm->schedule(*args, &exactSchedule, &exactUs));
    BRAID_TRY(comm->schedule(compressed, &compressedSchedule, &compressedUs));
    const bool gain = compressedUs < exactUs;
    // The line that says what runs (logged after both choices, so it is the last for the call).
    if (cc.firstAutoDecision(args->count, args->typeSize, args->average))
      BRAID_INFO(kTuning,
                 "%s count %zu x %zu B, %d ranks: %s (auto compression: exact %s %.1f us, "
                 "compressed %s %.1f us)",
                 call, args->count, args->typeSize, args->nranks,
                 (gain ? compressedSchedule : exactSchedule)->algorithm.c_str(),
                 exactSchedule->algorithm.c_str(), exactUs, compressedSchedule->algorithm.c_str(),
                 compressedUs);
    if (!gain)
      return exact([&] {
        return strfmt("auto: the cost model prices it exact at %.1f us, compressed at %.1f us",
                      exactUs, compressedUs);
      });
  }
  *args = compressed;
  plan->codec = codec;
  plan->seed =
      (cc.seed.fetch_add(1, std::memory_order_relaxed) << 16) ^ static_cast<uint64_t>(comm->rank);
  plan->compressTag =
      compressTag(policy, policy.codec == braidCompressAuto ? braidCompressInt8 : policy.codec);
  if (compressed.feedback)
    plan->residual = residualStore().acquire(
        {cc.id(), reinterpret_cast<uintptr_t>(c.sendbuff), args->count, c.type});
  cc.compressedCalls.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace braid
