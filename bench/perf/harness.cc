#include "harness.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "accuracy.h"
#include "algo_log.h"
#include "device_buffers.h"
#include "dtype.h"
#include "options.h"
#include "table.h"
#include "world.h"

namespace braid::perf {
namespace {

constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuardByte = 0xA5;
constexpr size_t kPage = 4096;

// Any failed NCCL call ends the process: the table would be meaningless, and the launcher
// (braidrun, mpirun) takes the other ranks down.
void ncclOk(ncclResult_t r, ncclComm_t comm, int rank, const char* what) {
  // A non-blocking communicator answers InProgress; the call's outcome comes later.
  while (r == ncclInProgress && comm) {
    ncclResult_t async = ncclSuccess;
    ncclResult_t q = ncclCommGetAsyncError(comm, &async);
    r = q != ncclSuccess ? q : async;
    if (r == ncclInProgress) std::this_thread::yield();
  }
  if (r == ncclSuccess) return;
  const char* last = ncclGetLastError(comm);
  const char* text = ncclGetErrorString(r);
  std::fprintf(stderr, "rank %d: %s failed: %s%s%s\n", rank, what, text ? text : "unknown error",
               last && *last ? ": " : "", last ? last : "");
  AlgoLog::releaseBeforeExit();
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(1);
}

struct FreeDeleter {
  bool fromNccl = false;  // ncclMemAlloc'ed (-R 1)
  bool onDevice = false;  // cudaMalloc'ed (-G 1)
  void operator()(void* p) const {
    if (fromNccl)
      ncclMemFree(p);
    else if (onDevice)
      device::release(p);
    else
      std::free(p);
  }
};

// Page-aligned host memory with room for the guard bytes after the largest use; from
// ncclMemAlloc when `fromNccl` (the library may then move it without copies).
std::unique_ptr<char, FreeDeleter> allocHost(size_t bytes, bool fromNccl = false) {
  size_t rounded = (bytes + kGuardBytes + kPage - 1) / kPage * kPage;
  void* p = nullptr;
  if (fromNccl) {
    if (ncclMemAlloc(&p, rounded) != ncclSuccess) p = nullptr;
  } else {
    p = std::aligned_alloc(kPage, rounded);
  }
  if (!p) {
    std::fprintf(stderr, "cannot allocate %zu bytes of host memory\n", rounded);
    std::exit(1);
  }
  std::memset(p, 0, rounded);  // touch every page now rather than inside the first timed op
  return std::unique_ptr<char, FreeDeleter>(static_cast<char*>(p), FreeDeleter{fromNccl});
}

// -G 1: device memory (zeroed), with the same room for guard bytes; -G 2: pinned host memory.
std::unique_ptr<char, FreeDeleter> allocDevice(size_t bytes, bool pinnedHost) {
  size_t rounded = (bytes + kGuardBytes + kPage - 1) / kPage * kPage;
  return std::unique_ptr<char, FreeDeleter>(
      static_cast<char*>(device::alloc(rounded, pinnedHost)), FreeDeleter{false, true});
}

// Elements of the one buffer an in-place call uses.
size_t inPlaceElements(const Shape& s) {
  return std::max(s.inPlaceSendOffset + s.sendCount, s.inPlaceRecvOffset + s.recvCount);
}

struct RowResult {
  double seconds[2] = {0, 0};  // out-of-place, in-place
  double wrong[2] = {0, 0};    // < 0: not checked for exactness (-Z measures accuracy instead)
  double predictedUs = -1;     // out-of-place, the slowest rank's; < 0: not predicted
  Accuracy accuracy;
};

// What one round (one communicator, one -A name) hands back to perfMain, from the printing
// rank: its rows for the used summary and the prediction table, and the footer's totals.
struct RoundOut {
  std::vector<Row> rows;
  std::vector<double> predictedUs;
  double wrongTotal = 0, busbwSum = 0;
  int nrows = 0;
};

class RankRunner {
 public:
  RankRunner(const Collective& coll, const Options& opts, const World& world, int rank,
             const char* program, int round, RoundOut* out)
      : coll_(coll),
        opts_(opts),
        world_(world),
        rank_(rank),
        nranks_(world.nRanks()),
        program_(program),
        printer_(rank == 0),
        round_(round),
        out_(out) {}

  int run(const ncclUniqueId& id) {
    if (opts_.deviceBuffers) {
      // The communicator binds to the device current at init: one GPU here, every rank on it
      // (Braid allows several ranks per device).
      if (std::string why = device::unavailable(); !why.empty()) {
        std::fprintf(stderr, "%s: -G %d: %s\n", program_, opts_.deviceBuffers, why.c_str());
        return 2;
      }
      device::setDevice(0);
      stream_ = device::newStream();
    }
    ncclOk(ncclCommInitRank(&comm_, nranks_, id, rank_), nullptr, rank_, "ncclCommInitRank");
    small_ = allocHost(nranks_ * sizeof(RankInfo));
    describeRanks();
    allocate();
    std::vector<int> roots{-1};
    if (coll_.hasRoot) {
      roots.clear();
      for (int r = 0; r < nranks_; ++r)
        if (opts_.allRoots || r == opts_.root) roots.push_back(r);
      if (roots.empty()) {
        if (printer_)
          std::fprintf(stderr, "%s: root %d is not below the rank count %d\n", program_, opts_.root,
                       nranks_);
        ncclOk(ncclCommDestroy(comm_), nullptr, rank_, "ncclCommDestroy");
        return 2;
      }
    }
    if (printer_) {
      if (!opts_.compress.empty()) {
        std::printf("#\n# Compression %s (BRAID_COMPRESS=%s)%s%s\n",
                    opts_.compressOf(round_).c_str(), opts_.compressOf(round_).c_str(),
                    opts_.algos.empty() ? "" : ", BRAID_ALGO=",
                    opts_.algos.empty() ? "" : opts_.algoOf(round_).c_str());
      } else if (!opts_.algos.empty()) {
        printRoundTitle(opts_.algos[round_]);
      }
      printColumnHeader(coll_);
    }
    std::vector<ncclRedOp_t> ops = coll_.hasOp ? opts_.ops : std::vector<ncclRedOp_t>{ncclSum};
    for (ncclDataType_t type : opts_.types)
      for (ncclRedOp_t op : ops)
        for (int root : roots) sweep(type, op, root);
    if (printer_ && !opts_.compress.empty())
      printAccuracyTable(opts_.compressOf(round_), accuracyRows_);
    if (out_) {
      out_->wrongTotal = wrongTotal_;
      out_->busbwSum = busbwSum_;
      out_->nrows = rows_;
    }
    deregister();
    ncclOk(ncclCommDestroy(comm_), nullptr, rank_, "ncclCommDestroy");
    send_.reset();
    recv_.reset();
    inPlace_.reset();
    if (stream_) device::destroyStream(stream_);
    return wrongTotal_ > 0 ? 1 : 0;
  }

 private:
  void describeRanks() {
    auto* infos = reinterpret_cast<RankInfo*>(small_.get());
    std::memset(infos, 0, nranks_ * sizeof(RankInfo));
    infos[rank_].pid = getpid();
    infos[rank_].procRank = world_.procRank;
    gethostname(infos[rank_].host, sizeof infos[rank_].host - 1);
    // Every other slot is zero, so a byte-wise sum is an all-gather.
    call(
        ncclAllReduce(infos, infos, nranks_ * sizeof(RankInfo), ncclUint8, ncclSum, comm_, nullptr),
        "ncclAllReduce (rank list)");
    if (printer_ && round_ == 0) printPreamble(program_, opts_, world_, infos, nranks_);
  }

  // One buffer set sized for the largest row of any requested type.
  void allocate() {
    size_t send = 0, recv = 0, inPlace = 0;
    for (ncclDataType_t t : opts_.types) {
      size_t ts = typeSize(t);
      Shape s = coll_.shape(opts_.maxBytes / ts, nranks_, rank_);
      send = std::max(send, s.sendCount * ts);
      recv = std::max(recv, s.recvCount * ts);
      inPlace = std::max(inPlace, inPlaceElements(s) * ts);
    }
    const bool fromNccl = opts_.registerBuffers != 0;
    barrier_ = allocHost(sizeof(double) * 4);
    if (opts_.deviceBuffers) {
      // Device buffers, each with a host mirror where inputs are made and results checked.
      const bool pinned = opts_.deviceBuffers == 2;
      send_ = allocDevice(send, pinned);
      recv_ = allocDevice(recv, pinned);
      inPlace_ = allocDevice(inPlace, pinned);
      mirrors_.push_back({send_.get(), allocHost(send), send});
      mirrors_.push_back({recv_.get(), allocHost(recv), recv});
      mirrors_.push_back({inPlace_.get(), allocHost(inPlace), inPlace});
      return;
    }
    send_ = allocHost(send, fromNccl);
    recv_ = allocHost(recv, fromNccl);
    inPlace_ = allocHost(inPlace, fromNccl);
    if (!fromNccl) return;
    // -R 1, as in nccl-tests: the buffers are registered with the communicator.
    for (auto [p, bytes] :
         {std::pair{send_.get(), send}, {recv_.get(), recv}, {inPlace_.get(), inPlace}}) {
      void* handle = nullptr;
      call(ncclCommRegister(comm_, p, bytes, &handle), "ncclCommRegister");
      registrations_.push_back(handle);
    }
  }

  void deregister() {
    for (void* h : registrations_) call(ncclCommDeregister(comm_, h), "ncclCommDeregister");
    registrations_.clear();
  }

  void call(ncclResult_t r, const char* what) { ncclOk(r, comm_, rank_, what); }

  void barrier() {
    call(ncclAllReduce(barrier_.get(), barrier_.get(), 1, ncclFloat32, ncclSum, comm_, nullptr),
         "ncclAllReduce (barrier)");
  }

  void runOnce(const Args& a, const void* send, void* recv) {
    call(coll_.run(a, send, recv, comm_, stream_), coll_.name);
    if (opts_.blocking && stream_) device::sync(stream_);
    if (opts_.blocking) {
      // With host memory and no stream the call itself is the wait; asking for the async
      // error is what a blocking host program does next.
      ncclResult_t async = ncclSuccess;
      call(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
      call(async, coll_.name);
    }
  }

  double timeOps(const Args& a, const void* send, void* recv, int iters) {
    barrier();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      if (opts_.aggIters > 1) call(ncclGroupStart(), "ncclGroupStart");
      for (int j = 0; j < opts_.aggIters; ++j) runOnce(a, send, recv);
      if (opts_.aggIters > 1) call(ncclGroupEnd(), "ncclGroupEnd");
    }
    if (stream_) device::sync(stream_);  // the calls only enqueued their work
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return iters ? sec / (static_cast<double>(iters) * opts_.aggIters) : 0;
  }

  // The cost model's price of one out-of-place call: a group holding only that call, closed by
  // ncclGroupSimulateEnd, runs nothing. -1 where the library cannot say.
  double simulate(const Args& a) {
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    if (ncclGroupStart() != ncclSuccess) return -1;
    ncclResult_t r = coll_.run(a, send_.get(), recv_.get(), comm_, nullptr);
    ncclResult_t e = ncclGroupSimulateEnd(&info);  // closes the group even after a failed call
    if (r != ncclSuccess || e != ncclSuccess || !(info.estimatedTime >= 0)) return -1;
    return info.estimatedTime;
  }

  struct ValueCtx {
    const Collective* coll;
    const Args* args;
  };

  // -G 1: the host mirror of a device address inside one of the buffers.
  char* mirrorOf(const void* p) {
    for (Mirror& m : mirrors_) {
      const char* base = m.device;
      if (p >= base && p < base + m.bytes + kGuardBytes)
        return m.host.get() + (static_cast<const char*>(p) - base);
    }
    std::fprintf(stderr, "rank %d: internal: %p is in no device buffer\n", rank_, p);
    std::exit(1);
  }

  // -Z on a float sum or average: gradient-like inputs, accuracy instead of exactness.
  bool measuresAccuracy(const Args& a) const {
    return !opts_.compress.empty() && typeInfo(a.type).isFloat &&
           (a.op == ncclSum || a.op == ncclAvg);
  }

  void fillInput(const Args& a, void* buf) {
    if (stream_) {
      char* host = mirrorOf(buf);
      fillInputAt(a, host);
      device::toDevice(buf, host, a.shape.sendCount * typeSize(a.type), stream_);
      return;
    }
    fillInputAt(a, buf);
  }

  void fillInputAt(const Args& a, void* buf) {
    ValueCtx ctx{&coll_, &a};
    if (measuresAccuracy(a)) {
      fillValues(
          buf, a.shape.sendCount, a.type,
          [](const void* p, size_t i) {
            return gradientInput(static_cast<const ValueCtx*>(p)->args->rank, i);
          },
          &ctx);
      return;
    }
    fillValues(
        buf, a.shape.sendCount, a.type,
        [](const void* p, size_t i) {
          auto* c = static_cast<const ValueCtx*>(p);
          return c->coll->input(*c->args, c->args->rank, i);
        },
        &ctx);
  }

  // Wrong elements plus damaged guard bytes after one checked run (or -c runs).
  size_t verify(const Args& a, bool inPlace) {
    size_t ts = typeSize(a.type), wrong = 0;
    const TypeInfo& ti = typeInfo(a.type);
    // A premultiplied float average (x * 1/n summed) may round; every other result is exact.
    double tol = a.op == ncclAvg && ti.isFloat ? a.nranks * std::ldexp(1.0, -ti.mantissaBits) : 0;
    const Shape& s = a.shape;
    bool receives = !coll_.receives || coll_.receives(a);
    for (int c = 0; c < opts_.check; ++c) {
      char* send = inPlace ? inPlace_.get() + s.inPlaceSendOffset * ts : send_.get();
      char* recv = inPlace ? inPlace_.get() + s.inPlaceRecvOffset * ts : recv_.get();
      // Every byte the call may write starts as 0xFF (NaN or max: never a result), so results
      // left over from the timed runs cannot pass for this run's. In place, that is the whole
      // shared buffer (AllGather's other blocks), then the input goes into its send part.
      size_t span = inPlace ? inPlaceElements(s) : s.recvCount;
      char* base = inPlace ? inPlace_.get() : recv;
      // -G 1: prepared and checked in the host mirror, copied to and from the device around the
      // call.
      char* hostBase = stream_ ? mirrorOf(base) : base;
      std::memset(hostBase, 0xFF, span * ts);
      // Past everything the call may touch: ReduceScatter's in-place output is followed by
      // other ranks' input, not by free bytes.
      std::memset(hostBase + span * ts, kGuardByte, kGuardBytes);
      if (stream_) device::toDevice(base, hostBase, span * ts + kGuardBytes, stream_);
      fillInput(a, send);
      runOnce(a, send, recv);
      if (stream_) {
        device::sync(stream_);
        device::toHost(hostBase, base, span * ts + kGuardBytes, stream_);
        recv = mirrorOf(recv);
      }
      char* guard = hostBase + span * ts;
      ValueCtx ctx{&coll_, &a};
      if (receives)
        wrong += countWrong(
            recv, s.recvCount, a.type,
            [](const void* p, size_t i) {
              auto* v = static_cast<const ValueCtx*>(p);
              return v->coll->expected(*v->args, i);
            },
            &ctx, tol);
      wrong += std::count_if(guard, guard + kGuardBytes,
                             [](char b) { return static_cast<unsigned char>(b) != kGuardByte; });
    }
    return wrong;
  }

  RowResult measure(const Args& a) {
    RowResult r;
    size_t ts = typeSize(a.type);
    const bool accuracy = measuresAccuracy(a);
    if (opts_.predict) r.predictedUs = simulate(a);
    fillInput(a, send_.get());
    // -Z: error feedback keeps a residual per buffer and size, allocated by its first call; a
    // training loop pays that once, so it stays out of the timed calls (for each placement).
    if (!opts_.compress.empty()) runOnce(a, send_.get(), recv_.get());
    r.seconds[0] = timeOps(a, send_.get(), recv_.get(), opts_.iters);
    if (accuracy)
      r.wrong[0] = -1;
    else if (opts_.check)
      r.wrong[0] = static_cast<double>(verify(a, false));
    char* ipSend = inPlace_.get() + a.shape.inPlaceSendOffset * ts;
    char* ipRecv = inPlace_.get() + a.shape.inPlaceRecvOffset * ts;
    fillInput(a, ipSend);
    if (!opts_.compress.empty()) runOnce(a, ipSend, ipRecv);
    r.seconds[1] = timeOps(a, ipSend, ipRecv, opts_.iters);
    if (accuracy)
      r.wrong[1] = -1;
    else if (opts_.check)
      r.wrong[1] = static_cast<double>(verify(a, true));
    if (accuracy) r.accuracy = measureAccuracy(a);
    aggregate(&r);
    return r;
  }

  // One out-of-place call on a buffer of its own (with error feedback, a fresh residual: the
  // timed calls above fed theirs with the same input over and over), against the exact sum of
  // the inputs as stored, from an fp64 AllReduce.
  Accuracy measureAccuracy(const Args& a) {
    const size_t n = a.shape.count, ts = typeSize(a.type);
    auto input = allocHost(n * ts), output = allocHost(n * ts);
    auto exact = allocHost(n * sizeof(double));
    fillInput(a, input.get());
    auto* x = reinterpret_cast<double*>(exact.get());
    for (size_t i = 0; i < n; ++i) x[i] = loadValue(input.get(), i, a.type);
    call(ncclAllReduce(x, x, n, ncclFloat64, ncclSum, comm_, nullptr),
         "ncclAllReduce (fp64 reference)");
    if (a.op == ncclAvg)
      for (size_t i = 0; i < n; ++i) x[i] /= a.nranks;
    call(coll_.run(a, input.get(), output.get(), comm_, nullptr), coll_.name);
    return compare(output.get(), a.type, x, n);
  }

  // Every rank ends up with the same numbers, so every rank agrees on the exit code.
  void aggregate(RowResult* r) {
    auto* buf = reinterpret_cast<double*>(barrier_.get());
    std::copy(r->wrong, r->wrong + 2, buf);
    call(ncclAllReduce(buf, buf, 2, ncclFloat64, ncclSum, comm_, nullptr),
         "ncclAllReduce (wrong counts)");
    for (int k = 0; k < 2; ++k) r->wrong[k] = r->wrong[k] < 0 ? -1 : buf[k];
    if (opts_.predict) {
      // The call ends when its slowest rank does; a rank that cannot predict gives -1.
      buf[0] = r->predictedUs;
      call(ncclAllReduce(buf, buf, 1, ncclFloat64, ncclMax, comm_, nullptr),
           "ncclAllReduce (predictions)");
      r->predictedUs = buf[0];
    }
    if (opts_.average == Average::Rank0 || nranks_ == 1) return;
    ncclRedOp_t op = opts_.average == Average::Min   ? ncclMin
                     : opts_.average == Average::Max ? ncclMax
                                                     : ncclSum;
    std::copy(r->seconds, r->seconds + 2, buf);
    call(ncclAllReduce(buf, buf, 2, ncclFloat64, op, comm_, nullptr), "ncclAllReduce (times)");
    for (int k = 0; k < 2; ++k)
      r->seconds[k] = opts_.average == Average::Mean ? buf[k] / nranks_ : buf[k];
  }

  void sweep(ncclDataType_t type, ncclRedOp_t op, int root) {
    size_t ts = typeSize(type);
    Args a{type, op, root, rank_, nranks_, coll_.shape(opts_.maxBytes / ts, nranks_, rank_)};
    // As nccl-tests: warm up at the largest size, then at the smallest (the first row timed).
    if (opts_.warmup > 0) {
      fillInput(a, send_.get());
      timeOps(a, send_.get(), recv_.get(), opts_.warmup);
      a.shape = coll_.shape(opts_.minBytes / ts, nranks_, rank_);
      fillInput(a, send_.get());
      timeOps(a, send_.get(), recv_.get(), opts_.warmup);
    }
    for (size_t bytes : opts_.sizes()) {
      a.shape = coll_.shape(bytes / ts, nranks_, rank_);
      RowResult r = measure(a);
      wrongTotal_ += std::max(0.0, r.wrong[0]) + std::max(0.0, r.wrong[1]);
      if (!printer_) continue;
      Row row{std::max(a.shape.sendCount, a.shape.recvCount) * ts,
              a.shape.count,
              typeInfo(type).name,
              coll_.hasOp ? opName(op) : "none",
              root,
              {}};
      for (int k = 0; k < 2; ++k) {
        double sec = r.seconds[k];
        row.place[k].us = sec * 1e6;
        row.place[k].algbw = sec > 0 ? static_cast<double>(row.bytes) / 1e9 / sec : 0;
        row.place[k].busbw = row.place[k].algbw * coll_.busFactor(nranks_);
        row.place[k].wrong =
            opts_.check && r.wrong[k] >= 0 ? static_cast<long long>(r.wrong[k]) : -1;
        busbwSum_ += row.place[k].busbw;
        ++rows_;
      }
      printRow(row);
      if (!opts_.compress.empty())
        accuracyRows_.push_back(
            {row.bytes, row.count, row.type, row.redop, row.place[0].busbw, r.accuracy});
      if (out_) {
        out_->rows.push_back(row);
        out_->predictedUs.push_back(r.predictedUs);
      }
    }
  }

  const Collective& coll_;
  const Options& opts_;
  const World& world_;
  const int rank_, nranks_;
  const char* program_;
  const bool printer_;
  const int round_;
  RoundOut* const out_;  // the printing rank's; nullptr elsewhere
  ncclComm_t comm_ = nullptr;
  std::unique_ptr<char, FreeDeleter> send_, recv_, inPlace_, barrier_, small_;
  struct Mirror {
    char* device;
    std::unique_ptr<char, FreeDeleter> host;
    size_t bytes;
  };
  std::vector<Mirror> mirrors_;    // -G 1
  cudaStream_t stream_ = nullptr;  // -G 1
  std::vector<void*> registrations_;
  std::vector<AccuracyRow> accuracyRows_;
  double wrongTotal_ = 0, busbwSum_ = 0;
  int rows_ = 0;
};

}  // namespace

int typeSize(ncclDataType_t t) { return typeInfo(t).size; }

double standardInput(const Args& a, int rank, size_t i) {
  const TypeInfo& t = typeInfo(a.type);
  const int n = a.nranks;
  switch (a.op) {
    case ncclProd: {
      // At most six ranks contribute a 2 to any element: 2^6 fits int8 and e4m3 alike.
      size_t q = (n + 5) / 6 + 1;
      return (i * 7 + rank) % q == 0 ? 2 : 1;
    }
    case ncclMax:
    case ncclMin:
      // -4..4 (0..8 unsigned): exact even in e5m2.
      return static_cast<double>((i * 5 + rank * 3) % 9) - (t.isSigned ? 4 : 0);
    case ncclAvg: rank = 0; [[fallthrough]];
    default: {
      // Non-negative, so partial sums never exceed the final one; total <= exactMax.
      double m = std::min(std::floor(t.exactMax / n), 9.0);
      if (m >= 1) return static_cast<double>((i * 7 + rank * 3) % (static_cast<size_t>(m) + 1));
      size_t q = static_cast<size_t>(std::ceil(n / t.exactMax));  // more ranks than exact integers
      return (i + rank) % q == 0 ? 1 : 0;
    }
  }
}

double standardReduced(const Args& a, size_t i) {
  double acc = standardInput(a, 0, i);
  for (int r = 1; r < a.nranks; ++r) {
    double v = standardInput(a, r, i);
    switch (a.op) {
      case ncclProd: acc *= v; break;
      case ncclMax: acc = std::max(acc, v); break;
      case ncclMin: acc = std::min(acc, v); break;
      default: acc += v; break;
    }
  }
  return a.op == ncclAvg ? acc / a.nranks : acc;
}

double movedInput(const Args& a, int rank, size_t i) {
  // The span stays below 0xFF; 13 and 7 are coprime to every span (251, 128, 17, 9), so ranks
  // and elements closer together than the span never share a value.
  double span = std::min(typeInfo(a.type).exactMax + 1, 251.0);
  return static_cast<double>((i * 7 + static_cast<size_t>(rank) * 13 + 1) %
                             static_cast<size_t>(span));
}

Shape gatheredShape(size_t count, int nranks, int rank) {
  const size_t c = count / nranks;
  return Shape{.count = c,
               .sendCount = c,
               .recvCount = c * nranks,
               .paramCount = c,
               .inPlaceSendOffset = c * rank};
}

Shape scatteredShape(size_t count, int nranks, int rank) {
  const size_t c = count / nranks;
  return Shape{.count = c,
               .sendCount = c * nranks,
               .recvCount = c,
               .paramCount = c,
               .inPlaceRecvOffset = c * rank};
}

double blockBusFactor(int nranks) { return static_cast<double>(nranks - 1) / nranks; }

double gatheredExpected(const Args& a, size_t i) {
  const size_t c = a.shape.paramCount;
  return movedInput(a, static_cast<int>(i / c), i % c);
}

int perfMain(int argc, char** argv, const Collective& coll) {
  const char* slash = std::strrchr(argv[0], '/');
  const char* program = slash ? slash + 1 : argv[0];
  Options opts;
  if (!parseOptions(argc, argv, program, &opts)) return 2;
  AlgoLog log(opts);  // sets NCCL_DEBUG before the library first reads it
  World world = discoverWorld(opts);
  const bool printer = world.procRank == 0;
  // A round's label: its -A name, or its -Z mode (with the -A name when one is given).
  std::vector<std::string> labels;
  for (size_t k = 0; k < opts.rounds(); ++k)
    labels.push_back(opts.compress.empty() ? opts.algoOf(k)
                     : opts.algos.empty()  ? opts.compressOf(k)
                                           : opts.algoOf(k) + "/" + opts.compressOf(k));
  // -Z measures compression at every size; a BRAID_COMPRESS_MIN_BYTES set by the user wins.
  if (!opts.compress.empty()) setenv("BRAID_COMPRESS_MIN_BYTES", "0", 0);
  std::vector<RoundOut> rounds(labels.size());
  std::vector<std::vector<std::string>> used(labels.size());
  int code = 0;
  // One communicator per round, one round after another: BRAID_ALGO is read when a
  // communicator is created, and setenv is safe here because no rank thread is running.
  for (size_t k = 0; k < labels.size(); ++k) {
    if (!opts.algos.empty()) {
      if (opts.algoOf(k) == "auto")
        unsetenv("BRAID_ALGO");
      else
        setenv("BRAID_ALGO", opts.algoOf(k).c_str(), 1);
    }
    if (!opts.compress.empty()) setenv("BRAID_COMPRESS", opts.compressOf(k).c_str(), 1);
    const size_t logFrom = log.mark();
    ncclUniqueId id{};
    if (!obtainUniqueId(world, static_cast<int>(k), &id)) return 1;
    std::vector<int> codes(world.nThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < world.nThreads; ++t)
      threads.emplace_back([&, t] {
        const int rank = world.firstRank() + t;
        RankRunner runner(coll, opts, world, rank, program, static_cast<int>(k),
                          rank == 0 ? &rounds[k] : nullptr);
        codes[t] = runner.run(id);
      });
    for (auto& th : threads) th.join();
    releaseUniqueId(world, static_cast<int>(k));
    int roundCode = *std::max_element(codes.begin(), codes.end());
    code = std::max(code, roundCode);
    if (roundCode == 2) return code;  // a bad root: every round would say the same
    if (!printer || !log.active()) continue;
    AlgoLog::Choices choices = log.choices(logFrom);
    std::vector<size_t> bytes;
    for (const Row& row : rounds[k].rows) {
      // The count column is the call's count argument in every descriptor.
      used[k].push_back(
          AlgoLog::lookup(choices, coll.name, row.count, typeSize(findType(row.type)->type)));
      bytes.push_back(row.bytes);
    }
    printUsedSummary(labels[k], used[k], bytes);
  }
  if (!printer) return code;
  if (opts.predict) {
    printPredictHeader(labels);
    for (size_t i = 0; i < rounds[0].rows.size(); ++i) {
      std::vector<Prediction> cells;
      for (size_t k = 0; k < labels.size(); ++k) {
        // Every round sweeps the same rows in the same order.
        const RoundOut& r = rounds[k];
        if (i >= r.rows.size()) break;
        cells.push_back({log.active() ? used[k][i] : "?", r.predictedUs[i], r.rows[i].place[0].us});
      }
      printPredictRow(rounds[0].rows[i], cells);
    }
  }
  double wrong = 0, busbw = 0;
  int nrows = 0;
  for (const RoundOut& r : rounds) {
    wrong += r.wrongTotal;
    busbw += r.busbwSum;
    nrows += r.nrows;
  }
  printFooter(program, wrong, nrows ? busbw / nrows : 0);
  return code;
}

}  // namespace braid::perf
