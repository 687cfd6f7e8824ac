// Reduction operators of one communicator: NCCL's five built-in ones and the PreMulSum operators
// ncclRedOpCreatePreMulSum makes. User handles carry a per-communicator salt, so a handle from
// another communicator (or one destroyed) is recognised instead of silently misused.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "braid/braid.h"
#include "nccl.h"

namespace braid {

// What a reduction does, resolved from the handle at call time.
struct ResolvedOp {
  ncclRedOp_t reduce = ncclSum;  // the built-in op the reduce steps apply (Avg and PreMulSum: Sum)
  bool average = false;
  bool preMul = false;              // inputs are multiplied by the scalar first
  uint64_t scalarBits = 0;          // HostImmediate: the scalar's bytes, copied at creation
  const void* scalarPtr = nullptr;  // Device residence: read when the collective runs
  // braidRedOpCreateCompressed: Sum or Avg with this compression policy.
  bool compressed = false;
  braidCompressPolicy_t compress{};
};

class RedOpTable {
 public:
  RedOpTable();
  Status create(const void* scalar, ncclDataType_t type, ncclScalarResidence_t residence,
                ncclRedOp_t* out);
  // Sum or Avg (base) with a compression policy (checked by the caller); any data type.
  Status createCompressed(ncclRedOp_t base, const braidCompressPolicy_t& policy, ncclRedOp_t* out);
  Status destroy(ncclRedOp_t op);
  Status resolve(ncclRedOp_t op, ncclDataType_t type, ResolvedOp* out) const;

 private:
  struct Entry {
    bool live = false;
    bool anyType = false;  // compressed ops work on every type (exact where not compressible)
    ncclDataType_t type = ncclFloat32;
    ResolvedOp op;
  };
  Status find(ncclRedOp_t op, const Entry** entry) const;
  Status allocate(ncclRedOp_t* out, Entry** entry);  // under mu_

  uint32_t salt_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
};

}  // namespace braid
