// A schedule is an algorithm's output for one rank: the list of steps that rank performs,
// each naming a peer, regions of the operation's buffers, and the steps it must wait for.
// Algorithms produce schedules as data; the executor (src/core/executor) runs any of them.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace braid::algos {

// The buffers a step can touch. Regions of Send, Recv and Scratch are in elements of the
// operation's data type. Compressed schedules add two: Packed, codec messages, addressed in
// bytes; and Accum, an fp32 accumulator, addressed in fp32 elements.
enum class Buffer : uint8_t { Send, Recv, Scratch, Packed, Accum };

// Bytes of one unit of a region of `buffer` (typeSize: the operation's element size).
inline size_t unitBytes(Buffer buffer, size_t typeSize) {
  return buffer == Buffer::Packed ? 1 : buffer == Buffer::Accum ? 4 : typeSize;
}

struct Region {
  Buffer buffer = Buffer::Recv;
  size_t offset = 0;  // units of the buffer (see above)
  size_t count = 0;   // units of the buffer

  bool overlaps(const Region& o) const {
    return buffer == o.buffer && offset < o.offset + o.count && o.offset < offset + count;
  }
};

enum class StepKind : uint8_t {
  Send,        // send `src` to `peer`
  Recv,        // receive from `peer` into `dst`
  RecvReduce,  // dst = src OP (what arrives from `peer`)
  Copy,        // dst = src
  Reduce,      // dst = dst OP src (local)
  FinishAvg,   // dst /= nranks (Avg's last step, once per element)
  // Compression (the plan's codec): elements are the data type's, or fp32 in Accum.
  Encode,            // dst (Packed) = codec message of src; `feedback`: with error feedback
  DecodeAccumulate,  // dst (Accum) += decoded src (Packed)
  Decode,            // dst = decoded src (Packed), rounded once to dst's type
};

const char* stepKindName(StepKind kind);

struct Step {
  StepKind kind;
  int peer = -1;
  Region src;
  Region dst;
  uint32_t depBegin = 0;  // this step waits for steps deps[depBegin, depBegin + depCount)
  uint32_t depCount = 0;
  // RecvReduce: dst = incoming OP src instead of src OP incoming. Operand order matters for
  // bits (NaN payloads, max(-0, +0)): algorithms use it so that every rank reduces in one order.
  bool incomingFirst = false;
  // Encode: the message carries src plus the residual of the call's tensor at elements
  // [residualOffset, + src.count), which then keeps what the message did not carry.
  bool feedback = false;
  size_t residualOffset = 0;
  // Encode, Decode, DecodeAccumulate: elements the message holds (src.count or dst.count is
  // its size in bytes).
  size_t elements = 0;
};

// The bytes a step moves or computes on: the larger of its two regions (a message's size).
inline double stepBytes(const Step& st, size_t typeSize) {
  return static_cast<double>(std::max(st.src.count * unitBytes(st.src.buffer, typeSize),
                                      st.dst.count * unitBytes(st.dst.buffer, typeSize)));
}

struct Schedule {
  std::string algorithm;
  std::vector<Step> steps;
  std::vector<uint32_t> deps;        // dependency lists, indexed by Step::depBegin
  std::vector<uint32_t> dependents;  // reverse edges: who waits for step i ...
  std::vector<uint32_t>
      dependentsBegin;      // ... dependents[dependentsBegin[i], dependentsBegin[i+1])
  size_t scratchCount = 0;  // elements of scratch the executor must provide
  size_t packedBytes = 0;   // bytes of Packed the executor must provide
  size_t accumCount = 0;    // fp32 elements of Accum (zeroed before the schedule runs)
  std::vector<int> peers;   // every peer the schedule talks to, sorted, unique
};

// Builds a schedule step by step and derives the dependencies from the regions each step reads
// and writes (read-after-write, write-after-read, write-after-write), so an algorithm states
// only what moves where, in program order. Steps that touch disjoint regions run concurrently.
class ScheduleBuilder {
 public:
  explicit ScheduleBuilder(std::string algorithm);

  void send(int peer, Region src);
  void recv(int peer, Region dst);
  void recvReduce(int peer, Region src, Region dst, bool incomingFirst = false);
  void copy(Region src, Region dst);
  void reduce(Region src, Region dst);
  void finishAvg(Region dst);
  // Compression steps; `elements` is the message's element count.
  void encode(Region src, Region packed, bool feedback, size_t residualOffset);
  void decodeAccumulate(Region packed, Region accum);
  void decode(Region packed, Region dst);
  void needScratch(size_t count);
  void needPacked(size_t bytes);
  void needAccum(size_t count);

  Schedule finish() &&;

 private:
  Step& add(StepKind kind, int peer, Region src, Region dst);

  Schedule schedule_;
  // Accesses to one buffer (steps and their ranges of units), ordered by where they begin, so
  // that a step is checked only against those near its own range: a schedule of many blocks
  // (a ring over thousands of ranks) builds in time proportional to its steps.
  class AccessList {
   public:
    // Appends to `steps` every access that overlaps [begin, end).
    void overlapping(size_t begin, size_t end, std::vector<uint32_t>* steps) const;
    // Forgets every access inside [begin, end).
    void eraseInside(size_t begin, size_t end);
    void add(uint32_t step, size_t begin, size_t end);
    void clear() { byBegin_.clear(); }

   private:
    std::multimap<size_t, std::pair<uint32_t, size_t>> byBegin_;  // begin -> (step, end)
    size_t longest_ = 0;  // the longest range ever added: none that begins further back overlaps
  };
  // Per buffer, the accesses later steps must be checked against, reads and writes apart: a
  // read conflicts only with writes.
  static constexpr size_t kBuffers = static_cast<size_t>(Buffer::Accum) + 1;
  std::array<AccessList, kBuffers> reads_, writes_;
  std::vector<uint32_t> depScratch_;
};

// Joins schedules one rank runs together (say an ncclSend and an ncclRecv in one group) into
// one, in order: each part keeps its own dependencies (renumbered), so sends and receives keep
// their call order per peer. Scratch, Packed and Accum are shared, sized for the largest part:
// join only parts that do not both use one of them. (Tests run joined schedules; the executor
// runs a group's plans side by side instead.)
Schedule concatSchedules(const std::vector<Schedule>& parts);

// `calls` runs of one rank's schedule back to back, as a loop of blocking calls issues them: a
// run's first steps (those that wait for nothing) wait for the last steps of the run before
// (those nothing waits for), so the rank starts a call when it has finished the last, while
// its peers may still be in theirs. Messages keep their order per peer, run after run.
Schedule repeatSchedule(const Schedule& call, int calls);

// Splits [0, count) into `parts` contiguous ranges as evenly as possible (the first
// count % parts ranges get one more element). Used by every algorithm, so that sender and
// receiver always agree on boundaries.
struct Range {
  size_t offset;
  size_t count;
};
Range evenPart(size_t count, int parts, int index);

// Calls fn(offset, count) for consecutive pieces of at most chunk elements covering range.
template <typename Fn>
void forEachChunk(Range range, size_t chunk, Fn&& fn) {
  if (chunk == 0) chunk = 1;
  for (size_t done = 0; done < range.count; done += chunk) {
    size_t n = range.count - done < chunk ? range.count - done : chunk;
    fn(range.offset + done, n);
  }
}

}  // namespace braid::algos
