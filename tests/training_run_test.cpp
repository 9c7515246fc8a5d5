// The whole training run from one step (training_run/): days, GPU-hours, dollars and MWh for a
// token budget, the checkpoint interval that maximises goodput under failures (Young 1974, Daly
// 2006) and the goodput there, the stated defaults, and the `run:` block's and flags' checks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "scenarios/scenario.h"
#include "training_run/defaults.h"
#include "training_run/forecast.h"
#include "training_run/goodput.h"

namespace cs {
namespace {

using training_run::RunInputs;
using training_run::StepFacts;

// 1024 GPUs, 2.0 s per step, 1024 sequences of 4096 tokens = 4,194,304 tokens per step.
StepFacts llama_like_step() {
  StepFacts s;
  s.step_seconds = 2.0;
  s.gpus = 1024;
  s.tokens_per_step = 1024.0 * 4096;
  s.parameters = 70'000'000'000;
  s.gpu = "h100_sxm";
  return s;
}

TEST(TrainingRun, DaysDollarsAndEnergyOfATokenBudget) {
  RunInputs in;
  in.tokens = 1e12;
  in.usd_per_gpu_hour = 2.0;
  in.watts_per_gpu = 1000;
  in.pue = 1.2;
  in.failures_per_gpu_hour = 0;
  const auto f = training_run::forecast(in, llama_like_step());
  // 1e12 / 4,194,304 = 238,418.58 -> 238,419 whole steps; x 2 s = 476,838 s = 5.51896 days.
  EXPECT_EQ(f.steps, 238419);
  EXPECT_DOUBLE_EQ(f.without_failures.seconds, 476838);
  EXPECT_NEAR(f.without_failures.days(), 5.51896, 1e-5);
  // 476,838 s / 3600 x 1024 GPUs = 135,633.92 GPU-hours; x $2 = $271,267.84.
  EXPECT_NEAR(f.without_failures.gpu_hours, 135633.92, 1e-6);
  EXPECT_NEAR(f.without_failures.usd, 271267.84, 1e-6);
  // 135,633.92 GPU-hours x 1,000 W x PUE 1.2 = 162,760,704 Wh = 162.760704 MWh.
  EXPECT_NEAR(f.without_failures.mwh, 162.760704, 1e-9);
  // No failures: no checkpoint interval, goodput 1, the same run.
  EXPECT_EQ(f.goodput, 1);
  EXPECT_EQ(f.checkpoint_interval_seconds, 0);
  EXPECT_DOUBLE_EQ(f.with_failures.usd, f.without_failures.usd);
  // The line `plan` can print for its winner, the same figures rounded.
  EXPECT_EQ(training_run::summary_line(f),
            "5.52 days (5.52 days without failures, goodput 100.00%), 135,634 GPU-hours, $271K, "
            "163 MWh for 1T tokens");
}

TEST(TrainingRun, StepsGivenInsteadOfTokens) {
  RunInputs in;
  in.steps = 1000;
  const auto f = training_run::forecast(in, llama_like_step());
  // 1000 steps x 4,194,304 tokens = 4.194304e9 tokens; 2,000 s.
  EXPECT_TRUE(f.given_in_steps);
  EXPECT_DOUBLE_EQ(f.tokens.value, 4.194304e9);
  EXPECT_FALSE(f.tokens.is_default);
  EXPECT_DOUBLE_EQ(f.without_failures.seconds, 2000);
}

TEST(TrainingRun, OptimalCheckpointIntervalYoungAndDaly) {
  // Llama 3's rate (419 / (16,384 x 54 x 24) per GPU-hour) on its 16,384 GPUs: one failure every
  // 54 x 24 / 419 h = 3.093079 h, M = 11,135.0835 s. A checkpoint written in delta = 60 s:
  //   Young: sqrt(2 x 60 x 11,135.0835) = 1,155.9455 s;
  //   Daly: x = 60 / (2 M) = 0.00269418, sqrt(x) = 0.0519055;
  //         1,155.9455 x (1 + 0.0519055 / 3 + 0.00269418 / 9) - 60 = 1,116.2915 s.
  const double mtbf = 1296.0 / 419 * 3600;
  EXPECT_NEAR(training_run::young_interval(60, mtbf), 1155.9455, 1e-3);
  EXPECT_NEAR(training_run::daly_interval(60, mtbf), 1116.2915, 1e-3);
  // A checkpoint as long as 2M or longer: Daly checkpoints once per MTBF.
  EXPECT_DOUBLE_EQ(training_run::daly_interval(3 * mtbf, mtbf), mtbf);
}

TEST(TrainingRun, GoodputAtTheOptimumUnderLlama3Failures) {
  // The same job (16,384 GPUs at Llama 3's default rate), a 600 GB checkpoint at 10 GB/s: written
  // in delta = 60 s, restored in 60 s; with the 600 s restart R = 660 s.
  StepFacts step = llama_like_step();
  step.gpus = 16384;
  RunInputs in;
  in.tokens = 1e12;
  in.checkpoint_bytes = 600e9;
  in.checkpoint_bandwidth = 10e9;
  const auto f = training_run::forecast(in, step);
  EXPECT_NEAR(f.mtbf_seconds, 11135.0835, 1e-3);
  EXPECT_NEAR(f.checkpoint_write_seconds, 60, 1e-9);
  EXPECT_NEAR(f.checkpoint_interval_seconds, 1116.2915, 1e-3);
  // Daly's expected time per second of work at tau = 1,116.2915 s:
  //   M e^(R/M) (e^((tau + delta)/M) - 1) / tau
  //   = 11,135.0835 x e^0.0592717 x (e^0.1056365 - 1) / 1,116.2915 = 1.179288,
  // goodput 1 / 1.179288 = 0.847969. The first-order estimate 1 - delta/tau - tau/2M - R/M
  // = 1 - 0.05375 - 0.05013 - 0.05927 = 0.8369 agrees to about 1%.
  EXPECT_NEAR(f.goodput, 0.847969, 1e-6);
  EXPECT_NEAR(f.with_failures.seconds, f.without_failures.seconds / 0.847969, 1.0);
  // It is the optimum: half or twice the interval gives less (0.8276 and 0.8265).
  const double r = 660;
  for (double tau : {f.checkpoint_interval_seconds / 2, f.checkpoint_interval_seconds * 2}) {
    EXPECT_LT(1 / training_run::wall_clock_factor(tau, 60, r, f.mtbf_seconds), f.goodput - 0.01);
  }
}

TEST(TrainingRun, FailuresTooFrequentToFinishAreRefused) {
  // One failure per GPU-hour on 16,384 GPUs: one every 3600 / 16,384 = 0.22 s, against 600 s of
  // restart: e^(600 / 0.22) overflows, the expected run time is unbounded.
  StepFacts step = llama_like_step();
  step.gpus = 16384;
  RunInputs in;
  in.failures_per_gpu_hour = 1;
  EXPECT_THROW(training_run::forecast(in, step), training_run::InputError);
}

TEST(TrainingRun, DefaultsAreStatedWithTheirSources) {
  const auto f = training_run::forecast({}, llama_like_step());
  // Tokens: 20 per parameter (Chinchilla): 1.4e12 for 70B; ceil(1.4e12 / 4,194,304) = 333,787.
  EXPECT_TRUE(f.tokens.is_default);
  EXPECT_DOUBLE_EQ(f.tokens.value, 1.4e12);
  EXPECT_EQ(f.steps, 333787);
  // H100: AWS p5.48xlarge $98.32/h / 8 = $12.29; DGX H100 10.2 kW / 8 = 1,275 W; PUE 1.1.
  EXPECT_DOUBLE_EQ(f.usd_per_gpu_hour.value, 12.29);
  EXPECT_DOUBLE_EQ(f.watts_per_gpu.value, 1275);
  EXPECT_DOUBLE_EQ(f.pue.value, 1.1);
  // 419 / 21,233,664 GPU-hours = 1.97328e-5 per GPU-hour.
  EXPECT_NEAR(f.failures_per_gpu_hour.value, 1.97328e-5, 1e-10);
  // 14 B per parameter x 70e9 = 980 GB, at 2 TB/s: 0.49 s.
  EXPECT_DOUBLE_EQ(f.checkpoint_bytes.value, 980e9);
  EXPECT_NEAR(f.checkpoint_write_seconds, 0.49, 1e-12);
  EXPECT_DOUBLE_EQ(f.restart_seconds.value, 600);
  for (const auto* in : {&f.usd_per_gpu_hour, &f.watts_per_gpu, &f.failures_per_gpu_hour}) {
    EXPECT_TRUE(in->is_default);
    EXPECT_FALSE(in->source.empty());
  }
  // A GPU without its own price says whose it took.
  EXPECT_NE(training_run::default_usd_per_gpu_hour("b200").source.find("H100's"),
            std::string::npos);
  // A100: DGX A100 6.5 kW / 8 = 812.5 W.
  EXPECT_DOUBLE_EQ(training_run::default_watts_per_gpu("a100_sxm_80gb").value, 812.5);
}

TEST(TrainingRun, ReportRowsMarkDefaultsAndNotGivenInputs) {
  RunInputs in;
  in.usd_per_gpu_hour = 2.5;
  const auto rows = training_run::report_rows(training_run::forecast(in, llama_like_step()));
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1].first, "price");
  EXPECT_EQ(rows[1].second, "$2.50 per GPU-hour");  // given: no default mark
  EXPECT_NE(rows[2].second.find("(default: DGX H100 system max 10.2 kW / 8 GPUs)"),
            std::string::npos);
}

std::string run_error(const std::string& run_block) {
  const std::string text =
      "model: {preset: mlp-small}\n"
      "cluster: {preset: dgx_h100, nodes: 1}\n"
      "layout: {dp: 8}\n"
      "training: {global_batch: 64, micro_batch: 8, seq_len: 1}\n"
      "run:\n" +
      run_block;
  try {
    scenario::parse_scenario(text, "run.yaml");
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TrainingRun, ScenarioRunBlockIsReadAndChecked) {
  const std::string text =
      "model: {preset: mlp-small}\n"
      "cluster: {preset: dgx_h100, nodes: 1}\n"
      "layout: {dp: 8}\n"
      "training: {global_batch: 64, micro_batch: 8, seq_len: 1}\n"
      "run: {tokens: 15T, usd_per_gpu_hour: 2.1, checkpoint_bandwidth: "
      "50GB/s, checkpoint_size: 1TB, restart_overhead: 300s}\n";
  const auto s = scenario::parse_scenario(text, "run.yaml");
  EXPECT_DOUBLE_EQ(*s.run.tokens, 15e12);
  EXPECT_DOUBLE_EQ(*s.run.usd_per_gpu_hour, 2.1);
  EXPECT_DOUBLE_EQ(*s.run.checkpoint_bandwidth, 50e9);
  EXPECT_DOUBLE_EQ(*s.run.checkpoint_bytes, 1e12);
  EXPECT_DOUBLE_EQ(*s.run.restart_seconds, 300);
  EXPECT_FALSE(s.run.pue);

  EXPECT_EQ(run_error("  pue: 5\n"),
            "run.yaml:6:8: run.pue: 5 is out of range: at least 1 and at most 3 (a PUE counts the "
            "facility's power over the IT power, so at least 1; 3 is twice the global average of "
            "about 1.6)");
  EXPECT_EQ(run_error("  failures_per_gpu_hour: lots\n"),
            "run.yaml:6:26: run.failures_per_gpu_hour: expected a number, got 'lots'");
  EXPECT_EQ(
      run_error("  tokens: 2e16\n"),
      "run.yaml:6:11: run.tokens: 2e+16 is out of range: above 0 and at most 1e+15 tokens (64 "
      "times the 15.6T tokens Llama 3 was trained on)");
  EXPECT_EQ(run_error("  tokens: 1T\n  steps: 5\n"),
            "run.yaml:6:3: run: give either 'tokens' or 'steps', not both");
  EXPECT_EQ(run_error("  checkpoint_size: 100\n"),
            "run.yaml:6:20: run.checkpoint_size: '100' has no unit; write e.g. 100GB (units: B, "
            "KB, MB, GB, TB, KiB, ...)");
}

TEST(TrainingRun, FlagsOverrideTheScenarioAndTokensReplaceSteps) {
  RunInputs scenario;
  scenario.steps = 100;
  scenario.pue = 1.3;
  RunInputs flags;
  flags.tokens = 1e9;
  scenario.override_with(flags);
  EXPECT_FALSE(scenario.steps);
  EXPECT_DOUBLE_EQ(*scenario.tokens, 1e9);
  EXPECT_DOUBLE_EQ(*scenario.pue, 1.3);
}

}  // namespace
}  // namespace cs
