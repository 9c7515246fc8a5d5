// The global fits redone (validate/refit.h): the override the refits use, the priors, and the
// nccl-tests fit reproduced from its suite.
#include "validate/refit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cost_models/collective_algorithms.h"
#include "test_paths.h"
#include "validate/suite.h"

namespace cs {
namespace {

const validate::FitGroup& group(const std::vector<validate::FitGroup>& groups,
                                const std::string& name) {
  for (const auto& g : groups) {
    if (g.name == name) return g;
  }
  throw std::logic_error("no fit group " + name);
}

TEST(Refit, ScopedCollectiveFitsReachEveryCollectiveParamsMadeInsideIt) {
  cost::CollectiveFits fits;
  fits.launch_overhead_us = 7.5;
  fits.pass_efficiency = 0.8;
  {
    const cost::ScopedCollectiveFits scope(fits);
    const cost::CollectiveParams p;
    EXPECT_DOUBLE_EQ(p.launch_overhead.us(), 7.5);
    EXPECT_DOUBLE_EQ(p.pass_efficiency, 0.8);
    EXPECT_DOUBLE_EQ(p.ll_channel_rate.gb_per_s(), cost::kH100LlChannelGBps);  // not replaced
  }
  // The shipped fits again once the scope ends.
  const cost::CollectiveParams after;
  EXPECT_DOUBLE_EQ(after.launch_overhead.us(), cost::kH100LaunchOverheadUs);
  EXPECT_DOUBLE_EQ(after.pass_efficiency, cost::kBufferPassEfficiency);
}

TEST(Refit, WithNoSourceLeftEachGroupTakesWhatTheModelWouldUseWithoutData) {
  const validate::SuiteSet none;
  const auto groups = validate::fit_groups();
  // NCCL 2.28's own model (tuning.cc): ring LL base latency 6.6 us, Hopper nvlsEfficiency 0.85,
  // and no NVLS pipeline term.
  const auto nccl = validate::fit_group(none, group(groups, "nccl-tests collective constants"), {});
  ASSERT_EQ(nccl.values.size(), 4u);
  EXPECT_DOUBLE_EQ(nccl.values[0], 6.6);
  EXPECT_DOUBLE_EQ(nccl.values[2], 0.0);
  EXPECT_DOUBLE_EQ(nccl.values[3], 0.85);
  EXPECT_EQ(nccl.evaluations, 0);
  // A power-capped variant's tensor clock: the base part's.
  const auto clock =
      validate::fit_group(none, group(groups, "h100_sxm_96gb_500w tensor clock"), {});
  EXPECT_DOUBLE_EQ(clock.values.at(0), 1.0);
}

TEST(Refit, ATensorClockIsFittedOnEverySourceItsProfileNames) {
  // profiles/h200.yaml: tensor_clock_fitted_on "h200_gpu_database_20261128_calibration +
  // h200_torch_steps_202611 (38 + 7 rows, ...)": both sources, in that order; the A100's names one
  // ("vtrain_a100_multi_node (109 rows, ...)").
  const auto groups = validate::fit_groups();
  EXPECT_EQ(group(groups, "h200 tensor clock").fitted_on,
            (std::vector<std::string>{"h200_gpu_database_20261128_calibration",
                                      "h200_torch_steps_202611"}));
  EXPECT_EQ(group(groups, "a100_sxm_80gb tensor clock").fitted_on,
            (std::vector<std::string>{"vtrain_a100_multi_node"}));
}

TEST(Refit, NcclTestsFitReproducesTheShippedConstantsWithinOneGridStep) {
  // The four collective constants were fitted on the 31 all_reduce sizes by a grid search (worst
  // |error|, then the mean): redone from NCCL's own priors, the search lands within one step of
  // each, and its worst row is no worse than the shipped constants' 9.80%.
  const validate::SuiteSet set = validate::load_suite_set(
      cs::test_paths::source_dir() + "/validate/suites/nccl_tests_8xh100.yaml", {});
  const auto groups = validate::fit_groups();
  const auto& g = group(groups, "nccl-tests collective constants");
  const auto fit = validate::fit_group(set, g, {"nccl_tests_8xh100_awsome"});
  ASSERT_EQ(fit.values.size(), g.parameters.size());
  for (size_t i = 0; i < g.parameters.size(); ++i) {
    EXPECT_LE(std::abs(fit.values[i] - g.parameters[i].shipped), g.parameters[i].grid.step * 1.001)
        << g.parameters[i].name;
  }
  EXPECT_LE(fit.objective, set.shipped.at(0).worst + 1e-9);
}

TEST(Refit, EagerHostTimeReachesTheRowsOfEagerStacks) {
  // GPT-2 Large at batch 1 on one H100 under eager PyTorch: from 40 us per kernel on the step is
  // host-bound (the GPU waits for every launch), so each further microsecond adds the same time,
  // one per kernel the host issues: the step grows linearly, by equal steps from 40 to 50 to 60.
  const std::string file =
      cs::test_paths::source_dir() + "/validate/suites/seed002_gpt2_large_1xh100_batch.yaml";
  auto step_at = [&](double host_us) {  // seconds per token at batch 1: 1 / tokens per second
    validate::SuiteOptions o;
    o.eager_host_us = host_us;
    const validate::SourceResult r = validate::run_suite_file(file, o);
    EXPECT_EQ(r.rows.at(0).label, "batch 1");
    return 1 / r.rows.at(0).predicted;
  };
  const double s40 = step_at(40), s50 = step_at(50), s60 = step_at(60);
  EXPECT_GT(s50, s40 * 1.1);
  EXPECT_NEAR((s60 - s50) / (s50 - s40), 1.0, 0.01);
}

}  // namespace
}  // namespace cs
