// A declarative sweep over NCCL's collective surface on host memory. Each collective is one row
// of kCollectives: the sizes of its buffers, how they alias when the call is in place (NCCL's
// rules), and where each element of recvbuff must come from (a rank's input element, the
// reduction of every rank's input element, or nothing: left as it was). One checker then walks
// every byte a rank allocated: recvbuff against that description, sendbuff (where it is not
// also recvbuff) unchanged, and guard bytes around each allocation untouched.
//
// Inputs are allreduce_check.h's: a deterministic function of (type, op, rank, element), so each
// rank computes its expectations alone. Copies must be bit-exact for every type; reductions
// use allreduce_check.h's bound (integers bit-exact; floats within (nranks + 2) unit roundoffs
// of the sum of magnitudes for sum/avg, 2 (nranks + 1) of the result for prod, exact for
// max/min, against an fp64 reference of the rounded inputs).
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/allreduce_check.h"
#include "kernels/reduce.h"
#include "nccl.h"

namespace braid::testing {

// The stream every call of the sweep passes: none (blocking calls), or a Braid host stream
// (include/braid/braid.h), per thread.
inline thread_local cudaStream_t callStream = nullptr;

// One call as one rank makes it. `op` is what the call passes: ncclSum for collectives that do
// not reduce, or a PreMulSum handle.
struct CallArgs {
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;  // -1 for collectives without one
  size_t count;
  int rank, nranks;
};

// Where an element of recvbuff must come from.
struct Want {
  enum Kind { Keep, Copy, Reduced } kind = Keep;
  int rank = 0;      // Copy: whose input
  size_t index = 0;  // Copy: which element of that input; Reduced: which element of every input
};
inline Want keep() { return {}; }
inline Want copyOf(int rank, size_t index) { return {Want::Copy, rank, index}; }
inline Want reducedAt(size_t index) { return {Want::Reduced, 0, index}; }

// In place, the smaller buffer lies `offset` elements into the other.
struct Alias {
  bool recvHoldsSend;
  size_t offset;
};

struct CollSpec {
  const char* name;
  bool reduces;
  bool rooted;
  bool outOfPlace;  // has an out-of-place form (ncclBcast has one buffer)
  bool blocked;     // buffers hold nranks blocks of `count` (the large count is split)
  size_t (*sendCount)(const CallArgs&);
  size_t (*recvCount)(const CallArgs&);
  Alias (*alias)(const CallArgs&);
  Want (*want)(const CallArgs&, size_t i);
  ncclResult_t (*call)(const CallArgs&, const void* send, void* recv, ncclComm_t comm);
};

namespace spec {

inline size_t one(const CallArgs& a) { return a.count; }
inline size_t all(const CallArgs& a) { return a.count * static_cast<size_t>(a.nranks); }
inline Alias same(const CallArgs&) { return {true, 0}; }
inline bool isRoot(const CallArgs& a) { return a.rank == a.root; }

// A ring of pairs: every rank sends to the next and receives from the previous, in one group.
inline ncclResult_t sendRecvRing(const CallArgs& a, const void* send, void* recv, ncclComm_t comm) {
  const int next = (a.rank + 1) % a.nranks, prev = (a.rank + a.nranks - 1) % a.nranks;
  ncclResult_t res = ncclGroupStart();
  if (res != ncclSuccess) return res;
  ncclResult_t s = ncclSend(send, a.count, a.type, next, comm, callStream);
  ncclResult_t r = ncclRecv(recv, a.count, a.type, prev, comm, callStream);
  res = ncclGroupEnd();
  return s != ncclSuccess ? s : r != ncclSuccess ? r : res;
}

}  // namespace spec

// Columns: name, reduces, rooted, outOfPlace, blocked, sendCount, recvCount, alias, want, call.
inline const std::array<CollSpec, 10> kCollectives = {{
    {"AllReduce", true, false, true, false, spec::one, spec::one, spec::same,
     [](const CallArgs&, size_t i) { return reducedAt(i); },
     [](const CallArgs& a, const void* s, void* r, ncclComm_t c) {
       return ncclAllReduce(s, r, a.count, a.type, a.op, c, callStream);
     }},
    {"Broadcast", false, true, true, false, spec::one, spec::one, spec::same,
     [](const CallArgs& a, size_t i) { return copyOf(a.root, i); },
     [](const CallArgs& a, const void* s, void* r, ncclComm_t c) {
       return ncclBroadcast(s, r, a.count, a.type, a.root, c, callStream);
     }},
    {"Bcast", false, true, false, false, spec::one, spec::one, spec::same,
     [](const CallArgs& a, size_t i) { return copyOf(a.root, i); },
     [](const CallArgs& a, const void*, void* r, ncclComm_t c) {
       return ncclBcast(r, a.count, a.type, a.root, c, callStream);
     }},
    // recvbuff means nothing off the root: it must be left alone (in place it is the input).
    {"Reduce", true, true, true, false, spec::one, spec::one, spec::same,
     [](const CallArgs& a, size_t i) { return spec::isRoot(a) ? reducedAt(i) : keep(); },
     [](const CallArgs& a, const void* s, void* r, ncclComm_t c) {
       return ncclReduce(s, r, a.count, a.type, a.op, a.root, c, callStream);
     }},
    {"AllGather", false, false, true, true, spec::one, spec::all,
     [](const CallArgs& a) {
       return Alias{true, a.rank * a.count};
     },
     [](const CallArgs& a, size_t i) { return copyOf(static_cast<int>(i / a.count), i % a.count); },
     [](const CallArgs& a, const void* s, void* r, ncclComm_t c) {
       return ncclAllGather(s, r, a.count, a.type, c, callStream);
     }},
    {"ReduceScatter", true, false, true, true, spec::all, spec::one,
     [](const CallArgs& a) {
       return Alias{false, a.rank * a.count};
     },
     [](const CallArgs& a, size_t i) { return reducedAt(a.rank * a.count + i); },
     [](const CallArgs& a, const void* s, void* r, ncclComm_t c) {
       return ncclReduceScatter(s, r, a.count, a.type, a.op, c, callStream);
     }},
    {"AlltoAll", false, false, true, true, spec::all, spec::all, spec::same,
     [](const CallArgs& a, size_t i) {
       return copyOf(static_cast<int>(i / a.count), a.rank * a.count + i % a.count);
     },
     [](const CallArgs& a, const void* s, void* r, ncclComm_t c) {
       return ncclAlltoAll(s, r, a.count, a.type, c, callStream);
     }},
    // In place is defined at the root; the other ranks lay their buffers out the same way, so
    // their recvbuff around the input must stay untouched too.
    {"Gather", false, true, true, true, spec::one, spec::all,
     [](const CallArgs& a) {
       return Alias{true, a.root * a.count};
     },
     [](const CallArgs& a, size_t i) {
       return spec::isRoot(a) ? copyOf(static_cast<int>(i / a.count), i % a.count) : keep();
     },
     [](const CallArgs& a, const void* s, void* r, ncclComm_t c) {
       return ncclGather(s, r, a.count, a.type, a.root, c, callStream);
     }},
    {"Scatter", false, true, true, true, spec::all, spec::one,
     [](const CallArgs& a) {
       return Alias{false, a.root * a.count};
     },
     [](const CallArgs& a, size_t i) { return copyOf(a.root, a.rank * a.count + i); },
     [](const CallArgs& a, const void* s, void* r, ncclComm_t c) {
       return ncclScatter(s, r, a.count, a.type, a.root, c, callStream);
     }},
    {"SendRecv", false, false, true, false, spec::one, spec::one, spec::same,
     [](const CallArgs& a, size_t i) { return copyOf((a.rank + a.nranks - 1) % a.nranks, i); },
     spec::sendRecvRing},
}};

inline const CollSpec& collective(std::string_view name) {
  for (const CollSpec& spec : kCollectives)
    if (name == spec.name) return spec;
  std::abort();  // a typo in a test
}

struct SweepCase {
  const CollSpec* spec;
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;
  size_t count;
  bool inPlace;
};

inline std::string describe(const SweepCase& c) {
  std::string s = std::string(c.spec->name) + " " + kernels::typeName(c.type);
  if (c.spec->reduces) s += std::string("/") + kernels::opName(c.op);
  if (c.spec->rooted) s += " root=" + std::to_string(c.root);
  return s + " count=" + std::to_string(c.count) + (c.inPlace ? " in-place" : " out-of-place");
}

// What to sweep. Counts 0, 1, 7 and nranks - 1 run every (type, op) pair, or, where the
// transport rather than the arithmetic is under test, the representative ones below; a few
// thousand elements run the representative pairs; both at every root and in both in-place
// forms. Large counts run two pairs at the last root, with ~1M elements in the largest buffer.
struct SweepPlan {
  bool everyTypeAndOp = true;
  bool fewThousand = true;  // include a count of a few thousand among the small ones
  bool large = false;
};

// Every element size, integers and floats, every op once.
inline constexpr std::pair<ncclDataType_t, ncclRedOp_t> kRepresentative[] = {
    {ncclInt8, ncclMax},    {ncclUint64, ncclProd},  {ncclFloat16, ncclAvg},
    {ncclFloat32, ncclSum}, {ncclBfloat16, ncclMin}, {ncclFloat8e5m2, ncclSum}};
inline constexpr std::pair<ncclDataType_t, ncclRedOp_t> kLargePairs[] = {{ncclInt32, ncclSum},
                                                                         {ncclBfloat16, ncclAvg}};

inline constexpr size_t kFewThousand = 3001;
inline constexpr size_t kLargeElements = (size_t{1} << 20) + 3;

inline std::vector<SweepCase> sweepCases(int nranks, SweepPlan plan) {
  std::vector<SweepCase> cases;
  const std::vector<size_t> small = {0, 1, 7, static_cast<size_t>(nranks - 1)};
  std::vector<std::pair<ncclDataType_t, ncclRedOp_t>> every;
  for (int t = 0; t < ncclNumTypes; ++t)
    for (int op = 0; op < ncclNumOps; ++op)
      every.emplace_back(static_cast<ncclDataType_t>(t), static_cast<ncclRedOp_t>(op));
  using Pairs = std::span<const std::pair<ncclDataType_t, ncclRedOp_t>>;
  const Pairs smallPairs = plan.everyTypeAndOp ? Pairs(every) : Pairs(kRepresentative);
  for (const CollSpec& spec : kCollectives) {
    auto add = [&](ncclDataType_t type, ncclRedOp_t op, int root, size_t count) {
      if (spec.outOfPlace) cases.push_back({&spec, type, op, root, count, false});
      cases.push_back({&spec, type, op, root, count, true});
    };
    auto sweep = [&](Pairs pairs, std::span<const size_t> counts) {
      ncclDataType_t previous = ncclNumTypes;
      for (auto [type, op] : pairs) {
        // A collective that does not reduce runs each type once.
        if (!spec.reduces && type == previous) continue;
        previous = type;
        for (int root = 0; root < (spec.rooted ? nranks : 1); ++root)
          for (size_t count : counts)
            add(type, spec.reduces ? op : ncclSum, spec.rooted ? root : -1, count);
      }
    };
    sweep(smallPairs, small);
    if (plan.fewThousand) sweep(Pairs(kRepresentative), std::span(&kFewThousand, 1));
    if (!plan.large) continue;
    const size_t large = spec.blocked ? kLargeElements / nranks : kLargeElements;
    for (auto [type, op] : kLargePairs)
      add(type, spec.reduces ? op : ncclSum, spec.rooted ? nranks - 1 : -1, large);
  }
  return cases;
}

// ---- running one case ----

// A PreMulSum operator a rank created for a case, and the scalar its result must show.
struct PreMul {
  ncclRedOp_t handle;
  double scalar;
};

namespace detail {

constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuard = 0x5C, kUntouched = 0xAB;

// One allocation with guard bytes on both sides; `sendAt`/`recvAt` say which logical buffer
// starts where in it (in elements), npos when it holds none.
struct Allocation {
  static constexpr size_t npos = ~size_t{0};
  std::vector<unsigned char> bytes;
  size_t elems = 0, sendAt = npos, recvAt = npos;
  unsigned char* data() { return bytes.data() + kGuardBytes; }
};

}  // namespace detail

// One case on one rank: its buffers, the call, and the check of everything it allocated.
class CaseRun {
 public:
  using Allocation = detail::Allocation;

  CaseRun(const SweepCase& c, int rank, int nranks, std::optional<PreMul> preMul = {})
      : c_(c),
        args_{c.type, c.spec->reduces ? c.op : ncclSum, c.root, c.count, rank, nranks},
        inputOp_(preMul ? ncclSum : args_.op),
        preMul_(preMul),
        size_(kernels::typeSize(c.type)),
        sendCount_(c.spec->sendCount(args_)),
        recvCount_(c.spec->recvCount(args_)) {
    using namespace detail;
    if (preMul) args_.op = preMul->handle;
    if (c.inPlace) {
      const Alias al = c.spec->alias(args_);
      Allocation& a = allocs_.emplace_back();
      a.elems = al.recvHoldsSend ? recvCount_ : sendCount_;
      a.sendAt = al.recvHoldsSend ? al.offset : 0;
      a.recvAt = al.recvHoldsSend ? 0 : al.offset;
    } else {
      allocs_.push_back({{}, sendCount_, 0, Allocation::npos});
      allocs_.push_back({{}, recvCount_, Allocation::npos, 0});
    }
    for (Allocation& a : allocs_) {
      a.bytes.assign(a.elems * size_ + 2 * kGuardBytes, kGuard);
      for (size_t p = 0; p < a.elems; ++p) writeInitial(a, p);
      if (a.sendAt != Allocation::npos) send_ = a.data() + a.sendAt * size_;
      if (a.recvAt != Allocation::npos) recv_ = a.data() + a.recvAt * size_;
    }
  }

  ncclResult_t call(ncclComm_t comm) { return c_.spec->call(args_, send_, recv_, comm); }

  // Back to the state before the call, same buffers: for calling it again.
  void reset() {
    for (Allocation& a : allocs_)
      for (size_t p = 0; p < a.elems; ++p) writeInitial(a, p);
  }

  // "" when every allocated byte holds what it should. Allocations of more than 200000
  // elements are checked on a stride of 61 plus 4096 elements at each end; guards always.
  std::string check() {
    using namespace detail;
    std::vector<unsigned char> expect(size_);
    for (Allocation& a : allocs_) {
      for (size_t g = 0; g < kGuardBytes; ++g)
        if (a.bytes[g] != kGuard || a.bytes[a.bytes.size() - 1 - g] != kGuard)
          return "a guard byte around a buffer was overwritten";
      const size_t stride = a.elems > 200000 ? 61 : 1;
      for (size_t p = 0; p < a.elems; ++p) {
        if (stride > 1 && p % stride != 0 && p >= 4096 && p + 4096 < a.elems) continue;
        if (std::string e = checkElement(a, p, expect.data()); !e.empty()) return e;
      }
    }
    return "";
  }

 private:
  bool inSend(const Allocation& a, size_t p) const {
    return a.sendAt != Allocation::npos && p >= a.sendAt && p - a.sendAt < sendCount_;
  }
  bool inRecv(const Allocation& a, size_t p) const {
    return a.recvAt != Allocation::npos && p >= a.recvAt && p - a.recvAt < recvCount_;
  }
  // Before the call: sendbuff holds this rank's input, everything else the untouched pattern.
  void writeInitial(Allocation& a, size_t p) {
    unsigned char* at = a.data() + p * size_;
    if (inSend(a, p))
      storeInput(c_.type, inputOp_, args_.rank, p - a.sendAt, at);
    else
      std::memset(at, detail::kUntouched, size_);
  }
  std::string where(const Allocation& a, size_t p) const {
    if (inRecv(a, p)) return "recvbuff[" + std::to_string(p - a.recvAt) + "]";
    return "sendbuff[" + std::to_string(p - a.sendAt) + "]";
  }
  std::string checkElement(const Allocation& a, size_t p, unsigned char* expect) const {
    const unsigned char* got = const_cast<Allocation&>(a).data() + p * size_;
    Want w = inRecv(a, p) ? c_.spec->want(args_, p - a.recvAt) : keep();
    if (w.kind == Want::Reduced) {
      std::string e = preMul_ ? checkScaledSum(c_.type, args_.nranks, preMul_->scalar, got, w.index)
                              : checkReduced(c_.type, inputOp_, args_.nranks, got, w.index);
      return e.empty() ? "" : where(a, p) + ": " + e;
    }
    if (w.kind == Want::Copy)
      storeInput(c_.type, inputOp_, w.rank, w.index, expect);
    else if (inSend(a, p))
      storeInput(c_.type, inputOp_, args_.rank, p - a.sendAt, expect);
    else
      std::memset(expect, detail::kUntouched, size_);
    if (std::memcmp(got, expect, size_) == 0) return "";
    std::string what = w.kind == Want::Copy ? "rank " + std::to_string(w.rank) +
                                                  "'s input element " + std::to_string(w.index)
                                            : "what it held before the call";
    return where(a, p) + " does not hold " + what;
  }

  SweepCase c_;
  CallArgs args_;
  ncclRedOp_t inputOp_;  // selects the inputs (PreMulSum sums)
  std::optional<PreMul> preMul_;
  size_t size_, sendCount_, recvCount_;
  std::vector<Allocation> allocs_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
};

struct SweepResult {
  std::string firstError;
  size_t failures = 0;
  bool callFailed = false;  // the communicator may be unusable: later cases were not run
};

// Runs the cases in order on this rank. A wrong result is recorded and the sweep goes on, so
// that the ranks stay in step; a call that fails stops it.
inline SweepResult runSweep(ncclComm_t comm, int rank, int nranks,
                            std::span<const SweepCase> cases) {
  SweepResult out;
  for (const SweepCase& c : cases) {
    CaseRun run(c, rank, nranks);
    ncclResult_t res = run.call(comm);
    std::string err;
    if (res != ncclSuccess)
      err = std::string(ncclGetErrorString(res)) + ": " + ncclGetLastError(comm);
    else
      err = run.check();
    if (err.empty()) continue;
    if (out.failures++ == 0)
      out.firstError = describe(c) + ": rank " + std::to_string(rank) + ": " + err;
    if (res != ncclSuccess) {
      out.callFailed = true;
      break;
    }
  }
  return out;
}

inline std::string summary(const SweepResult& r) {
  if (r.failures == 0) return "";
  return r.firstError + " (" + std::to_string(r.failures) + " failing case(s)" +
         (r.callFailed ? ", stopped at a failed call)" : ")");
}

}  // namespace braid::testing
