// The operation simulator's per-port timeline (algos::IntervalSet): after every operation of a
// random sequence it holds what a plain ordered map of merged intervals holds, and answers the
// earliest-gap question as a walk over that map does, across block splits, merges that span
// blocks and dropped heads.
#include "algos/interval_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <vector>

namespace braid {
namespace {

using algos::IntervalSet;

// The reference: start -> end, disjoint, touching ones merged.
struct Reference {
  std::map<double, double> busy;

  double earliestGap(double t, double length) const {
    auto it = busy.upper_bound(t);
    if (it != busy.begin()) t = std::max(t, std::prev(it)->second);
    for (; it != busy.end() && it->first < t + length; ++it) t = std::max(t, it->second);
    return t;
  }
  // Where the free gap from t ends: the next interval's begin.
  double gapEnd(double t) const {
    auto it = busy.upper_bound(t);
    return it == busy.end() ? std::numeric_limits<double>::infinity() : it->first;
  }
  void insert(double begin, double end) {
    auto it = busy.lower_bound(begin);
    if (it != busy.begin() && std::prev(it)->second >= begin) {
      --it;
      begin = it->first;
    }
    while (it != busy.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = busy.erase(it);
    }
    busy.emplace(begin, end);
  }
  void eraseEndingBy(double t) {
    while (!busy.empty() && busy.begin()->second <= t) busy.erase(busy.begin());
  }
};

void expectSame(const IntervalSet& set, const Reference& ref) {
  const std::vector<IntervalSet::Interval> got = set.intervals();
  ASSERT_EQ(got.size(), ref.busy.size());
  ASSERT_EQ(set.size(), ref.busy.size());
  size_t i = 0;
  for (const auto& [begin, end] : ref.busy) {
    ASSERT_EQ(got[i].begin, begin) << "interval " << i;
    ASSERT_EQ(got[i].end, end) << "interval " << i;
    ++i;
  }
}

TEST(IntervalSet, MergesTouchingAndOverlappingIntervals) {
  IntervalSet set;
  set.insert(10, 20);
  set.insert(30, 40);
  set.insert(20, 25);  // touches the first
  set.insert(24, 31);  // bridges to the second
  ASSERT_EQ(set.size(), 1u);
  EXPECT_EQ(set.intervals()[0].begin, 10);
  EXPECT_EQ(set.intervals()[0].end, 40);
  EXPECT_EQ(set.earliestGap(0, 10), 0);   // fits before
  EXPECT_EQ(set.earliestGap(0, 11), 40);  // does not
  EXPECT_EQ(set.earliestGap(15, 1), 40);  // inside: after it
  set.eraseEndingBy(40);
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.earliestGap(5, 100), 5);
}

// Many intervals (several hundred blocks), random bookings ahead of a moving "now", as a
// congested port sees them: every answer and the contents match the reference.
TEST(IntervalSet, MatchesAnOrderedMapOnRandomBookings) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 4; ++trial) {
    IntervalSet set;
    Reference ref;
    double now = 0;
    // Sparse bookings far ahead (thousands of intervals, tens of blocks), then dense ones that
    // merge into few.
    const double horizon[] = {5e4, 5e6, 500, 5e3};
    std::uniform_real_distribution<double> ahead(0, horizon[trial]);
    size_t most = 0;
    std::uniform_real_distribution<double> len(0.5, trial % 2 ? 40 : 3);
    for (int op = 0; op < 60000; ++op) {
      const int what = static_cast<int>(rng() % 16);
      if (what == 0) {
        now += len(rng);
        set.eraseEndingBy(now);
        ref.eraseEndingBy(now);
      } else {
        // Whole numbers make exact touches (merges) common.
        const double t = now + std::floor(ahead(rng));
        const double l = std::floor(len(rng)) + (what % 3 == 0 ? 0.5 : 0.0);
        IntervalSet::Cursor fresh;
        double freeUntil = 0;
        const double gap = set.earliestGap(&fresh, t, l, &freeUntil);
        ASSERT_EQ(gap, ref.earliestGap(t, l)) << "trial " << trial << " op " << op;
        ASSERT_EQ(freeUntil, ref.gapEnd(gap)) << "trial " << trial << " op " << op;
        if (what == 1) {
          // A run of searches from later and later times, each resuming from the last (as the
          // operation simulator's search for a gap on all of a message's ports does).
          IntervalSet::Cursor cursor;
          double from = t;
          for (int k = 0; k < 6; ++k) {
            const double l2 = std::floor(len(rng)) + 0.5;
            const double got = set.earliestGap(&cursor, from, l2, &freeUntil);
            ASSERT_EQ(got, ref.earliestGap(from, l2)) << "trial " << trial << " op " << op;
            ASSERT_EQ(freeUntil, ref.gapEnd(got)) << "trial " << trial << " op " << op;
            // What the simulator's ports accept without a search: any start in the gap and
            // length that ends by its end, and nothing at its end (a busy interval's begin,
            // where the interval is not empty: the simulator books none that are).
            if (std::isfinite(freeUntil)) {
              const double mid = (got + freeUntil) / 2;
              ASSERT_EQ(ref.earliestGap(mid, freeUntil - mid), mid) << "trial " << trial;
              if (ref.busy.at(freeUntil) > freeUntil)
                ASSERT_GT(ref.earliestGap(freeUntil, 0), freeUntil) << "trial " << trial;
            }
            from = got + std::floor(len(rng)) * (k % 2);  // the same time again, or later
          }
        }
        if (what % 2 == 0) {
          set.insert(gap, gap + l);
          ref.insert(gap, gap + l);
        } else {  // overlapping bookings, which merge across neighbours and blocks
          set.insert(t, t + 4 * l);
          ref.insert(t, t + 4 * l);
        }
      }
      most = std::max(most, set.size());
      if (op % 997 == 0) expectSame(set, ref);
    }
    expectSame(set, ref);
    EXPECT_GT(most, trial < 2 ? 2000u : 10u) << "trial " << trial;
  }
}

// Dropping everything, then booking again, leaves a working empty set.
TEST(IntervalSet, EmptiesAndRefills) {
  IntervalSet set;
  Reference ref;
  for (int i = 0; i < 1000; ++i) {
    set.insert(2.0 * i, 2.0 * i + 1);
    ref.insert(2.0 * i, 2.0 * i + 1);
  }
  set.eraseEndingBy(1000);
  ref.eraseEndingBy(1000);
  expectSame(set, ref);
  set.eraseEndingBy(1e9);
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.earliestGap(3, 4), 3);
  set.insert(5, 6);
  set.insert(1, 2);
  ref.busy.clear();
  ref.insert(5, 6);
  ref.insert(1, 2);
  expectSame(set, ref);
  EXPECT_EQ(set.earliestGap(0, 3), 2);
}

}  // namespace
}  // namespace braid
