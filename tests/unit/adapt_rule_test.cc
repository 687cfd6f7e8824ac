// The adaptation's agreed rule (core/adapt/adapt.h): fed the ranks' votes window by window, when
// it re-plans, when it holds still, and when it undoes a re-plan that measured slower.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/adapt/adapt.h"

namespace braid::adapt {
namespace {

using Action = Rule::Action;

// Every one of `ranks` ranks saw kWindow calls at `ratio` x the price, `usPerMiB` each, 100 ms a
// call after 10 ms outside calls.
std::vector<Vote> votes(float ratio, float usPerMiB = 1000, int ranks = 4) {
  return std::vector<Vote>(static_cast<size_t>(ranks),
                           Vote{ratio, usPerMiB, 100000, 10000, kWindow, 1});
}

// Feeds windows until the rule has its reference (the warm-up window, then one more).
void settle(Rule& rule, float ratio, float usPerMiB = 1000) {
  std::string why;
  for (int w = 0; w <= kWarmupWindows; ++w) ASSERT_EQ(rule.next(votes(ratio, usPerMiB), &why), Action::kNone);
  ASSERT_FLOAT_EQ(rule.reference(), ratio);
}

TEST(AdaptRule, TheFirstWindowWarmsUpAndTheNextSetsTheReference) {
  Rule rule;
  std::string why;
  EXPECT_EQ(rule.next(votes(9.0f), &why), Action::kNone);  // warm-up: not the reference
  EXPECT_EQ(rule.reference(), 0);
  EXPECT_EQ(rule.next(votes(4.0f), &why), Action::kNone);
  EXPECT_FLOAT_EQ(rule.reference(), 4.0f);
}

TEST(AdaptRule, ReplansAfterKPersistWindowsOffEitherWay) {
  for (float factor : {2.0f, 0.5f}) {
    Rule rule;
    settle(rule, 4.0f);
    std::string why;
    for (int w = 1; w < kPersist; ++w)
      EXPECT_EQ(rule.next(votes(4.0f * factor), &why), Action::kNone) << factor;
    EXPECT_EQ(rule.next(votes(4.0f * factor), &why), Action::kReplan) << factor;
    EXPECT_NE(why.find("against 4.00x"), std::string::npos) << why;
  }
}

TEST(AdaptRule, NoiseBelowTheThresholdAndABrokenStreakDoNothing) {
  Rule rule;
  settle(rule, 4.0f);
  std::string why;
  for (int w = 0; w < 50; ++w) {
    // Just inside kOff, alternating; and single windows far off, each followed by a normal one.
    EXPECT_EQ(rule.next(votes(w % 2 ? 4.0f * 1.45f : 4.0f / 1.45f), &why), Action::kNone);
    EXPECT_EQ(rule.next(votes(w % 3 ? 40.0f : 4.0f), &why), Action::kNone);
    EXPECT_EQ(rule.next(votes(4.0f), &why), Action::kNone);
  }
}

TEST(AdaptRule, TheMedianRankDecidesNotTheOddOne) {
  Rule rule;
  settle(rule, 1.0f);
  std::vector<Vote> v = votes(1.0f, 1000, 5);
  v[3].ratio = 100;  // one rank far off (a straggler's own calls, say)
  v[1].ratio = 100;
  std::string why;
  for (int w = 0; w < 5; ++w) EXPECT_EQ(rule.next(v, &why), Action::kNone);
  v[2].ratio = 100;  // now most ranks are
  EXPECT_EQ(rule.next(v, &why), Action::kNone);
  EXPECT_EQ(rule.next(v, &why), Action::kReplan);
}

TEST(AdaptRule, TooFewRanksWithSamplesOrOneThatCannotProbeHoldsStill) {
  Rule rule;
  settle(rule, 1.0f);
  std::string why;
  std::vector<Vote> few = votes(10.0f);
  few[0].samples = few[1].samples = few[2].samples = 0;  // one rank of four saw a call end
  for (int w = 0; w < 5; ++w) EXPECT_EQ(rule.next(few, &why), Action::kNone);
  std::vector<Vote> device = votes(10.0f);
  device[2].canProbe = 0;
  for (int w = 0; w < 5; ++w) EXPECT_EQ(rule.next(device, &why), Action::kNone);
  EXPECT_FLOAT_EQ(rule.reference(), 1.0f);
}

TEST(AdaptRule, AReplanThatMeasuresSlowerPerByteIsUndoneOnce) {
  Rule rule;
  settle(rule, 1.0f, 8000);
  std::string why;
  for (int w = 0; w < kPersist; ++w) (void)rule.next(votes(0.4f, 3000), &why);  // it got faster
  rule.replanned(true);  // the caller re-planned on that
  // The new plan: priced cheaper (ratio ~4) but it runs at 12000 us per MiB, 4x the old plan's
  // last window.
  EXPECT_EQ(rule.next(votes(4.0f, 12000), &why), Action::kNone);  // warm-up
  EXPECT_EQ(rule.next(votes(4.0f, 12000), &why), Action::kRevert);
  EXPECT_NE(why.find("12000 us per MiB, the old one's 3000"), std::string::npos) << why;
  rule.replanned(false);  // back on the old plan: measured afresh, judged by nobody
  EXPECT_EQ(rule.next(votes(0.4f, 3000), &why), Action::kNone);
  EXPECT_EQ(rule.next(votes(0.4f, 3000), &why), Action::kNone);
  EXPECT_FLOAT_EQ(rule.reference(), 0.4f);
  for (int w = 0; w < 10; ++w) EXPECT_EQ(rule.next(votes(0.4f, 3000), &why), Action::kNone);
}

TEST(AdaptRule, AReplanThatMeasuresNoWorseStays) {
  Rule rule;
  settle(rule, 4.0f, 30000);
  std::string why;
  for (int w = 0; w < kPersist; ++w) (void)rule.next(votes(16.0f, 120000), &why);  // degraded
  rule.replanned(true);
  EXPECT_EQ(rule.next(votes(1.0f, 19000), &why), Action::kNone);
  EXPECT_EQ(rule.next(votes(1.0f, 19000), &why), Action::kNone);
  EXPECT_FLOAT_EQ(rule.reference(), 1.0f);
}

TEST(AdaptRule, ARankLongerOutsideItsCallsForKPersistWindowsIsNamedLateAndNotReplannedFor) {
  Rule rule;
  settle(rule, 1.0f);
  std::string why;
  // Rank 2 works 40 ms longer between calls than the others: their calls take 140 ms (1.4x the
  // price, under kOff), its own 100 ms. Then 3x the price, which would re-plan, but rank 2 is late.
  std::vector<Vote> v = votes(1.4f);
  for (Vote& x : v) x.callUs = 140000;
  v[2].callUs = 100000;
  v[2].gapUs = 50000;
  v[2].ratio = 1.0f;
  for (int w = 1; w < kPersist; ++w) EXPECT_EQ(rule.next(v, &why), Action::kNone);
  EXPECT_EQ(rule.next(v, &why), Action::kLate);
  EXPECT_EQ(rule.straggler().rank, 2);
  EXPECT_NEAR(rule.straggler().lateUs, 40000, 1);
  EXPECT_NE(why.find("40.0 ms longer outside the communicator's calls than the median rank (10.0 "
                     "ms), whose calls took 140.0 ms"),
            std::string::npos)
      << why;
  for (Vote& x : v) x.ratio = 3.0f;
  for (int w = 0; w < 10; ++w) EXPECT_EQ(rule.next(v, &why), Action::kNone);
  EXPECT_EQ(rule.straggler().rank, 2);
  // On time again: named off after kPersist windows, and the reference is measured afresh.
  const std::vector<Vote> fine = votes(1.0f);
  for (int w = 1; w < kPersist; ++w) EXPECT_EQ(rule.next(fine, &why), Action::kNone);
  EXPECT_EQ(rule.next(fine, &why), Action::kOnTime);
  EXPECT_NE(why.find("rank 2's large calls no longer start late"), std::string::npos) << why;
  EXPECT_EQ(rule.straggler().rank, -1);
  EXPECT_EQ(rule.next(fine, &why), Action::kNone);
  EXPECT_FLOAT_EQ(rule.reference(), 1.0f);
}

TEST(AdaptRule, SmallSkewsAndOneOddWindowNameNobody) {
  Rule rule;
  settle(rule, 1.0f);
  std::string why;
  std::vector<Vote> v = votes(1.0f);
  v[1].gapUs = 10000 + 110000 * kLateShare * 0.9;  // under a fifth of the round longer outside
  for (int w = 0; w < 10; ++w) EXPECT_EQ(rule.next(v, &why), Action::kNone);
  std::vector<Vote> tiny = votes(1.0f);
  for (Vote& x : tiny) x.callUs = 1000, x.gapUs = 1000;
  tiny[3].gapUs = 1000 + kLateMinUs * 0.9;  // a large share of a short round, but under kLateMinUs
  for (int w = 0; w < 10; ++w) EXPECT_EQ(rule.next(tiny, &why), Action::kNone);
  // Shorter calls alone (a rank next to a slow link starts late because its last call ended
  // late) name nobody.
  std::vector<Vote> behindSlowLink = votes(1.0f);
  behindSlowLink[1].callUs = 50000;
  for (int w = 0; w < 10; ++w) EXPECT_EQ(rule.next(behindSlowLink, &why), Action::kNone);
  std::vector<Vote> odd = votes(1.0f);
  odd[0].gapUs = 100000;  // far longer outside, one window in every two
  for (int w = 0; w < 10; ++w) {
    EXPECT_EQ(rule.next(odd, &why), Action::kNone);
    EXPECT_EQ(rule.next(votes(1.0f), &why), Action::kNone);
  }
  EXPECT_EQ(rule.straggler().rank, -1);
}

// Every rank's connections to other hosts ran at `path` x their price.
std::vector<Vote> pathVotes(float path, int ranks = 4) {
  std::vector<Vote> v = votes(1.0f, 1000, ranks);
  for (Vote& x : v) x.pathRatio = path;
  return v;
}

// The same votes kPersist windows in a row: nothing until the last, which gives the action
// returned (its reason in *why).
Action persisted(Rule& rule, const std::vector<Vote>& v, std::string* why) {
  for (int w = 1; w < kPersist; ++w) EXPECT_EQ(rule.next(v, why), Action::kNone);
  return rule.next(v, why);
}

TEST(AdaptRule, PathsSlowerThanPricedProbeUnderLoadOnceUntilCallsMove) {
  Rule rule;
  settle(rule, 1.0f);
  std::string why;
  EXPECT_EQ(persisted(rule, pathVotes(4.0f), &why), Action::kProbeUnderLoad);
  EXPECT_NE(why.find("4.00x"), std::string::npos) << why;
  // What the probe found is judged as a re-plan is; the paths may stay slow under the new plan
  // (its price is per link, its flows share one): no second probe for the same network.
  rule.replanned(true);
  settle(rule, 1.0f);
  for (int w = 0; w < 10; ++w) EXPECT_EQ(rule.next(pathVotes(4.0f), &why), Action::kNone);
  // Calls that move re-plan, and the paths may then be checked again.
  EXPECT_EQ(persisted(rule, votes(2.0f), &why), Action::kReplan);
  rule.replanned(true);
  settle(rule, 1.0f);
  EXPECT_EQ(persisted(rule, pathVotes(4.0f), &why), Action::kProbeUnderLoad);
}

TEST(AdaptRule, PathsFasterThanPricedProbeUnderLoadToo) {
  // The init probe measured the links slow (the machine was loaded then): every price is high.
  Rule rule;
  settle(rule, 1.0f);
  std::string why;
  EXPECT_EQ(persisted(rule, pathVotes(0.25f), &why), Action::kProbeUnderLoad);
  EXPECT_NE(why.find("faster than the probe measured"), std::string::npos) << why;
}

TEST(AdaptRule, PathsNearTheirPriceOrUnmeasuredProbeNothing) {
  Rule rule;
  settle(rule, 1.0f);
  std::string why;
  for (int w = 0; w < 20; ++w) {
    EXPECT_EQ(rule.next(pathVotes(w % 2 ? 1.45f : 0.7f), &why), Action::kNone);
    EXPECT_EQ(rule.next(pathVotes(0.0f), &why), Action::kNone);  // no TCP figures yet
    EXPECT_EQ(rule.next(pathVotes(4.0f), &why), Action::kNone);  // one window alone
  }
  // One rank of four whose paths are slow (its own link, say) does not move the median.
  std::vector<Vote> one = pathVotes(1.0f);
  one[2].pathRatio = 8.0f;
  for (int w = 0; w < 10; ++w) EXPECT_EQ(rule.next(one, &why), Action::kNone);
  // Before the reference is set nothing is judged.
  Rule fresh;
  for (int w = 0; w <= kWarmupWindows; ++w)
    EXPECT_EQ(fresh.next(pathVotes(4.0f), &why), Action::kNone);
}

}  // namespace
}  // namespace braid::adapt
