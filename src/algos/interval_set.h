#pragma once
// A set of disjoint time intervals (touching ones merged) that answers "the earliest gap of a
// given length from t". The operation simulator keeps one per port: a congested port books
// messages far ahead of the event being handled, so it holds up to ~10^5 intervals at thousands
// of ranks (rhd AllReduce, 1 GiB, 768 ranks), searched several times per message. A red-black
// tree of that size costs a cache miss per level of every search; here the intervals lie in
// sorted blocks of at most kMaxBlock, found by a binary search over the blocks' first starts,
// so a search touches two small contiguous arrays, and most searches start where the last one
// ended (what that buys at scale: bench/results/braid_sim_scale.md).
#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace braid::algos {

class IntervalSet {
  struct Pos {
    size_t block, index;  // block == blocks_.size(): past the end; never past a block's end
  };

 public:
  struct Interval {
    double begin, end;  // [begin, end)
  };

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The earliest t' >= t with [t', t' + length) free.
  double earliestGap(double t, double length) const {
    Cursor fresh;
    double freeUntil;
    return earliestGap(&fresh, t, length, &freeUntil);
  }

  // A place in the set for a run of searches from times that never decrease (and no change to
  // the set between them): each resumes where the last stopped instead of searching again.
  class Cursor {
    friend class IntervalSet;
    Pos p_{};
    bool placed_ = false;
  };
  // earliestGap(t, length) from the cursor's place (t at least the last search's t), and in
  // *freeUntil where the gap that holds it ends (the next interval's begin, or infinity): a later
  // search from t' <= t'' < *freeUntil that ends by then would return t'' itself.
  double earliestGap(Cursor* c, double t, double length, double* freeUntil) const {
    Pos& p = c->p_;
    // Past the intervals over by t (they change nothing): a few steps from the cursor, or a
    // search where t has moved further (past a long busy stretch of another port).
    int steps = 0;
    if (c->placed_)
      for (; steps < kCursorSteps && valid(p) && at(p).end <= t; ++steps) next(&p);
    if (!c->placed_ || steps == kCursorSteps) {
      c->placed_ = true;
      p = upperBound(t);  // the first interval starting after t, or the one before if it ends later
      if (Pos q = p; prev(&q) && at(q).end > t) p = q;
    }
    // The interval holding t, if any, ends the search's first candidate even for no length (t
    // at its very begin); the ones after it, only where they start before t + length.
    for (; valid(p) && (at(p).begin <= t || at(p).begin < t + length); next(&p))
      t = std::max(t, at(p).end);
    *freeUntil = valid(p) ? at(p).begin : std::numeric_limits<double>::infinity();
    return t;
  }

  // Adds [begin, end), merged with every interval it overlaps or touches.
  void insert(double begin, double end) {
    Pos p = lowerBound(begin);  // the first interval starting at or after begin
    if (Pos q = p; prev(&q) && at(q).end >= begin) p = q;
    while (valid(p) && at(p).begin <= end) {
      begin = std::min(begin, at(p).begin);
      end = std::max(end, at(p).end);
      erase(p);
    }
    insertAt(p, {begin, end});
  }

  // Drops the intervals that end by t (the ends are sorted as the starts are).
  void eraseEndingBy(double t) {
    if (head_ == blocks_.size() || blocks_[head_].front().end > t) return;
    while (head_ < blocks_.size() && blocks_[head_].back().end <= t) {
      size_ -= blocks_[head_].size();
      std::vector<Interval>().swap(blocks_[head_]);
      ++head_;
    }
    if (head_ < blocks_.size()) {
      std::vector<Interval>& b = blocks_[head_];
      auto keep =
          std::partition_point(b.begin(), b.end(), [t](const Interval& i) { return i.end <= t; });
      size_ -= static_cast<size_t>(keep - b.begin());
      b.erase(b.begin(), keep);
      firstBegin_[head_] = b.front().begin;
    }
    // Dropped blocks leave the vectors' heads; compact once they are half of them.
    if (head_ > 0 && 2 * head_ >= blocks_.size()) {
      blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(head_));
      firstBegin_.erase(firstBegin_.begin(),
                        firstBegin_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  // The intervals in order (tests and reports).
  std::vector<Interval> intervals() const {
    std::vector<Interval> out;
    for (size_t b = head_; b < blocks_.size(); ++b)
      out.insert(out.end(), blocks_[b].begin(), blocks_[b].end());
    return out;
  }

 private:
  // Blocks split in two above this size: 128 intervals (2 KiB) keep an insertion's move short
  // and the block index 1/128 of the intervals.
  static constexpr size_t kMaxBlock = 128;
  // How far a search steps from the last one's place before it searches the block, and how
  // far a cursor steps before it searches the set (a start that another port moved past a long
  // busy stretch): 32 ran rhd at 4,096 ranks fastest of 8, 32 and 128 (`braid-sim
  // --ranks-per-host 8 --hosts-per-rack 16 --racks-per-pod 8 --pods 4 --rack-oversub 3 -b 1G
  // -e 1G --algos rhd`).
  static constexpr int kFingerSteps = 8;
  static constexpr int kCursorSteps = 32;

  bool valid(Pos p) const { return p.block < blocks_.size(); }
  const Interval& at(Pos p) const { return blocks_[p.block][p.index]; }
  void next(Pos* p) const {
    if (++p->index == blocks_[p->block].size()) *p = {p->block + 1, 0};
  }
  // Moves p back one interval; false where it is the first.
  bool prev(Pos* p) const {
    if (p->index > 0) {
      --p->index;
      return true;
    }
    if (p->block == head_) return false;
    --p->block;
    p->index = blocks_[p->block].size() - 1;
    return true;
  }

  // The first interval whose begin satisfies `after` (a begin > t or >= t test, monotone):
  // in the last block whose first interval does not satisfy it, or at the next block's start.
  // A port's searches come in runs about one time (a message's gap on each level, then its
  // booking), so the place the last search ended is tried before searching.
  template <typename After>
  Pos firstWhere(After after) const {
    size_t b;  // the block after the one holding the answer
    if (fingerBlock_ >= head_ && fingerBlock_ < blocks_.size() &&
        !after(firstBegin_[fingerBlock_]) &&
        (fingerBlock_ + 1 == blocks_.size() || after(firstBegin_[fingerBlock_ + 1]))) {
      b = fingerBlock_ + 1;
    } else {
      const auto first = firstBegin_.begin() + static_cast<std::ptrdiff_t>(head_);
      b = static_cast<size_t>(
          std::partition_point(first, firstBegin_.end(), [&](double x) { return !after(x); }) -
          firstBegin_.begin());
    }
    if (b == head_) return {b, 0};
    const std::vector<Interval>& v = blocks_[--b];
    size_t i = v.size() + 1;
    if (fingerBlock_ == b && fingerIndex_ <= v.size()) {
      // Step from the finger: a search a little later or earlier than the last one ends a few
      // intervals away (the operation simulator's starts move forward past one interval at a
      // time), where a binary search over the block would mispredict a branch per level.
      i = fingerIndex_;
      for (int steps = 0; steps < kFingerSteps && i < v.size() && !after(v[i].begin); ++steps) ++i;
      for (int steps = 0; steps < kFingerSteps && i > 0 && after(v[i - 1].begin); ++steps) --i;
      if ((i < v.size() && !after(v[i].begin)) || (i > 0 && after(v[i - 1].begin)))
        i = v.size() + 1;
    }
    if (i > v.size())
      i = static_cast<size_t>(
          std::partition_point(v.begin(), v.end(),
                               [&](const Interval& x) { return !after(x.begin); }) -
          v.begin());
    fingerBlock_ = b;
    fingerIndex_ = i;
    return i == v.size() ? Pos{b + 1, 0} : Pos{b, i};
  }
  Pos upperBound(double t) const {
    return firstWhere([t](double begin) { return begin > t; });
  }
  Pos lowerBound(double t) const {
    return firstWhere([t](double begin) { return begin >= t; });
  }

  // Erases the interval at p; p then names the one after it.
  void erase(Pos& p) {
    std::vector<Interval>& b = blocks_[p.block];
    b.erase(b.begin() + static_cast<std::ptrdiff_t>(p.index));
    --size_;
    if (b.empty()) {
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(p.block));
      firstBegin_.erase(firstBegin_.begin() + static_cast<std::ptrdiff_t>(p.block));
      p.index = 0;
      return;
    }
    if (p.index == 0) firstBegin_[p.block] = b.front().begin;
    if (p.index == b.size()) p = {p.block + 1, 0};
  }

  // Inserts x before p (x belongs there in order).
  void insertAt(Pos p, Interval x) {
    ++size_;
    if (head_ == blocks_.size()) {  // empty
      blocks_.assign(1, {x});
      firstBegin_.assign(1, x.begin);
      head_ = 0;
      return;
    }
    // Past the end, or before a block's first interval: append to the block before, if any.
    if (p.index == 0 && p.block > head_) p = {p.block - 1, blocks_[p.block - 1].size()};
    std::vector<Interval>& b = blocks_[p.block];
    b.insert(b.begin() + static_cast<std::ptrdiff_t>(p.index), x);
    firstBegin_[p.block] = b.front().begin;
    if (b.size() <= kMaxBlock) return;
    const auto half = b.begin() + static_cast<std::ptrdiff_t>(b.size() / 2);
    std::vector<Interval> upper(half, b.end());
    b.erase(half, b.end());
    const auto at = static_cast<std::ptrdiff_t>(p.block + 1);
    firstBegin_.insert(firstBegin_.begin() + at, upper.front().begin);
    blocks_.insert(blocks_.begin() + at, std::move(upper));
  }

  std::vector<std::vector<Interval>> blocks_;  // [head_, end): the intervals, in order
  std::vector<double> firstBegin_;             // blocks_[b].front().begin
  size_t head_ = 0;                            // blocks before it were dropped
  // Where the last search ended: in block fingerBlock_, before interval fingerIndex_ (which
  // may be the block's size). Checked before use, so any value is safe.
  mutable size_t fingerBlock_ = 0, fingerIndex_ = 0;
  size_t size_ = 0;
};

}  // namespace braid::algos
