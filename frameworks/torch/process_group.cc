#include "process_group.h"

#include <ATen/MemoryOverlap.h>

#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace braid_torch {
namespace {

constexpr const char* kUniqueIdKey = "braid_unique_id";

[[noreturn]] void refuse(const std::string& what, const std::string& why) {
  throw std::invalid_argument("braid: " + what + ": " + why);
}

void check(ncclResult_t result, const std::string& what, ncclComm_t comm) {
  if (result == ncclSuccess) return;
  const char* last = ncclGetLastError(comm);
  throw std::runtime_error("braid: " + what + " failed: " + ncclGetErrorString(result) +
                           (last && *last ? std::string(": ") + last : std::string()));
}

// Fails the enclosing lambda with the first NCCL error.
#define BT_NCCL(call)                 \
  do {                                \
    ncclResult_t r_ = (call);         \
    if (r_ != ncclSuccess) return r_; \
  } while (0)

ncclDataType_t dataType(const at::Tensor& t, const std::string& what) {
  switch (t.scalar_type()) {
    case at::kFloat: return ncclFloat32;
    case at::kDouble: return ncclFloat64;
    case at::kHalf: return ncclFloat16;
    case at::kBFloat16: return ncclBfloat16;
    case at::kChar: return ncclInt8;
    case at::kInt: return ncclInt32;
    case at::kLong: return ncclInt64;
    case at::kByte: return ncclUint8;
    case at::kBool: return ncclUint8;  // 0 and 1 bytes; reductions map to max and min below
    default:
      refuse(what, std::string("dtype ") + c10::toString(t.scalar_type()) +
                       " is not supported (float, double, half, bfloat16, int8, int32, int64, "
                       "uint8, bool)");
  }
}

// Checks what Braid cannot take: device tensors, sparse or other layouts.
void checkTensor(const at::Tensor& t, const std::string& what) {
  if (!t.defined()) refuse(what, "undefined tensor");
  if (!t.device().is_cpu())
    refuse(what, "tensor on " + t.device().str() + ": the braid backend takes CPU tensors");
  if (t.layout() != at::kStrided) refuse(what, "only dense (strided) tensors are supported");
  dataType(t, what);
}

void checkSameKind(const at::Tensor& t, const at::Tensor& ref, const std::string& what,
                   const std::string& which) {
  checkTensor(t, what);
  if (t.scalar_type() != ref.scalar_type())
    refuse(what, which + " has dtype " + c10::toString(t.scalar_type()) + ", expected " +
                     c10::toString(ref.scalar_type()));
}

void checkNumel(const at::Tensor& t, int64_t numel, const std::string& what,
                const std::string& which) {
  if (t.numel() != numel)
    refuse(what, which + " has " + std::to_string(t.numel()) + " elements, expected " +
                     std::to_string(numel));
}

void checkSingle(size_t n, const std::string& what, const std::string& which) {
  if (n != 1)
    refuse(what, which + " holds " + std::to_string(n) +
                     " tensors; the braid backend takes one tensor per rank (CPU)");
}

// A per-rank list (all_gather's outputs, scatter's inputs, ...): one tensor per rank of the
// group, each of `like`'s dtype and element count.
void checkList(const std::vector<at::Tensor>& list, const at::Tensor& like, int size,
               const std::string& what, const std::string& which) {
  if (static_cast<int>(list.size()) != size)
    refuse(what, which + " holds " + std::to_string(list.size()) +
                     " tensors, expected the group size " + std::to_string(size));
  const std::string element = "a tensor of " + which;
  for (const auto& t : list) {
    checkSameKind(t, like, what, element);
    checkNumel(t, like.numel(), what, element);
  }
}

void checkTag(int tag, const std::string& what) {
  if (tag != 0)
    refuse(what, "tag " + std::to_string(tag) +
                     " is not supported: Braid matches a pair's messages in call order, tags must "
                     "be 0");
}

// What Braid reads: the tensor itself when contiguous, else a contiguous copy, kept alive.
at::Tensor input(const at::Tensor& t, Work& work) {
  at::Tensor c = t.contiguous();
  work.keep(c);
  return c;
}

// What Braid writes (and may read): the tensor itself when contiguous, else a contiguous copy
// that is copied back after success.
at::Tensor output(const at::Tensor& t, Work& work, const std::string& what) {
  if (t.is_contiguous()) {
    work.keep(t);
    return t;
  }
  if (at::has_internal_overlap(t) == at::MemOverlap::Yes)
    refuse(what,
           "an output tensor whose elements overlap in memory (e.g. expanded) cannot be written");
  at::Tensor c = t.contiguous();
  work.keep(c);
  work.copyBack(c, t);
  return c;
}

// A flat buffer for a list of same-shaped tensors; the list's tensors receive their slices
// after success.
at::Tensor flatOutput(const std::vector<at::Tensor>& list, Work& work) {
  int64_t n = list[0].numel();
  at::Tensor flat = at::empty({static_cast<int64_t>(list.size()) * n}, list[0].options());
  work.keep(flat);
  for (size_t i = 0; i < list.size(); ++i)
    work.copyBack(flat.narrow(0, static_cast<int64_t>(i) * n, n).view(list[i].sizes()), list[i]);
  return flat;
}

at::Tensor flatInput(const std::vector<at::Tensor>& list, Work& work) {
  std::vector<at::Tensor> flat;
  flat.reserve(list.size());
  for (const auto& t : list) flat.push_back(t.reshape({-1}));
  at::Tensor cat = at::cat(flat);
  work.keep(cat);
  return cat;
}

size_t count(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }

bool isFloating(at::ScalarType type) {
  return type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16;
}

void checkRoot(int64_t root, int size, const std::string& what) {
  if (root < 0 || root >= size)
    refuse(what,
           "root rank " + std::to_string(root) + " is not in [0, " + std::to_string(size) + ")");
}

void checkPeer(int peer, int size, const std::string& what) {
  if (peer < 0 || peer >= size)
    refuse(what,
           "peer rank " + std::to_string(peer) + " is not in [0, " + std::to_string(size) + ")");
}

cudaStream_t asStream(braidHostStream_t stream) { return reinterpret_cast<cudaStream_t>(stream); }

struct CallbackArg {
  ProcessGroupBraid* group;
  c10::intrusive_ptr<Work> work;
};

}  // namespace

ProcessGroupBraid::ProcessGroupBraid(c10d::Store& store, int rank, int size, Config config)
    : BackendBase(rank, size), config_(std::move(config)) {
  // The policy is checked before any rank waits for the others: a bad one fails every rank alike.
  braidCompressPolicy_t policy;
  const bool compress = !config_.compression.empty() || config_.compressMinBytes >= 0;
  if (compress) {
    // Without a codec of its own the group keeps BRAID_COMPRESS's, with its own minimum size.
    const char* env = std::getenv("BRAID_COMPRESS");
    const std::string text = !config_.compression.empty() ? config_.compression
                             : env && *env                ? env
                                                          : "none";
    check(braidCompressPolicyParse(text.c_str(), &policy), "compression \"" + text + "\"", nullptr);
    if (config_.compressMinBytes >= 0)
      policy.minBytes = static_cast<size_t>(config_.compressMinBytes);
  }
  ncclUniqueId id;
  if (rank == 0) {
    check(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
    store.set(kUniqueIdKey, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
  } else {
    std::vector<uint8_t> bytes = store.get(kUniqueIdKey);
    if (bytes.size() != sizeof(id))
      throw std::runtime_error("braid: the store's unique id has " + std::to_string(bytes.size()) +
                               " bytes, expected " + std::to_string(sizeof(id)));
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  check(ncclCommInitRank(&comm_, size, id, rank), "ncclCommInitRank", nullptr);
  try {
    check(braidCommSetTimeout(comm_, config_.timeout.count()), "braidCommSetTimeout", comm_);
    if (compress) check(braidCommSetCompression(comm_, &policy), "braidCommSetCompression", comm_);
    check(braidHostStreamCreate(&stream_, config_.priority), "braidHostStreamCreate", comm_);
  } catch (...) {
    ncclCommDestroy(comm_);
    throw;
  }
  completer_ = std::thread([this] { completionLoop(); });
  init();
}

ProcessGroupBraid::WithoutGil ProcessGroupBraid::withoutGil_ = nullptr;

void ProcessGroupBraid::setWithoutGil(WithoutGil fn) { withoutGil_ = fn; }

ProcessGroupBraid::~ProcessGroupBraid() {
  // The completion thread may need the interpreter lock (a Future's Python callbacks, the last
  // reference to a Python tensor), and Python may drop the group while holding it.
  auto drain = [this] {
    // Waits for what is queued; every callback has then handed its Work to the completer.
    braidHostStreamDestroy(stream_);
    {
      std::lock_guard<std::mutex> lock(doneMutex_);
      stopping_ = true;
    }
    doneCv_.notify_all();
    completer_.join();
  };
  if (withoutGil_)
    withoutGil_(drain);
  else
    drain();
  ncclCommDestroy(comm_);
}

void ProcessGroupBraid::completionLoop() {
  std::unique_lock<std::mutex> lock(doneMutex_);
  for (;;) {
    doneCv_.wait(lock, [&] { return stopping_ || !done_.empty(); });
    if (done_.empty()) return;  // stopping, and everything handed over is completed
    {
      Done done = std::move(done_.front());
      done_.pop_front();
      lock.unlock();
      done.work->complete(done.result, done.message);
      // `done` (maybe the Work's last reference) is released here, without the lock.
    }
    lock.lock();
  }
}

void ProcessGroupBraid::onStreamDone(ncclResult_t result, const char* message, void* arg) {
  auto* callback = static_cast<CallbackArg*>(arg);
  ProcessGroupBraid* group = callback->group;
  {
    std::lock_guard<std::mutex> lock(group->doneMutex_);
    group->done_.push_back(Done{std::move(callback->work), result, message ? message : ""});
  }
  group->doneCv_.notify_one();
  delete callback;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::run(const c10::intrusive_ptr<Work>& work,
                                                      const Enqueue& enqueue) {
  std::unique_lock<std::mutex> lock(enqueueMutex_);
  ncclResult_t result = ncclGroupStart();
  if (result == ncclSuccess) {
    result = enqueue();
    ncclResult_t end = ncclGroupEnd();
    if (result == ncclSuccess) result = end;
  }
  if (result != ncclSuccess) {  // refused before anything was queued
    std::string message = ncclGetLastError(comm_);
    lock.unlock();
    work->complete(result, message);  // releases what the call borrowed
    work->wait();                     // throws the call's error with Braid's message
  }
  auto* arg = new CallbackArg{this, work};
  ncclResult_t added = braidHostStreamAddCallback(stream_, &ProcessGroupBraid::onStreamDone, arg);
  if (added != ncclSuccess) {
    // The call is queued but nothing will report its end: wait for the stream, then fail.
    delete arg;
    std::string message = ncclGetLastError(comm_);
    braidHostStreamSynchronize(stream_);
    lock.unlock();
    work->complete(added, "braidHostStreamAddCallback: " + message);
    work->wait();
  }
  return work;
}

ncclRedOp_t ProcessGroupBraid::reductionOp(const c10d::ReduceOp& op, const at::Tensor& tensor,
                                           size_t index, const char* what, Work& work) {
  const at::ScalarType type = tensor.scalar_type();
  const std::string name = what;
  if (type == at::kBool) {
    // A bool is a byte holding 0 or 1: sum and or are max, product and and are min.
    switch (op.op_) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::MAX:
      case c10d::ReduceOp::BOR: return ncclMax;
      case c10d::ReduceOp::PRODUCT:
      case c10d::ReduceOp::MIN:
      case c10d::ReduceOp::BAND: return ncclMin;
      default:
        refuse(
            name,
            "this ReduceOp is not supported on bool tensors (SUM, PRODUCT, MIN, MAX, BAND, BOR)");
    }
  }
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return ncclSum;
    case c10d::ReduceOp::PRODUCT: return ncclProd;
    case c10d::ReduceOp::MIN: return ncclMin;
    case c10d::ReduceOp::MAX: return ncclMax;
    case c10d::ReduceOp::AVG:
      if (!isFloating(type))
        refuse(name, std::string("ReduceOp.AVG needs a floating-point tensor, not ") +
                         c10::toString(type));
      return ncclAvg;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      refuse(name,
             "bitwise ReduceOps (BAND, BOR, BXOR) are not supported except BAND and BOR on bool");
    case c10d::ReduceOp::PREMUL_SUM: {
      // torch's only supplement for PREMUL_SUM (torch.distributed._make_nccl_premul_sum).
      const auto* supplement =
          static_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      if (!supplement) refuse(name, "PREMUL_SUM without its factor");
      at::Tensor factor;
#if TORCH_VERSION_MAJOR >= 2
      // torch 2.x: one factor, a double or a one-element tensor.
      if (supplement->tensor_factor.defined())
        factor = supplement->tensor_factor.to(at::kCPU, type).reshape({-1});
#else
      // torch 1.x: a double, or one one-element tensor per input tensor.
      if (!supplement->tensor_factors.empty()) {
        if (index >= supplement->tensor_factors.size())
          refuse(name, "PREMUL_SUM has fewer factors than tensors");
        factor = supplement->tensor_factors[index].to(at::kCPU, type).reshape({-1});
      }
#endif
      if (factor.defined())
        checkNumel(factor, 1, name, "PREMUL_SUM's factor");
      else
        factor = at::full({1}, supplement->double_factor, tensor.options());
      factor = factor.contiguous();
      // Created and destroyed under the enqueue lock, as calls are queued: the communicator's op
      // table is never changed by two threads at once.
      ncclRedOp_t premul;
      {
        std::lock_guard<std::mutex> lock(enqueueMutex_);
        check(ncclRedOpCreatePreMulSum(&premul, factor.data_ptr(), dataType(tensor, name),
                                       ncclScalarHostImmediate, comm_),
              name + ": ncclRedOpCreatePreMulSum", comm_);
      }
      work.atCompletion([this, premul] {
        std::lock_guard<std::mutex> lock(enqueueMutex_);
        ncclRedOpDestroy(premul, comm_);
      });
      return premul;
    }
    default: refuse(name, "unknown ReduceOp " + std::to_string(static_cast<int>(op.op_)));
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  const std::string what = "broadcast";
  checkSingle(tensors.size(), what, "the tensor list");
  checkTensor(tensors[0], what);
  checkRoot(opts.rootRank, size_, what);
  if (opts.rootTensor != 0) refuse(what, "rootTensor must be 0 (one tensor per rank)");
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::BROADCAST, what, tensors);
  at::Tensor t = output(tensors[0], *work, what);
  ncclDataType_t type = dataType(t, what);
  int root = static_cast<int>(opts.rootRank);
  return run(work, [&] {
    return ncclBroadcast(t.data_ptr(), t.data_ptr(), count(t), type, root, comm_,
                         asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  const std::string what = "allreduce";
  checkSingle(tensors.size(), what, "the tensor list");
  checkTensor(tensors[0], what);
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::ALLREDUCE, what, tensors);
  ncclRedOp_t op = reductionOp(opts.reduceOp, tensors[0], 0, "allreduce", *work);
  at::Tensor t = output(tensors[0], *work, what);
  ncclDataType_t type = dataType(t, what);
  return run(work, [&] {
    return ncclAllReduce(t.data_ptr(), t.data_ptr(), count(t), type, op, comm_, asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const std::string what = "allreduce_coalesced";
  if (tensors.empty()) refuse(what, "no tensors");
  for (const auto& t : tensors) checkSameKind(t, tensors[0], what, "a tensor");
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::ALLREDUCE_COALESCED, what, tensors);
  ncclRedOp_t op = reductionOp(opts.reduceOp, tensors[0], 0, "allreduce_coalesced", *work);
  // One call on the tensors laid end to end, as their sizes are known on every rank.
  at::Tensor flat = flatInput(tensors, *work);
  int64_t offset = 0;
  for (const auto& t : tensors) {
    work->copyBack(flat.narrow(0, offset, t.numel()).view(t.sizes()), t);
    offset += t.numel();
  }
  ncclDataType_t type = dataType(flat, what);
  return run(work, [&] {
    return ncclAllReduce(flat.data_ptr(), flat.data_ptr(), count(flat), type, op, comm_,
                         asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  const std::string what = "reduce";
  checkSingle(tensors.size(), what, "the tensor list");
  checkTensor(tensors[0], what);
  checkRoot(opts.rootRank, size_, what);
  if (opts.rootTensor != 0) refuse(what, "rootTensor must be 0 (one tensor per rank)");
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::REDUCE, what, tensors);
  ncclRedOp_t op = reductionOp(opts.reduceOp, tensors[0], 0, "reduce", *work);
  at::Tensor t = output(tensors[0], *work, what);
  ncclDataType_t type = dataType(t, what);
  int root = static_cast<int>(opts.rootRank);
  return run(work, [&] {
    return ncclReduce(t.data_ptr(), t.data_ptr(), count(t), type, op, root, comm_,
                      asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const std::string what = "allgather";
  checkSingle(inputs.size(), what, "the input list");
  checkSingle(outputs.size(), what, "the output list of lists");
  const at::Tensor& in = inputs[0];
  checkTensor(in, what);
  checkList(outputs[0], in, size_, what, "the output list");
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::ALLGATHER, what, outputs[0]);
  at::Tensor src = input(in, *work);
  at::Tensor flat = flatOutput(outputs[0], *work);
  ncclDataType_t type = dataType(src, what);
  return run(work, [&] {
    return ncclAllGather(src.data_ptr(), flat.data_ptr(), count(src), type, comm_,
                         asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::_allgather_base(
    at::Tensor& outputTensor, at::Tensor& inputTensor, const c10d::AllgatherOptions& opts) {
  const std::string what = "_allgather_base";
  checkTensor(inputTensor, what);
  checkSameKind(outputTensor, inputTensor, what, "the output tensor");
  checkNumel(outputTensor, inputTensor.numel() * size_, what, "the output tensor");
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::_ALLGATHER_BASE, what,
                                        std::vector<at::Tensor>{outputTensor});
  at::Tensor src = input(inputTensor, *work);
  at::Tensor dst = output(outputTensor, *work, what);
  ncclDataType_t type = dataType(src, what);
  return run(work, [&] {
    return ncclAllGather(src.data_ptr(), dst.data_ptr(), count(src), type, comm_,
                         asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const std::string what = "gather";
  checkSingle(inputs.size(), what, "the input list");
  const at::Tensor& in = inputs[0];
  checkTensor(in, what);
  checkRoot(opts.rootRank, size_, what);
  const int root = static_cast<int>(opts.rootRank);
  if (rank_ == root) {
    checkSingle(outputs.size(), what, "the output list of lists");
    checkList(outputs[0], in, size_, what, "the gather list");
  } else if (!outputs.empty() && !outputs[0].empty()) {
    refuse(what, "only the root rank takes a gather list");
  }
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::GATHER, what,
                                        rank_ == root ? outputs[0] : std::vector<at::Tensor>{});
  at::Tensor src = input(in, *work);
  at::Tensor flat = rank_ == root ? flatOutput(outputs[0], *work) : at::Tensor();
  void* recv = flat.defined() ? flat.data_ptr() : nullptr;
  ncclDataType_t type = dataType(src, what);
  return run(work, [&] {
    return ncclGather(src.data_ptr(), recv, count(src), type, root, comm_, asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const std::string what = "scatter";
  checkSingle(outputs.size(), what, "the output list");
  const at::Tensor& out = outputs[0];
  checkTensor(out, what);
  checkRoot(opts.rootRank, size_, what);
  const int root = static_cast<int>(opts.rootRank);
  if (rank_ == root) {
    checkSingle(inputs.size(), what, "the input list of lists");
    checkList(inputs[0], out, size_, what, "the scatter list");
  } else if (!inputs.empty() && !inputs[0].empty()) {
    refuse(what, "only the root rank takes a scatter list");
  }
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::SCATTER, what, outputs);
  at::Tensor flat = rank_ == root ? flatInput(inputs[0], *work) : at::Tensor();
  const void* send = flat.defined() ? flat.data_ptr() : nullptr;
  at::Tensor dst = output(out, *work, what);
  ncclDataType_t type = dataType(dst, what);
  return run(work, [&] {
    return ncclScatter(send, dst.data_ptr(), count(dst), type, root, comm_, asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const std::string what = "reduce_scatter";
  checkSingle(outputs.size(), what, "the output list");
  checkSingle(inputs.size(), what, "the input list of lists");
  const at::Tensor& out = outputs[0];
  checkTensor(out, what);
  checkList(inputs[0], out, size_, what, "the input list");
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::REDUCE_SCATTER, what, outputs);
  ncclRedOp_t op = reductionOp(opts.reduceOp, out, 0, "reduce_scatter", *work);
  at::Tensor flat = flatInput(inputs[0], *work);
  at::Tensor dst = output(out, *work, what);
  ncclDataType_t type = dataType(dst, what);
  return run(work, [&] {
    return ncclReduceScatter(flat.data_ptr(), dst.data_ptr(), count(dst), type, op, comm_,
                             asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::_reduce_scatter_base(
    at::Tensor& outputTensor, at::Tensor& inputTensor, const c10d::ReduceScatterOptions& opts) {
  const std::string what = "_reduce_scatter_base";
  checkTensor(outputTensor, what);
  checkSameKind(inputTensor, outputTensor, what, "the input tensor");
  checkNumel(inputTensor, outputTensor.numel() * size_, what, "the input tensor");
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::_REDUCE_SCATTER_BASE, what,
                                        std::vector<at::Tensor>{outputTensor});
  ncclRedOp_t op = reductionOp(opts.reduceOp, outputTensor, 0, "_reduce_scatter_base", *work);
  at::Tensor src = input(inputTensor, *work);
  at::Tensor dst = output(outputTensor, *work, what);
  ncclDataType_t type = dataType(dst, what);
  return run(work, [&] {
    return ncclReduceScatter(src.data_ptr(), dst.data_ptr(), count(dst), type, op, comm_,
                             asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::alltoall_base(at::Tensor& outputTensor,
                                                                at::Tensor& inputTensor,
                                                                std::vector<int64_t>& outputSplits,
                                                                std::vector<int64_t>& inputSplits,
                                                                const c10d::AllToAllOptions& opts) {
  const std::string what = "alltoall_base";
  checkTensor(inputTensor, what);
  checkSameKind(outputTensor, inputTensor, what, "the output tensor");
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::ALLTOALL_BASE, what,
                                        std::vector<at::Tensor>{outputTensor});
  at::Tensor src = input(inputTensor, *work);
  at::Tensor dst = output(outputTensor, *work, what);
  ncclDataType_t type = dataType(src, what);
  if (outputSplits.empty() && inputSplits.empty()) {
    if (src.numel() % size_ != 0)
      refuse(what, "the input's " + std::to_string(src.numel()) +
                       " elements do not split evenly over " + std::to_string(size_) + " ranks");
    checkNumel(dst, src.numel(), what, "the output tensor");
    size_t n = count(src) / size_;
    return run(work, [&] {
      return ncclAlltoAll(src.data_ptr(), dst.data_ptr(), n, type, comm_, asStream(stream_));
    });
  }
  // Uneven splits: dim-0 rows per peer, one send and one receive per peer in one group.
  auto splits = [&](std::vector<int64_t> s, const at::Tensor& t, const char* which) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    if (s.empty()) {
      if (rows % size_ != 0)
        refuse(what, std::string("the ") + which + "'s " + std::to_string(rows) +
                         " rows do not split evenly over " + std::to_string(size_) + " ranks");
      s.assign(size_, rows / size_);
    }
    if (static_cast<int>(s.size()) != size_)
      refuse(what, std::string(which) + " splits list " + std::to_string(s.size()) +
                       " sizes, expected the group size " + std::to_string(size_));
    int64_t sum = 0;
    for (int64_t v : s) {
      if (v < 0) refuse(what, std::string(which) + " splits hold a negative size");
      sum += v;
    }
    if (sum != rows)
      refuse(what, std::string(which) + " splits add up to " + std::to_string(sum) +
                       " rows, the tensor has " + std::to_string(rows));
    return s;
  };
  std::vector<int64_t> outS = splits(outputSplits, dst, "output");
  std::vector<int64_t> inS = splits(inputSplits, src, "input");
  const int64_t inRow = src.dim() == 0 ? 1 : src.numel() / std::max<int64_t>(src.size(0), 1);
  const int64_t outRow = dst.dim() == 0 ? 1 : dst.numel() / std::max<int64_t>(dst.size(0), 1);
  if (inRow != outRow)
    refuse(what, "input rows hold " + std::to_string(inRow) + " elements, output rows " +
                     std::to_string(outRow));
  const size_t elem = src.element_size();
  return run(work, [&]() -> ncclResult_t {
    int64_t inOff = 0, outOff = 0;
    for (int peer = 0; peer < size_; ++peer) {
      if (inS[peer] > 0)
        BT_NCCL(ncclSend(static_cast<char*>(src.data_ptr()) + inOff * inRow * elem,
                         inS[peer] * inRow, type, peer, comm_, asStream(stream_)));
      if (outS[peer] > 0)
        BT_NCCL(ncclRecv(static_cast<char*>(dst.data_ptr()) + outOff * outRow * elem,
                         outS[peer] * outRow, type, peer, comm_, asStream(stream_)));
      inOff += inS[peer];
      outOff += outS[peer];
    }
    return ncclSuccess;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions& opts) {
  const std::string what = "alltoall";
  if (static_cast<int>(inputs.size()) != size_ || static_cast<int>(outputs.size()) != size_)
    refuse(what, "the input and output lists hold " + std::to_string(inputs.size()) + " and " +
                     std::to_string(outputs.size()) + " tensors, expected the group size " +
                     std::to_string(size_));
  for (int peer = 0; peer < size_; ++peer) {
    checkTensor(inputs[peer], what);
    checkSameKind(outputs[peer], inputs[peer], what, "an output tensor");
  }
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::ALLTOALL, what, outputs);
  std::vector<at::Tensor> src, dst;
  for (int peer = 0; peer < size_; ++peer) {
    src.push_back(input(inputs[peer], *work));
    dst.push_back(output(outputs[peer], *work, what));
  }
  return run(work, [&]() -> ncclResult_t {
    for (int peer = 0; peer < size_; ++peer) {
      if (src[peer].numel() > 0)
        BT_NCCL(ncclSend(src[peer].data_ptr(), count(src[peer]), dataType(src[peer], what), peer,
                         comm_, asStream(stream_)));
      if (dst[peer].numel() > 0)
        BT_NCCL(ncclRecv(dst[peer].data_ptr(), count(dst[peer]), dataType(dst[peer], what), peer,
                         comm_, asStream(stream_)));
    }
    return ncclSuccess;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::send(std::vector<at::Tensor>& tensors,
                                                       int dstRank, int tag) {
  const std::string what = "send";
  checkSingle(tensors.size(), what, "the tensor list");
  checkTensor(tensors[0], what);
  checkPeer(dstRank, size_, what);
  checkTag(tag, what);
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::SEND, what, tensors);
  at::Tensor src = input(tensors[0], *work);
  ncclDataType_t type = dataType(src, what);
  return run(work, [&] {
    return ncclSend(src.data_ptr(), count(src), type, dstRank, comm_, asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::recv(std::vector<at::Tensor>& tensors,
                                                       int srcRank, int tag) {
  const std::string what = "recv";
  checkSingle(tensors.size(), what, "the tensor list");
  checkTensor(tensors[0], what);
  checkPeer(srcRank, size_, what);
  checkTag(tag, what);
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::RECV, what, tensors);
  at::Tensor dst = output(tensors[0], *work, what);
  ncclDataType_t type = dataType(dst, what);
  return run(work, [&] {
    return ncclRecv(dst.data_ptr(), count(dst), type, srcRank, comm_, asStream(stream_));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::barrier(const c10d::BarrierOptions& opts) {
  // An AllReduce of one byte: it completes on a rank once every rank has called it.
  auto work =
      c10::make_intrusive<Work>(rank_, c10d::OpType::BARRIER, "barrier", std::vector<at::Tensor>{});
  at::Tensor token = at::zeros({1}, at::kByte);
  work->keep(token);
  return run(work, [&] {
    return ncclAllReduce(token.data_ptr(), token.data_ptr(), 1, ncclUint8, ncclSum, comm_,
                         asStream(stream_));
  });
}

braidCompressStats_t ProcessGroupBraid::compressionStats() const {
  braidCompressStats_t stats{};
  check(braidCompressStats(comm_, &stats), "braidCompressStats", comm_);
  return stats;
}

}  // namespace braid_torch
