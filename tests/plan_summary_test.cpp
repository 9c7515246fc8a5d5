// What plan says beyond its ranking (planner/plan_summary.h), on hand-built plan results: the
// winner's verdict, the leanest layout when none fits, the survivors by pipeline and expert size.
#include "planner/plan_summary.h"

#include <gtest/gtest.h>

namespace cs::planner {
namespace {

SimTime ms(double v) { return SimTime::from_seconds(v * 1e-3); }

// Two ranked layouts: the winner (candidate 0) and the runner-up (candidate 1), with their step
// split as compute + exposed communication + idle.
PlanResult two_layouts(double w_compute, double w_exposed, double w_idle, double u_compute,
                       double u_exposed, double u_idle) {
  PlanResult r;
  r.enumeration.candidates.resize(2);
  for (size_t k = 0; k < 2; ++k) {
    Evaluation e;
    e.candidate = k;
    e.compute = ms(k == 0 ? w_compute : u_compute);
    e.exposed_communication = ms(k == 0 ? w_exposed : u_exposed);
    e.idle = ms(k == 0 ? w_idle : u_idle);
    e.step_time = e.compute + e.exposed_communication + e.idle;
    e.peak_memory = int64_t{10} << 30;
    e.fits = true;
    r.evaluations.push_back(e);
  }
  r.ranked = {0, 1};
  return r;
}

TEST(PlanSummary, TheWinnerIsNamedByTheComponentThatMovedTheMost) {
  // Winner 600 + 100 + 50 = 750 ms, runner-up 610 + 150 + 60 = 820 ms: exposed communication
  // moved 50 ms, compute and idle 10 each. Gap (820 - 750) / 820 = 8.537%.
  const WinnerVerdict v = winner_verdict(two_layouts(600, 100, 50, 610, 150, 60));
  EXPECT_EQ(v.reason, WinReason::less_exposed_communication);
  EXPECT_NEAR(v.gap, 70.0 / 820.0, 1e-12);
  // Idle 20 ms against compute 5 and exposed 3: the bubble.
  EXPECT_EQ(winner_verdict(two_layouts(600, 100, 50, 605, 103, 70)).reason, WinReason::less_idle);
  // Compute 30 ms against 5 and 5.
  EXPECT_EQ(winner_verdict(two_layouts(600, 100, 50, 630, 105, 55)).reason,
            WinReason::less_compute);
  // Equal moves: exposed communication before idle, idle before compute.
  EXPECT_EQ(winner_verdict(two_layouts(600, 100, 50, 610, 110, 60)).reason,
            WinReason::less_exposed_communication);
  EXPECT_EQ(winner_verdict(two_layouts(600, 100, 50, 610, 105, 60)).reason, WinReason::less_idle);
}

TEST(PlanSummary, ATiedWinnerIsNamedByTheRobustnessFigureThatPutItFirst) {
  // Within the expected error (tied = 2) the winner may be the slower: 1050 ms against 1000 ms.
  // Usable memory 11 GiB, where memory is scarce (a tenth is 1.1 GiB): the winner's 10 GiB peak
  // leaves 1 whole GiB, the runner-up's 10.5 GiB none: memory left decides. Both at 10 GiB:
  // exposed communication (50 against 80 ms, 3% of the step: past the 1% that counts); equal too:
  // the bubble (1% against 3%).
  PlanResult r = two_layouts(1000, 50, 0, 920, 80, 0);
  r.tied = 2;
  const int64_t usable = int64_t{11} << 30;
  auto set_peak = [&](size_t k, int64_t peak) {
    r.evaluations[k].peak_memory = peak;
    r.evaluations[k].memory_left = usable - peak;
  };
  set_peak(0, int64_t{10} << 30);
  set_peak(1, (int64_t{21} << 30) / 2);
  const WinnerVerdict v = winner_verdict(r);
  EXPECT_EQ(v.reason, WinReason::more_memory_left);
  EXPECT_NEAR(v.gap, -50.0 / 1000.0, 1e-12);
  set_peak(1, int64_t{10} << 30);
  EXPECT_EQ(winner_verdict(r).reason, WinReason::less_exposed_when_tied);
  r.evaluations[1].exposed_communication = r.evaluations[0].exposed_communication;
  r.evaluations[0].bubble = 0.01;
  r.evaluations[1].bubble = 0.03;
  EXPECT_EQ(winner_verdict(r).reason, WinReason::smaller_bubble_when_tied);
}

TEST(PlanSummary, AStepWithinFiveHundredthsOfAPercentIsATieBrokenByMemory) {
  // 1000 ms against 1000.4 ms: gap 0.4 / 1000.4 = 0.04% < 0.05%.
  PlanResult r = two_layouts(1000, 0, 0, 1000.4, 0, 0);
  EXPECT_EQ(winner_verdict(r).reason, WinReason::tie_order);  // equally lean: enumeration order
  r.evaluations[0].peak_memory -= 1;
  EXPECT_EQ(winner_verdict(r).reason, WinReason::tie_lower_memory);
  // 1000 against 1000.6 ms: 0.06%, no tie; all of it compute.
  EXPECT_EQ(winner_verdict(two_layouts(1000, 0, 0, 1000.6, 0, 0)).reason, WinReason::less_compute);
  // One layout that fits: no runner-up to compare with.
  r.ranked = {0};
  EXPECT_EQ(winner_verdict(r).reason, WinReason::only_fit);
  EXPECT_EQ(winner_verdict(r).gap, 0);
}

TEST(PlanSummary, TheLeanestLayoutIsTheSimulatedOneElseTheSmallestBound) {
  PlanResult r;
  r.enumeration.candidates.resize(5);
  EXPECT_FALSE(leanest_layout(r).has_value());  // nothing simulated or pruned: nothing to name
  // Pruned only: candidates 3 (bound 40 + 10 + 80 + 5 = 135) and 4 (50 + 20 + 30 + 60 = 160).
  r.pruned.push_back({4, {50, 20, 30, 60}, "model state alone exceeds memory"});
  r.pruned.push_back({3, {40, 10, 80, 5}, "model state alone exceeds memory"});
  auto l = leanest_layout(r);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->candidate, 3u);
  EXPECT_EQ(l->peak_memory, 135);
  EXPECT_TRUE(l->lower_bound);
  EXPECT_EQ(l->at_peak[static_cast<size_t>(ir::MemoryCategory::optimizer_state)], 80);
  EXPECT_EQ(dominant_category(l->at_peak), ir::MemoryCategory::optimizer_state);
  // Simulated layouts take precedence over any bound, even a smaller one: peaks 300, 200, 200
  // (candidates 0, 1, 2): the first of the two smallest.
  for (size_t k = 0; k < 3; ++k) {
    Evaluation e;
    e.candidate = k;
    e.peak_memory = k == 0 ? 300 : 200;
    e.at_peak[static_cast<size_t>(ir::MemoryCategory::activations)] = e.peak_memory;
    r.evaluations.push_back(e);
  }
  l = leanest_layout(r);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->candidate, 1u);
  EXPECT_EQ(l->peak_memory, 200);
  EXPECT_FALSE(l->lower_bound);
  EXPECT_EQ(dominant_category(l->at_peak), ir::MemoryCategory::activations);
}

TEST(PlanSummary, TheDominantCategoryIsTheFirstOfEquals) {
  std::array<int64_t, ir::kMemoryCategoryCount> parts{};
  EXPECT_EQ(dominant_category(parts), ir::MemoryCategory::parameters);  // all zero
  parts[static_cast<size_t>(ir::MemoryCategory::gradients)] = 5;
  parts[static_cast<size_t>(ir::MemoryCategory::activations)] = 5;
  EXPECT_EQ(dominant_category(parts), ir::MemoryCategory::gradients);
}

TEST(PlanSummary, SurvivorsOfTheMemoryBoundAreCountedByPipelineAndExpertSize) {
  // (pp, ep) of candidates 0..4: (1,1), (2,1), (2,1), (2,2), (4,1); 1 and 4 pruned.
  PlanResult r;
  const std::pair<int, int> shape[] = {{1, 1}, {2, 1}, {2, 1}, {2, 2}, {4, 1}};
  for (const auto& [pp, ep] : shape) {
    Candidate c;
    c.layout.pp = pp;
    c.layout.ep = ep;
    r.enumeration.candidates.push_back(c);
  }
  r.pruned.push_back({1, {}, "x"});
  r.pruned.push_back({4, {}, "x"});
  const auto by = survivors_by_pp_ep(r);
  const std::map<std::pair<int, int>, size_t> expected{{{1, 1}, 1}, {{2, 1}, 1}, {{2, 2}, 1}};
  EXPECT_EQ(by, expected);
}

}  // namespace
}  // namespace cs::planner
