#include "algos/schedule.h"

#include <algorithm>
#include <iterator>

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

ScheduleBuilder::ScheduleBuilder(std::string algorithm) {
  schedule_.algorithm = std::move(algorithm);
}

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

void ScheduleBuilder::AccessList::overlapping(size_t begin, size_t end,
                                              std::vector<uint32_t>* steps) const {
  auto it = byBegin_.lower_bound(begin > longest_ ? begin - longest_ : 0);
  for (; it != byBegin_.end() && it->first < end; ++it)
    if (begin < it->second.second) steps->push_back(it->second.first);
}

void ScheduleBuilder::AccessList::eraseInside(size_t begin, size_t end) {
  for (auto it = byBegin_.lower_bound(begin); it != byBegin_.end() && it->first <= end;)
    it = it->second.second <= end ? byBegin_.erase(it) : std::next(it);
}

void ScheduleBuilder::AccessList::add(uint32_t step, size_t begin, size_t end) {
  byBegin_.emplace(begin, std::make_pair(step, end));
  longest_ = std::max(longest_, end - begin);
}

Step& ScheduleBuilder::add(StepKind kind, int peer, Region src, Region dst) {
  const uint32_t index = static_cast<uint32_t>(schedule_.steps.size());
  const bool reads = kind != StepKind::Recv && src.count > 0;
  const bool writes = kind != StepKind::Send && dst.count > 0;
  auto slot = [](Buffer b) { return static_cast<size_t>(b); };

  // A step depends on every earlier step whose access conflicts with one of its own, directly or
  // through a later write that covers that access (see below): a write conflicts with every
  // access of its region, a read with the writes.
  depScratch_.clear();
  if (writes) {
    reads_[slot(dst.buffer)].overlapping(dst.offset, dst.offset + dst.count, &depScratch_);
    writes_[slot(dst.buffer)].overlapping(dst.offset, dst.offset + dst.count, &depScratch_);
  }
  if (reads)
    writes_[slot(src.buffer)].overlapping(src.offset, src.offset + src.count, &depScratch_);
  std::sort(depScratch_.begin(), depScratch_.end());
  depScratch_.erase(std::unique(depScratch_.begin(), depScratch_.end()), depScratch_.end());

  Step step{kind,
            peer,
            src,
            dst,
            static_cast<uint32_t>(schedule_.deps.size()),
            static_cast<uint32_t>(depScratch_.size())};
  schedule_.deps.insert(schedule_.deps.end(), depScratch_.begin(), depScratch_.end());
  schedule_.steps.push_back(step);

  // Accesses that this write covers whole need not be checked again: a later step that
  // conflicts with one of them conflicts with this write too, and this write follows them. So
  // the lists stay about as long as the data in flight, not the schedule.
  if (writes) {
    reads_[slot(dst.buffer)].eraseInside(dst.offset, dst.offset + dst.count);
    writes_[slot(dst.buffer)].eraseInside(dst.offset, dst.offset + dst.count);
  }
  if (reads) reads_[slot(src.buffer)].add(index, src.offset, src.offset + src.count);
  if (writes) writes_[slot(dst.buffer)].add(index, dst.offset, dst.offset + dst.count);
  if (peer >= 0) schedule_.peers.push_back(peer);
  return schedule_.steps.back();
}

namespace {

// Sorts and dedups the peers, and derives the reverse edges from the dependencies, so the
// executor can release dependents when a step completes.
void complete(Schedule& s) {
  std::sort(s.peers.begin(), s.peers.end());
  s.peers.erase(std::unique(s.peers.begin(), s.peers.end()), s.peers.end());
  const size_t n = s.steps.size();
  s.dependentsBegin.assign(n + 1, 0);
  for (uint32_t d : s.deps) s.dependentsBegin[d + 1]++;
  for (size_t i = 0; i < n; ++i) s.dependentsBegin[i + 1] += s.dependentsBegin[i];
  s.dependents.resize(s.deps.size());
  std::vector<uint32_t> fill(s.dependentsBegin.begin(), s.dependentsBegin.end() - 1);
  for (uint32_t i = 0; i < n; ++i) {
    const Step& step = s.steps[i];
    for (uint32_t k = 0; k < step.depCount; ++k)
      s.dependents[fill[s.deps[step.depBegin + k]]++] = i;
  }
}

}  // namespace

Schedule ScheduleBuilder::finish() && {
  complete(schedule_);
  for (auto& list : reads_) list.clear();
  for (auto& list : writes_) list.clear();
  return std::move(schedule_);
}

Schedule concatSchedules(const std::vector<Schedule>& parts) {
  Schedule out;
  for (const Schedule& p : parts) {
    if (!out.algorithm.empty() && !p.algorithm.empty()) out.algorithm += "+";
    out.algorithm += p.algorithm;
    const uint32_t base = static_cast<uint32_t>(out.steps.size());
    for (Step st : p.steps) {
      const uint32_t begin = static_cast<uint32_t>(out.deps.size());
      for (uint32_t k = 0; k < st.depCount; ++k) out.deps.push_back(base + p.deps[st.depBegin + k]);
      st.depBegin = begin;
      out.steps.push_back(st);
    }
    out.scratchCount = std::max(out.scratchCount, p.scratchCount);
    out.packedBytes = std::max(out.packedBytes, p.packedBytes);
    out.accumCount = std::max(out.accumCount, p.accumCount);
    out.peers.insert(out.peers.end(), p.peers.begin(), p.peers.end());
  }
  complete(out);
  return out;
}

Schedule repeatSchedule(const Schedule& call, int calls) {
  Schedule out = call;
  if (calls <= 1 || call.steps.empty()) return out;
  const uint32_t n = static_cast<uint32_t>(call.steps.size());
  std::vector<uint32_t> last;  // the steps of one run that nothing in it waits for
  for (uint32_t i = 0; i < n; ++i)
    if (call.dependentsBegin[i + 1] == call.dependentsBegin[i]) last.push_back(i);
  out.steps.reserve(static_cast<size_t>(n) * static_cast<size_t>(calls));
  for (int k = 1; k < calls; ++k) {
    const uint32_t base = static_cast<uint32_t>(k) * n;
    for (Step st : call.steps) {
      const uint32_t begin = static_cast<uint32_t>(out.deps.size());
      for (uint32_t d = 0; d < st.depCount; ++d)
        out.deps.push_back(base + call.deps[st.depBegin + d]);
      if (st.depCount == 0)
        for (uint32_t l : last) out.deps.push_back(base - n + l);
      st.depBegin = begin;
      st.depCount = static_cast<uint32_t>(out.deps.size()) - begin;
      out.steps.push_back(st);
    }
  }
  complete(out);
  return out;
}

Range evenPart(size_t count, int parts, int index) {
  const size_t p = static_cast<size_t>(parts), i = static_cast<size_t>(index);
  const size_t base = count / p, extra = count % p;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

}  // namespace braid::algos
