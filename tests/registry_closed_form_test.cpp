// The planner's closed forms against the simulator, flavour by flavour and schedule by schedule:
// the registry (strategies/data_parallel/flavour.h, strategies/pipeline_schedule.h) answers both
// what the step builder emits and what the planner's step estimate and memory bound assume, so the
// two cannot drift apart silently. Also: the planner and the simulator build one WorkShape
// (strategies/work_shape.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "driver/simulation.h"
#include "models/software_stack.h"
#include "planner/planner.h"
#include "planner/step_estimate.h"
#include "strategies/data_parallel/flavour.h"
#include "strategies/pipeline_schedule.h"
#include "strategies/work_shape.h"

namespace cs {
namespace {

// GPT-2 small (12 layers) on 4 GPUs of one DGX H100, sequence 1024, clustersim's own executor
// (no host cost per kernel: what the closed form prices).
scenario::Scenario gpt2_small_on_four() {
  auto s = scenario::load_scenario(std::string(CLUSTERSIM_SOURCE_DIR) +
                                   "/scenarios/gpt2-small-1xh100.yaml");
  s.training.stack = model::Stack::ideal;
  s.cluster_name = "dgx_h100";
  s.cluster = topo::preset_with_nodes("dgx_h100", 1);
  s.gpu = s.cluster.gpu;
  s.gpus = 4;
  s.training.seq_len = 1024;
  s.training.micro_batch = 1;
  s.fidelity = cost::NetworkFidelity::analytic;
  return s;
}

struct Case {
  std::string name;
  planner::Candidate candidate;
};

planner::Candidate candidate(const scenario::Scenario& base, int tp, int pp, int dp,
                             int64_t global_batch) {
  planner::Candidate c;
  c.layout = base.layout;
  c.layout.tp = tp;
  c.layout.pp = pp;
  c.layout.dp = dp;
  c.layout.sequence_parallel = tp > 1;
  c.training = base.training;
  c.training.global_batch = global_batch;
  return c;
}

struct Measured {
  double estimate = 0, simulated = 0;   // step seconds
  int64_t bound = 0, peak = 0;          // bytes per rank
};

Measured measure(const scenario::Scenario& base, const planner::Candidate& c) {
  strategy::validate(c.layout, c.training, base.model, base.gpus);
  const driver::Platform platform(base);
  planner::StepEstimator estimator(base, platform);
  const auto r = driver::simulate(planner::with_candidate(base, c),
                                  {false, false, driver::RankMode::automatic, false, false},
                                  &platform);
  return {estimator.step_seconds(c), r.report.step_time.seconds(),
          planner::memory_lower_bound(base, c).total(), r.report.peak_memory};
}

void expect_agreement(const std::string& name, const Measured& m, double time_tolerance,
                      double memory_tolerance) {
  const double time_error = m.estimate / m.simulated - 1;
  const double memory_share = static_cast<double>(m.bound) / static_cast<double>(m.peak);
  std::printf("%-40s step %+6.2f%%  bound/peak %.3f\n", name.c_str(), 100 * time_error,
              memory_share);
  EXPECT_LT(std::abs(time_error), time_tolerance) << name;
  EXPECT_LE(m.bound, m.peak) << name << ": the memory bound must be a lower bound";
  EXPECT_GT(memory_share, 1 - memory_tolerance) << name;
}

TEST(RegistryClosedForm, EveryDataParallelFlavourAgreesWithItsSimulation) {
  const scenario::Scenario base = gpt2_small_on_four();
  for (const strategy::DataParallelFlavour* f : strategy::data_parallel_flavours()) {
    // dp only, one micro-batch; dp with tp; dp with four accumulation micro-batches.
    std::vector<Case> cases{{"dp4", candidate(base, 1, 1, 4, 4)},
                            {"tp2 dp2", candidate(base, 2, 1, 2, 2)},
                            {"dp4 m4", candidate(base, 1, 1, 4, 16)}};
    for (Case& k : cases) {
      k.candidate.layout.data_parallel = f->id;
      expect_agreement(std::string(f->name) + " " + k.name, measure(base, k.candidate), 0.5, 0.5);
    }
  }
}

TEST(RegistryClosedForm, EveryPipelineScheduleAgreesWithItsSimulation) {
  const scenario::Scenario base = gpt2_small_on_four();
  for (const strategy::PipelineScheduleFlavour* f : strategy::pipeline_schedule_flavours()) {
    planner::Candidate c = candidate(base, 1, 4, 1, 8);  // pp 4, 8 micro-batches
    c.layout.schedule = f->id;
    c.layout.virtual_stages = f->interleaves() ? 3 : 1;  // 12 layers in 12 chunks
    expect_agreement(std::string(f->name) + " pp4 m8", measure(base, c), 0.5, 0.5);
  }
}

}  // namespace
}  // namespace cs
