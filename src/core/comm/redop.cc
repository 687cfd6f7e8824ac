#include "core/comm/redop.h"

#include <cstring>
#include <random>

#include "kernels/reduce.h"

namespace braid {
namespace {

// Handle layout above ncclNumOps: 14 bits of salt, 16 bits of index (stays below INT_MAX).
constexpr uint32_t kIndexBits = 16;
constexpr uint32_t kSaltMask = (1u << 14) - 1;

}  // namespace

RedOpTable::RedOpTable() : salt_(std::random_device{}() & kSaltMask) {}

Status RedOpTable::create(const void* scalar, ncclDataType_t type, ncclScalarResidence_t residence,
                          ncclRedOp_t* out) {
  if (!out) return invalidArgument("op is NULL");
  if (!scalar) return invalidArgument("scalar is NULL");
  if (static_cast<int>(type) < 0 || type >= ncclNumTypes)
    return invalidArgument("datatype %d is not an NCCL data type", static_cast<int>(type));
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
    return invalidArgument("residence %d is neither ncclScalarDevice nor ncclScalarHostImmediate",
                           static_cast<int>(residence));
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = nullptr;
  BRAID_TRY(allocate(out, &e));
  e->type = type;
  e->op.preMul = true;
  // On host memory "device" residence means a host pointer read when the collective runs.
  if (residence == ncclScalarHostImmediate)
    std::memcpy(&e->op.scalarBits, scalar, kernels::typeSize(type));
  else
    e->op.scalarPtr = scalar;
  return Status::Ok();
}

Status RedOpTable::createCompressed(ncclRedOp_t base, const braidCompressPolicy_t& policy,
                                    ncclRedOp_t* out) {
  if (!out) return invalidArgument("op is NULL");
  if (base != ncclSum && base != ncclAvg)
    return invalidArgument("base op %d: only ncclSum and ncclAvg can be compressed",
                           static_cast<int>(base));
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = nullptr;
  BRAID_TRY(allocate(out, &e));
  e->anyType = true;
  e->op.average = base == ncclAvg;
  e->op.compressed = true;
  e->op.compress = policy;
  return Status::Ok();
}

Status RedOpTable::allocate(ncclRedOp_t* out, Entry** entry) {
  size_t index = 0;
  while (index < entries_.size() && entries_[index].live) ++index;
  if (index >= (1u << kIndexBits)) return invalidUsage("too many live reduction operators (65536)");
  if (index == entries_.size()) entries_.emplace_back();
  Entry& e = entries_[index];
  e = Entry{};
  e.live = true;
  *out = static_cast<ncclRedOp_t>(ncclNumOps + ((salt_ << kIndexBits) | index));
  *entry = &e;
  return Status::Ok();
}

Status RedOpTable::find(ncclRedOp_t op, const Entry** entry) const {
  const int64_t v = static_cast<int64_t>(op) - ncclNumOps;
  const uint32_t salt = static_cast<uint32_t>(v >> kIndexBits),
                 index = v & ((1u << kIndexBits) - 1);
  if (v < 0 || salt != salt_)
    return invalidArgument(
        "op %d is neither a built-in reduction nor one created on this "
        "communicator",
        static_cast<int>(op));
  if (index >= entries_.size() || !entries_[index].live)
    return invalidArgument("op %d was destroyed (ncclRedOpDestroy)", static_cast<int>(op));
  *entry = &entries_[index];
  return Status::Ok();
}

Status RedOpTable::destroy(ncclRedOp_t op) {
  if (static_cast<int>(op) >= 0 && static_cast<int>(op) < ncclNumOps)
    return invalidArgument("op %d is a built-in reduction and cannot be destroyed",
                           static_cast<int>(op));
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = nullptr;
  BRAID_TRY(find(op, &e));
  const_cast<Entry*>(e)->live = false;
  return Status::Ok();
}

Status RedOpTable::resolve(ncclRedOp_t op, ncclDataType_t type, ResolvedOp* out) const {
  const int v = static_cast<int>(op);
  if (v >= 0 && v < ncclNumOps) {
    *out = ResolvedOp{};
    out->reduce = op == ncclAvg ? ncclSum : op;
    out->average = op == ncclAvg;
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = nullptr;
  BRAID_TRY(find(op, &e));
  if (!e->anyType && e->type != type)
    return invalidArgument("op %d was created for %s, not %s", v, kernels::typeName(e->type),
                           kernels::typeName(type));
  *out = e->op;
  return Status::Ok();
}

}  // namespace braid
