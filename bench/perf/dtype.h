// Data types as the benchmark sees them: names (nccl-tests spellings plus aliases), the range in
// which integers are exact, and conversion of buffer elements to and from double.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "nccl.h"

namespace braid::perf {

struct TypeInfo {
  ncclDataType_t type;
  const char* name;  // as printed in the table
  int size;
  bool isFloat;
  bool isSigned;
  double exactMax;   // every integer in [0, exactMax] is representable
  int mantissaBits;  // for floats: the rounding a premultiplied avg may introduce
};

std::span<const TypeInfo> allTypes();
const TypeInfo& typeInfo(ncclDataType_t);
const TypeInfo* findType(std::string_view name);  // nullptr when unknown

struct OpInfo {
  ncclRedOp_t op;
  const char* name;
};
std::span<const OpInfo> allOps();
const OpInfo* findOp(std::string_view name);
const char* opName(ncclRedOp_t);

// A callable as a plain function pointer plus context, so the hot loops stay monomorphic per
// type without templates leaking into the header.
using ValueFn = double (*)(const void* ctx, size_t i);

void fillValues(void* buf, size_t n, ncclDataType_t, ValueFn, const void* ctx);
double loadValue(const void* buf, size_t i, ncclDataType_t);
// Elements of buf that differ from want(i) by more than relTol * |want(i)|.
size_t countWrong(const void* buf, size_t n, ncclDataType_t, ValueFn want, const void* ctx,
                  double relTol);

}  // namespace braid::perf
