#include "algos/schedule.h"

#include <algorithm>

namespace braid::algos {

const char* stepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::Send: return "send";
    case StepKind::Recv: return "recv";
    case StepKind::RecvReduce: return "recv-reduce";
    case StepKind::Copy: return "copy";
    case StepKind::Reduce: return "reduce";
    case StepKind::FinishAvg: return "finish-avg";
    case StepKind::Encode: return "encode";
    case StepKind::DecodeAccumulate: return "decode-accumulate";
    case StepKind::Decode: return "decode";
  }
  return "?";
}

ScheduleBuilder::ScheduleBuilder(std::string algorithm) { schedule_.algorithm = std::move(algorithm); }

void ScheduleBuilder::send(int peer, Region src) { add(StepKind::Send, peer, src, {}); }
void ScheduleBuilder::recv(int peer, Region dst) { add(StepKind::Recv, peer, {}, dst); }
void ScheduleBuilder::recvReduce(int peer, Region src, Region dst, bool incomingFirst) {
  add(StepKind::RecvReduce, peer, src, dst);
  schedule_.steps.back().incomingFirst = incomingFirst;
}
void ScheduleBuilder::copy(Region src, Region dst) { add(StepKind::Copy, -1, src, dst); }
void ScheduleBuilder::reduce(Region src, Region dst) { add(StepKind::Reduce, -1, src, dst); }
void ScheduleBuilder::finishAvg(Region dst) { add(StepKind::FinishAvg, -1, dst, dst); }
void ScheduleBuilder::encode(Region src, Region packed, bool feedback, size_t residualOffset) {
  Step& s = add(StepKind::Encode, -1, src, packed);
  s.feedback = feedback;
  s.residualOffset = residualOffset;
  s.elements = src.count;
}
void ScheduleBuilder::decodeAccumulate(Region packed, Region accum) {
  add(StepKind::DecodeAccumulate, -1, packed, accum).elements = accum.count;
}
void ScheduleBuilder::decode(Region packed, Region dst) {
  add(StepKind::Decode, -1, packed, dst).elements = dst.count;
}
void ScheduleBuilder::needScratch(size_t count) {
  schedule_.scratchCount = std::max(schedule_.scratchCount, count);
}
void ScheduleBuilder::needPacked(size_t bytes) {
  schedule_.packedBytes = std::max(schedule_.packedBytes, bytes);
}
void ScheduleBuilder::needAccum(size_t count) {
  schedule_.accumCount = std::max(schedule_.accumCount, count);
}

Step& ScheduleBuilder::add(StepKind kind, int peer, Region src, Region dst) {
  const uint32_t index = static_cast<uint32_t>(schedule_.steps.size());
  const bool reads = kind != StepKind::Recv;
  const bool writes = kind != StepKind::Send;

  // A step depends on every earlier step whose access conflicts with one of its own.
  depScratch_.clear();
  for (const Access& a : accesses_) {
    bool conflict = (writes && a.region.overlaps(dst)) || (reads && a.write && a.region.overlaps(src));
    if (conflict) depScratch_.push_back(a.step);
  }
  std::sort(depScratch_.begin(), depScratch_.end());
  depScratch_.erase(std::unique(depScratch_.begin(), depScratch_.end()), depScratch_.end());

  Step step{kind, peer, src, dst, static_cast<uint32_t>(schedule_.deps.size()),
            static_cast<uint32_t>(depScratch_.size())};
  schedule_.deps.insert(schedule_.deps.end(), depScratch_.begin(), depScratch_.end());
  schedule_.steps.push_back(step);

  if (reads && src.count > 0) accesses_.push_back({index, src, false});
  if (writes && dst.count > 0) accesses_.push_back({index, dst, true});
  if (peer >= 0) schedule_.peers.push_back(peer);
  return schedule_.steps.back();
}

Schedule ScheduleBuilder::finish() && {
  Schedule& s = schedule_;
  std::sort(s.peers.begin(), s.peers.end());
  s.peers.erase(std::unique(s.peers.begin(), s.peers.end()), s.peers.end());

  // Reverse edges, so the executor can release dependents when a step completes.
  const size_t n = s.steps.size();
  s.dependentsBegin.assign(n + 1, 0);
  for (uint32_t d : s.deps) s.dependentsBegin[d + 1]++;
  for (size_t i = 0; i < n; ++i) s.dependentsBegin[i + 1] += s.dependentsBegin[i];
  s.dependents.resize(s.deps.size());
  std::vector<uint32_t> fill(s.dependentsBegin.begin(), s.dependentsBegin.end() - 1);
  for (uint32_t i = 0; i < n; ++i) {
    const Step& step = s.steps[i];
    for (uint32_t k = 0; k < step.depCount; ++k) s.dependents[fill[s.deps[step.depBegin + k]]++] = i;
  }
  accesses_.clear();
  return std::move(s);
}

Range evenPart(size_t count, int parts, int index) {
  const size_t p = static_cast<size_t>(parts), i = static_cast<size_t>(index);
  const size_t base = count / p, extra = count % p;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

}  // namespace braid::algos
