// The nccl-tests-compatible benchmark harness: flags, size sweep, timing, data checking and the
// output table are shared; each *_perf binary only describes its collective (see Collective).
// Uses nothing but the public NCCL API, so the binaries run against any libnccl.so.2 that works
// on host memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace braid::perf {

// Element counts of one row, per rank.
struct Shape {
  size_t count = 0;       // the "count" column (per rank, as the call's count argument)
  size_t sendCount = 0;   // elements in the send buffer
  size_t recvCount = 0;   // elements in the receive buffer
  size_t paramCount = 0;  // the count argument of the call
  // In-place runs use one buffer of max(send, recv) elements, with the send and receive
  // buffers at these element offsets (AllGather, Gather: send at rank*count; ReduceScatter,
  // Scatter: recv at rank*count; the rest: both 0).
  size_t inPlaceSendOffset = 0;
  size_t inPlaceRecvOffset = 0;
};

// Everything a descriptor needs to know about one row.
struct Args {
  ncclDataType_t type;
  ncclRedOp_t op;  // ncclSum for collectives without an op
  int root;        // -1 for collectives without a root
  int rank;
  int nranks;
  Shape shape;
};

struct Collective {
  const char* name;  // "AllReduce": printed, and names the binary in messages
  bool hasOp;        // -o applies (and loops with -o all)
  bool hasRoot;      // -r applies (and loops with -r all)
  // Shape for a nominal element count (size / type size); may round count down.
  Shape (*shape)(size_t count, int nranks, int rank);
  // busbw = algbw * busFactor; algbw = size / time, where size (the "size" column) is
  // max(sendCount, recvCount) * type size: the whole gathered or scattered buffer.
  double (*busFactor)(int nranks);
  // Value of send element i of rank `rank`; every value must be exact in args.type.
  double (*input)(const Args&, int rank, size_t i);
  // Value receive element i of args.rank must hold afterwards.
  double (*expected)(const Args&, size_t i);
  ncclResult_t (*run)(const Args&, const void* send, void* recv, ncclComm_t, cudaStream_t);
  // Whether args.rank's receive buffer holds a result to check (Reduce, Gather: the root only);
  // nullptr: every rank's does.
  bool (*receives)(const Args&) = nullptr;
};

// Inputs built so that every op's result is exact in every type, whatever the reduction order:
// small non-negative integers whose sum over all ranks stays within the type's exact-integer
// range (16 for e4m3, 8 for e5m2, 127 for int8, ...), at most six factors of 2 for prod, and
// rank-independent values for avg (so sum/n is exact).
double standardInput(const Args&, int rank, size_t i);
// Element i reduced with args.op over every rank's standardInput.
double standardReduced(const Args&, size_t i);
// For collectives that only move data: a value exact in args.type that differs between ranks
// and between neighbouring elements, so a block from the wrong rank or at the wrong offset
// shows; never the 0xFF pattern unwritten receive buffers hold.
double movedInput(const Args&, int rank, size_t i);

int typeSize(ncclDataType_t);

// The block collectives' shapes, sizes and checks, shared by their descriptors. The size column
// is the whole gathered (or scattered) buffer: each rank's block is count / nranks of it.
//   gathered: every rank sends one block into an nranks-block output (AllGather, Gather); in place
//             the input already sits in the rank's own block of the output (NCCL's rule);
//   scattered: an nranks-block input, one block out (ReduceScatter, Scatter); in place the output
//              is the rank's own block of the input.
Shape gatheredShape(size_t count, int nranks, int rank);
Shape scatteredShape(size_t count, int nranks, int rank);
// busbw of the block collectives: algbw x (n-1)/n.
double blockBusFactor(int nranks);
// Element i of a gathered output: block i / count of rank i / count's movedInput.
double gatheredExpected(const Args&, size_t i);

// Runs the benchmark: parses nccl-tests flags, sets up ranks, prints the table. Returns the
// process exit code (non-zero when any value was wrong or any NCCL call failed).
int perfMain(int argc, char** argv, const Collective&);

}  // namespace braid::perf
