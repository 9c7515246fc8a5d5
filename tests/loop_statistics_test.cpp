// validate --loop's judgement (validate/loop_statistics.h): the median error, its bias and the
// machine's steadiness, from hand-made runs.
#include "validate/loop_statistics.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace cs::validate {
namespace {

TEST(LoopStatistics, TheMedianErrorIsTheRunInTheMiddleBySizeAndKeepsItsSign) {
  // Errors -4, +1, -3, +2, +6. By size: 1, 2, 3, 4, 6: the middle one is -3 (kept signed).
  // Signed, sorted: -4, -3, 1, 2, 6: the middle one is +1.
  const LoopSummary s = summarize_loop({-4, 1, -3, 2, 6}, {1, 1, 1, 1, 1}, {1, 1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(s.median_error, -3);
  EXPECT_DOUBLE_EQ(s.median_signed_error, 1);
  EXPECT_DOUBLE_EQ(s.drift, 0);  // nothing moved
  EXPECT_TRUE(s.judged);
  EXPECT_TRUE(s.steady);
}

TEST(LoopStatistics, FromFiveRunsTheHighestAndLowestAreLeftOutOfTheSpread) {
  // Predictions 10, 11, 12, 13, 30 ms: without 10 and 30, (13 - 11) / 12 = 0.1667, steady even
  // though one run took three times as long. Measurements 8, 10, 12, 13, 14: without 8 and 14,
  // (13 - 10) / 12 = 0.25 > 0.20: not steady, and the larger spread is the drift.
  EXPECT_NEAR(spread({10, 11, 12, 13, 30}), 2.0 / 12.0, 1e-12);
  const LoopSummary s = summarize_loop({1, 1, 1, 1, 1}, {10, 11, 12, 13, 30}, {8, 10, 12, 13, 14});
  EXPECT_NEAR(s.drift, 0.25, 1e-12);
  EXPECT_TRUE(s.judged);
  EXPECT_FALSE(s.steady);
}

TEST(LoopStatistics, BelowFiveRunsNothingIsLeftOutAndBelowThreeNothingIsJudged) {
  // Three runs 10, 11, 13: (13 - 10) / 11 = 0.2727, not steady.
  EXPECT_NEAR(spread({13, 10, 11}), 3.0 / 11.0, 1e-12);
  const LoopSummary three = summarize_loop({5, -5, 2}, {10, 11, 13}, {1, 1, 1});
  EXPECT_FALSE(three.steady);
  // Two runs that moved by half: the spread is measured, 0.5 / 1.5 (the upper middle of two is
  // the median), but two runs are too few to judge, so the machine counts as steady.
  const LoopSummary two = summarize_loop({5, -5}, {1, 1.5}, {1, 1});
  EXPECT_NEAR(two.drift, 0.5 / 1.5, 1e-12);
  EXPECT_FALSE(two.judged);
  EXPECT_TRUE(two.steady);
}

TEST(LoopStatistics, RunsWithoutAllThreeFiguresAreRefused) {
  EXPECT_THROW(summarize_loop({}, {}, {}), std::invalid_argument);
  EXPECT_THROW(summarize_loop({1, 2}, {1}, {1, 2}), std::invalid_argument);
}

}  // namespace
}  // namespace cs::validate
