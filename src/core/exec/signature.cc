#include "core/exec/signature.h"

#include "base/strfmt.h"
#include "core/exec/executor.h"
#include "kernels/reduce.h"

namespace braid {
namespace {

constexpr uint64_t kNoOp = 15, kPreMul = 5, kNoRoot = 0xfff, kCompressed = 0x800;
constexpr uint64_t kCountMask = (1ull << 40) - 1;

uint64_t pack(algos::Collective coll, ncclDataType_t type, uint64_t op, uint64_t root,
              size_t count) {
  return (static_cast<uint64_t>(coll) << 60) | (static_cast<uint64_t>(type) << 56) | (op << 52) |
         ((root & 0xfff) << 40) | (count & kCountMask);
}

uint64_t opField(const Plan& p) {
  if (!p.reduces) return kNoOp;
  return static_cast<int>(p.userOp) < ncclNumOps ? static_cast<uint64_t>(p.userOp) : kPreMul;
}

uint64_t rootField(int root) { return root < 0 ? kNoRoot : static_cast<uint64_t>(root); }

// AllReduce has no root: its root field says how the call is compressed instead, so ranks
// that disagree on compression (codec or its parameters) fail instead of misreading bytes.
uint64_t rootField(const Plan& p) {
  if (p.coll == algos::Collective::AllReduce && p.compressTag != 0)
    return kCompressed | (p.compressTag & 0x3ff);
  return rootField(p.root);
}

}  // namespace

uint64_t signatureOf(const Plan& p) {
  return pack(p.coll, p.type, opField(p), rootField(p), p.count);
}

uint64_t expectedSignature(const Plan& p, int myRank) {
  using algos::Collective;
  if (p.coll == Collective::Send)
    return pack(Collective::Recv, p.type, opField(p), rootField(myRank), p.count);
  if (p.coll == Collective::Recv)
    return pack(Collective::Send, p.type, opField(p), rootField(myRank), p.count);
  return signatureOf(p);
}

std::string describeSignature(uint64_t s) {
  using algos::Collective;
  const auto coll = static_cast<Collective>(s >> 60);
  const auto type = static_cast<ncclDataType_t>((s >> 56) & 0xf);
  const uint64_t op = (s >> 52) & 0xf, root = (s >> 40) & 0xfff;
  std::string out =
      strfmt("%s(count=%llu, %s", algos::collectiveName(coll),
             static_cast<unsigned long long>(s & kCountMask), kernels::typeName(type));
  if (op == kPreMul)
    out += ", premulsum";
  else if (op != kNoOp)
    out += strfmt(", %s", kernels::opName(static_cast<ncclRedOp_t>(op)));
  if (coll == Collective::AllReduce && root != kNoRoot && (root & kCompressed)) {
    const uint64_t codec = (root >> 8) & 3;
    out += strfmt(", compressed %s/%02llx",
                  codec == 1   ? "int8"
                  : codec == 2 ? "topk"
                               : "?",
                  static_cast<unsigned long long>(root & 0xff));
  } else if (root != kNoRoot) {
    const bool p2p = coll == Collective::Send || coll == Collective::Recv;
    out += strfmt(", %s=%llu", p2p ? "peer" : "root", static_cast<unsigned long long>(root));
  }
  return out + ")";
}

}  // namespace braid
