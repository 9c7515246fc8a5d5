// sim::set_step_time: a measured report takes the median step across runs as its step time, and
// its rates follow (execute reports the median step, not the span of the one step it shows).
#include <gtest/gtest.h>

#include "sim/report.h"

namespace cs::sim {
namespace {

Report two_second_step() {
  // 2 s per step carrying 2,000 tokens of 20 samples at 40% MFU: 1,000 tokens/s, 10 samples/s.
  Report r;
  r.step_time = SimTime::from_seconds(2);
  r.tokens_per_second = 1000;
  r.samples_per_second = 10;
  r.mfu = 0.4;
  r.stages.push_back({SimTime::from_seconds(1)});
  return r;
}

TEST(ReportStepTime, RatesFollowTheStepTime) {
  // The same work in 4 s: half the rates (500 tokens/s, 5 samples/s, 20% MFU); the stage's 1 s
  // of idle time stays, a quarter of the new step.
  Report r = two_second_step();
  set_step_time(r, SimTime::from_seconds(4));
  EXPECT_EQ(r.step_time, SimTime::from_seconds(4));
  EXPECT_DOUBLE_EQ(r.tokens_per_second, 500);
  EXPECT_DOUBLE_EQ(r.samples_per_second, 5);
  EXPECT_DOUBLE_EQ(r.mfu, 0.2);
  EXPECT_DOUBLE_EQ(r.bubble_fraction(0), 0.25);
  // In 1.6 s: 2 / 1.6 = 1.25 times the rates.
  Report f = two_second_step();
  set_step_time(f, SimTime::from_seconds(1.6));
  EXPECT_DOUBLE_EQ(f.tokens_per_second, 1250);
  EXPECT_DOUBLE_EQ(f.mfu, 0.5);
}

TEST(ReportStepTime, AZeroStepTimeChangesNothing) {
  // No measured median (0), or a report of an empty step: nothing to scale by.
  Report r = two_second_step();
  set_step_time(r, SimTime{});
  EXPECT_EQ(r.step_time, SimTime::from_seconds(2));
  EXPECT_DOUBLE_EQ(r.tokens_per_second, 1000);
  Report empty;
  set_step_time(empty, SimTime::from_seconds(1));
  EXPECT_EQ(empty.step_time, SimTime{});
  EXPECT_DOUBLE_EQ(empty.tokens_per_second, 0);
}

}  // namespace
}  // namespace cs::sim
