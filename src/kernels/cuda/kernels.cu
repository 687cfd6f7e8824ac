// The CUDA kernels and their one dispatch table. Each kernel is a grid-stride loop around a body
// from kernels/pack.h; nothing here computes anything the CPU tests do not run too.
#include "kernels/cuda/kernels.h"

#include <algorithm>
#include <atomic>

#include "kernels/cuda/cuda_config.h"
#include "kernels/pack.h"

namespace braid::cuda {
namespace {

using kernels::BFloat16;
using kernels::Fp8E4M3;
using kernels::Fp8E5M2;
using kernels::Half;

constexpr unsigned kThreads = kThreadsPerBlock;

template <typename T, typename Func>
__global__ void __launch_bounds__(kThreads)
    reduceKernel(Func func, T* dst, T* dst2, const T* a, const T* b, size_t count) {
  kernels::reduceSpan(func, dst, dst2, a, b, count, size_t(blockIdx.x) * blockDim.x + threadIdx.x,
                      size_t(gridDim.x) * blockDim.x);
}

template <typename T, typename Func>
__global__ void __launch_bounds__(kThreads)
    mapKernel(Func func, T* dst, const T* src, size_t count) {
  kernels::mapSpan(func, dst, src, count, size_t(blockIdx.x) * blockDim.x + threadIdx.x,
                   size_t(gridDim.x) * blockDim.x);
}

__global__ void waitKernel(const volatile uint32_t* flag, uint32_t value) {
  while (int32_t(*flag - value) < 0) __nanosleep(1000);
}

// Makes what the stream wrote before it visible to every device and the host, then writes the word.
__global__ void writeKernel(volatile uint32_t* word, uint32_t value) {
  __threadfence_system();
  *word = value;
}

// Packs of perPack elements, one per worker, and a tail of up to perPack elements.
unsigned gridFor(size_t count, size_t perPack) { return gridBlocks(count / perPack + perPack); }

struct DeviceTable {
  using ReduceFn = cudaError_t (*)(void* dst, void* dst2, const void* a, const void* b,
                                   size_t count, cudaStream_t stream);
  using ScaleFn = cudaError_t (*)(void* dst, const void* src, size_t count, const void* scalar,
                                  cudaStream_t stream);
  using AvgFn = cudaError_t (*)(void* data, size_t count, int nranks, cudaStream_t stream);
  ReduceFn reduce[12][4] = {};
  ScaleFn scale[12] = {};
  AvgFn finishAvg[12] = {};
};

template <typename T, template <typename> class Func>
cudaError_t launchReduce(void* dst, void* dst2, const void* a, const void* b, size_t count,
                         cudaStream_t stream) {
  reduceKernel<T><<<gridFor(count, kernels::Pack<T>::kCount), kThreads, 0, stream>>>(
      Func<T>{}, static_cast<T*>(dst), static_cast<T*>(dst2), static_cast<const T*>(a),
      static_cast<const T*>(b), count);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchScale(void* dst, const void* src, size_t count, const void* scalar,
                        cudaStream_t stream) {
  const kernels::FuncScale<T> func{kernels::ElemTraits<T>::load(*static_cast<const T*>(scalar))};
  mapKernel<T><<<gridFor(count, kernels::Pack<T>::kCount), kThreads, 0, stream>>>(
      func, static_cast<T*>(dst), static_cast<const T*>(src), count);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchFinishAvg(void* data, size_t count, int nranks, cudaStream_t stream) {
  const auto func = kernels::FuncFinishAvg<T>::make(nranks);
  mapKernel<T><<<gridFor(count, kernels::Pack<T>::kCount), kThreads, 0, stream>>>(
      func, static_cast<T*>(data), static_cast<const T*>(data), count);
  return cudaGetLastError();
}

// Only the selected types and ops are instantiated (BRAID_CUDA_TYPES / BRAID_CUDA_OPS).
template <ncclDataType_t kType, typename T>
void fillRow(DeviceTable& t) {
  if constexpr (kTypeBuilt[kType]) {
    if constexpr (kOpBuilt[0]) t.reduce[kType][0] = &launchReduce<T, kernels::FuncSum>;
    if constexpr (kOpBuilt[1]) t.reduce[kType][1] = &launchReduce<T, kernels::FuncProd>;
    if constexpr (kOpBuilt[2]) t.reduce[kType][2] = &launchReduce<T, kernels::FuncMax>;
    if constexpr (kOpBuilt[3]) t.reduce[kType][3] = &launchReduce<T, kernels::FuncMin>;
    t.scale[kType] = &launchScale<T>;
    t.finishAvg[kType] = &launchFinishAvg<T>;
  }
}

DeviceTable makeTable() {
  DeviceTable t;
  fillRow<ncclInt8, int8_t>(t);
  fillRow<ncclUint8, uint8_t>(t);
  fillRow<ncclInt32, int32_t>(t);
  fillRow<ncclUint32, uint32_t>(t);
  fillRow<ncclInt64, int64_t>(t);
  fillRow<ncclUint64, uint64_t>(t);
  fillRow<ncclFloat16, Half>(t);
  fillRow<ncclFloat32, float>(t);
  fillRow<ncclFloat64, double>(t);
  fillRow<ncclBfloat16, BFloat16>(t);
  fillRow<ncclFloat8e4m3, Fp8E4M3>(t);
  fillRow<ncclFloat8e5m2, Fp8E5M2>(t);
  return t;
}

const DeviceTable& table() {
  static const DeviceTable t = makeTable();
  return t;
}

bool validType(ncclDataType_t type) { return int(type) >= 0 && int(type) < 12; }
int rowOf(ncclRedOp_t op) { return op == ncclAvg ? int(ncclSum) : int(op); }

Status notBuilt(ncclDataType_t type, ncclRedOp_t op) {
  return invalidUsage(
      "no CUDA kernel for datatype %d op %d in this build (BRAID_CUDA_TYPES=%s, "
      "BRAID_CUDA_OPS=%s)",
      int(type), int(op), kTypesOption, kOpsOption);
}

Status reduceImpl(void* dst, void* dst2, const void* a, const void* b, size_t count,
                  ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream) {
  if (!built(type, op)) return notBuilt(type, op);
  if (count == 0) return Status::Ok();
  return cudaStatus(table().reduce[type][rowOf(op)](dst, dst2, a, b, count, stream),
                    "reduce kernel");
}

}  // namespace

unsigned gridBlocks(size_t workers) {
  static std::atomic<int> smCount[64];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) dev = 0;
  int sms = smCount[dev].load(std::memory_order_relaxed);
  if (sms == 0) {
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        sms <= 0)
      sms = 16;
    smCount[dev].store(sms, std::memory_order_relaxed);
  }
  const size_t blocks = std::min<size_t>((workers + kThreads - 1) / kThreads, size_t(sms) * 8);
  return unsigned(std::max<size_t>(1, blocks));
}

Status cudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return {ncclUnhandledCudaError,
          strfmt("%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err))};
}

bool built(ncclDataType_t type, ncclRedOp_t op) {
  const int row = rowOf(op);
  return validType(type) && row >= 0 && row < 4 && table().reduce[type][row] != nullptr;
}

Status reduce(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
              ncclRedOp_t op, cudaStream_t stream) {
  return reduceImpl(dst, nullptr, a, b, count, type, op, stream);
}

Status reduceCopy(void* dst, void* dst2, const void* a, const void* b, size_t count,
                  ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream) {
  return reduceImpl(dst, dst2, a, b, count, type, op, stream);
}

Status copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return Status::Ok();
  mapKernel<uint8_t><<<gridFor(bytes, 16), kThreads, 0, stream>>>(
      kernels::FuncCopy<uint8_t>{}, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src),
      bytes);
  return cudaStatus(cudaGetLastError(), "copy kernel");
}

Status scale(void* dst, const void* src, size_t count, ncclDataType_t type, const void* scalar,
             cudaStream_t stream) {
  if (!validType(type) || !table().scale[type]) return notBuilt(type, ncclProd);
  if (count == 0) return Status::Ok();
  return cudaStatus(table().scale[type](dst, src, count, scalar, stream), "scale kernel");
}

Status finishAvg(void* data, size_t count, ncclDataType_t type, int nranks, cudaStream_t stream) {
  if (!validType(type) || !table().finishAvg[type]) return notBuilt(type, ncclAvg);
  if (count == 0 || nranks <= 1) return Status::Ok();
  return cudaStatus(table().finishAvg[type](data, count, nranks, stream), "finishAvg kernel");
}

Status waitFlagKernel(const volatile uint32_t* flag, uint32_t value, cudaStream_t stream) {
  waitKernel<<<1, 1, 0, stream>>>(flag, value);
  return cudaStatus(cudaGetLastError(), "wait kernel");
}

Status writeWordKernel(volatile uint32_t* word, uint32_t value, cudaStream_t stream) {
  writeKernel<<<1, 1, 0, stream>>>(word, value);
  return cudaStatus(cudaGetLastError(), "write kernel");
}

}  // namespace braid::cuda
