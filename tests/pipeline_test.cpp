// Pipeline schedules: bubble fractions, the interleaved schedule's 1/v, activation memory in
// flight, and seed 004's utilisation figures.
#include <gtest/gtest.h>

#include <set>

#include "gemm_cost_model.h"
#include "sim/engine.h"
#include "sim/report.h"
#include "strategies/pipeline_schedule.h"
#include "strategies/training_step.h"
#include "tiny_models.h"

namespace cs {
namespace {

// Every GEMM takes 1 us; everything else (elementwise, loss, optimizer, collectives, transfers)
// is free, so a stage's forward and backward times are exact multiples of its layer count.
using GemmOnlyCostModel = test::GemmMicrosecondCostModel;

// An 8-layer MLP: per layer the forward is one GEMM (1 us) and the backward two (dgrad + wgrad,
// 2 us), so a stage of L layers has f = L us and b = 2L us.
using test::mlp8;

struct PipelineRun {
  sim::Report report;
  strategy::StepGraph step;
};

PipelineRun run_pipeline(strategy::PipelineSchedule schedule, int p, int m, int v = 1) {
  strategy::Layout l;
  l.pp = p;
  l.schedule = schedule;
  l.virtual_stages = v;
  strategy::TrainingSpec t;
  t.global_batch = m;
  t.micro_batch = 1;
  t.seq_len = 1;
  strategy::validate(l, t, mlp8(), p);
  PipelineRun r{{}, strategy::build_training_step(mlp8(), l, t)};
  GemmOnlyCostModel costs;
  const sim::Timeline tl = sim::Engine(r.step.graph, costs).run();
  sim::WorkloadFacts facts;
  facts.stage_of_rank = r.step.stage_of_rank;
  r.report = sim::make_report(r.step.graph, tl, facts);
  return r;
}

TEST(Pipeline, GpipeAnd1F1BBubbleIsExactlyPMinus1OverMPlusPMinus1) {
  // With per-stage forward f and backward b and free communication, both schedules take
  // (m + p - 1)(f + b): each stage is busy m(f + b) and idle (p - 1)(f + b), so the idle share
  // of every stage is (p - 1)/(m + p - 1).
  for (auto schedule :
       {strategy::PipelineSchedule::gpipe, strategy::PipelineSchedule::one_f_one_b}) {
    for (int p : {2, 4}) {
      for (int m : {1, 4, 8}) {
        const auto r = run_pipeline(schedule, p, m);
        const double f = 8.0 / p, b = 2 * f;
        EXPECT_DOUBLE_EQ(r.report.step_time.us(), (m + p - 1) * (f + b)) << "p=" << p << " m=" << m;
        ASSERT_EQ(r.report.stages.size(), static_cast<size_t>(p));
        for (size_t stage = 0; stage < r.report.stages.size(); ++stage) {
          EXPECT_DOUBLE_EQ(r.report.bubble_fraction(stage), double(p - 1) / double(m + p - 1))
              << "p=" << p << " m=" << m;
        }
      }
    }
  }
}

TEST(Pipeline, Seed004UtilisationForTwoStages) {
  // Seed 004: p = 2 gives 50% utilisation at m = 1, 4/(4+1) = 80% at m = 4 and 8/9 = 89% at m = 8.
  // In picoseconds, not through bubble_fraction: each stage holds 4 of the 8 layers, so f = 4 us
  // and b = 8 us; stage 0 computes m(f + b) = 12m us and waits (p - 1)(f + b) = 12 us in all
  // (stage 1 first waits f for the first forward, then b at the end for the last backward), so
  // the step is 12(m + 1) us and the utilisation 12m / 12(m + 1) = m/(m + 1).
  for (int m : {1, 4, 8}) {
    const auto r = run_pipeline(strategy::PipelineSchedule::one_f_one_b, 2, m);
    EXPECT_EQ(r.report.step_time.ps, 12'000'000LL * (m + 1)) << "m=" << m;
    ASSERT_EQ(r.report.stages.size(), 2u);
    EXPECT_EQ(r.report.stages[0].idle.ps, 12'000'000LL) << "m=" << m;
    EXPECT_EQ(r.report.stages[1].idle.ps, 12'000'000LL) << "m=" << m;
  }
}

TEST(Pipeline, InterleavingShrinksTheBubbleByV) {
  // Narayanan et al. 2021: with v model chunks per stage the bubble is (p - 1)(f + b)/v, so the
  // step takes m(f + b) + (p - 1)(f + b)/v. Here f + b = 3 * 8/p us.
  for (int p : {2, 4}) {
    const int m = 8;
    const double fb = 3.0 * 8.0 / p;
    const auto plain = run_pipeline(strategy::PipelineSchedule::one_f_one_b, p, m);
    const auto inter = run_pipeline(strategy::PipelineSchedule::interleaved, p, m, 2);
    const double plain_bubble = plain.report.step_time.us() - m * fb;
    const double inter_bubble = inter.report.step_time.us() - m * fb;
    EXPECT_DOUBLE_EQ(plain_bubble, (p - 1) * fb) << "p=" << p;
    EXPECT_DOUBLE_EQ(inter_bubble, (p - 1) * fb / 2) << "p=" << p;
  }
}

TEST(Pipeline, OneFOneBKeepsPMicroBatchesOfActivationsOnTheFirstStageGpipeKeepsM) {
  // Stage 0 of p = 4 holds 2 MLP layers; each saves its input and ReLU output per micro-batch:
  // 2 x (b * h * 2 bytes) = 2 x 64 x 2 x 2 = 512 bytes per micro-batch for the stage.
  const int p = 4, m = 8;
  const int64_t per_micro_batch = 2 * (2 * 64 * 2);
  const auto one_f_one_b = run_pipeline(strategy::PipelineSchedule::one_f_one_b, p, m);
  const auto gpipe = run_pipeline(strategy::PipelineSchedule::gpipe, p, m);
  const auto activations = [](const sim::Report& r, int rank) {
    return r.ranks[static_cast<size_t>(rank)]
        .memory.at_peak[static_cast<size_t>(ir::MemoryCategory::activations)];
  };
  EXPECT_EQ(activations(one_f_one_b.report, 0), p * per_micro_batch);
  EXPECT_EQ(activations(gpipe.report, 0), m * per_micro_batch);
  // The last stage runs each backward right after its forward: one micro-batch in flight.
  EXPECT_EQ(activations(one_f_one_b.report, p - 1), per_micro_batch);
}

TEST(Pipeline, ZeroBubbleH1CutsTheBubbleByTwoWeightPassesPerStage) {
  // Qi et al. 2024: split each backward into B (input gradient) and W (weight gradient); ZB-H1's
  // bubble is (p - 1)(F + B - W) against 1F1B's (p - 1)(F + B + W), a saving of 2 (p - 1) W.
  // Here a stage of L = 8/p MLP layers has F = L (fc GEMM), B = L (dgrad) and W = L (wgrad) us.
  // p = 4, m = 8, L = 2: 1F1B takes (m + p - 1)(F + B + W) = 11 x 6 = 66 us; ZB-H1 takes
  // m (F + B + W) + (p - 1)(F + B - W) = 48 + 6 = 54 us: 12 us = 2 x 3 x 2 less.
  const int p = 4, m = 8;
  const double L = 8.0 / p;
  const auto one_f_one_b = run_pipeline(strategy::PipelineSchedule::one_f_one_b, p, m);
  const auto zb = run_pipeline(strategy::PipelineSchedule::zb_h1, p, m);
  EXPECT_DOUBLE_EQ(one_f_one_b.report.step_time.us(), (m + p - 1) * 3 * L);
  EXPECT_DOUBLE_EQ(zb.report.step_time.us(), m * 3 * L + (p - 1) * L);
  EXPECT_DOUBLE_EQ(one_f_one_b.report.step_time.us() - zb.report.step_time.us(), 2 * (p - 1) * L);
  // Stage 0 is busy m (F + B + W) = 48 us either way, so its idle share falls from 18/66 to 6/54.
  EXPECT_NEAR(zb.report.bubble_fraction(0), (p - 1) * L / (m * 3 * L + (p - 1) * L), 1e-12);
  EXPECT_NEAR(one_f_one_b.report.bubble_fraction(0), (p - 1) * 3 * L / ((m + p - 1) * 3 * L),
              1e-12);
}

TEST(Pipeline, ZeroBubbleH1RunsEveryBBeforeItsWAndEveryFBeforeItsB) {
  for (int s = 0; s < 4; ++s) {
    const auto slots = strategy::pipeline_schedule(strategy::PipelineSchedule::zb_h1, 4, 1, s, 8);
    ASSERT_EQ(slots.size(), 24u);
    std::vector<int> seen(8, 0);  // 0: none, 1: F, 2: B, 3: W
    for (const auto& slot : slots) {
      int& state = seen[static_cast<size_t>(slot.micro_batch)];
      const int expected = slot.pass == strategy::Pass::forward      ? 0
                           : slot.pass == strategy::Pass::input_grad ? 1
                                                                     : 2;
      EXPECT_EQ(state, expected) << "stage " << s << " micro-batch " << slot.micro_batch;
      state = expected + 1;
    }
    for (int state : seen) EXPECT_EQ(state, 3);
  }
}

TEST(Pipeline, SchedulesRunEveryForwardBeforeItsBackward) {
  // Each schedule, on every stage, holds every (chunk, micro-batch) forward and backward once,
  // with the forward first.
  for (auto kind : {strategy::PipelineSchedule::gpipe, strategy::PipelineSchedule::one_f_one_b,
                    strategy::PipelineSchedule::interleaved}) {
    const int p = 4, v = kind == strategy::PipelineSchedule::interleaved ? 2 : 1, m = 8;
    for (int s = 0; s < p; ++s) {
      const auto slots = strategy::pipeline_schedule(kind, p, v, s, m);
      ASSERT_EQ(slots.size(), static_cast<size_t>(2 * m * v));
      std::set<std::pair<int, int>> forwards, backwards;
      for (const auto& slot : slots) {
        const std::pair<int, int> key{slot.chunk, slot.micro_batch};
        if (slot.pass == strategy::Pass::forward) {
          EXPECT_TRUE(forwards.insert(key).second);
        } else {
          EXPECT_TRUE(forwards.count(key)) << "backward before forward";
          EXPECT_TRUE(backwards.insert(key).second);
        }
      }
      EXPECT_EQ(backwards.size(), static_cast<size_t>(m * v));
    }
  }
}

}  // namespace
}  // namespace cs
