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
#include "test_paths.h"

namespace cs {
namespace {

// GPT-2 Large on 4 GPUs of one DGX H100, sequence 1024, clustersim's own executor (no host cost
// per kernel).
scenario::Scenario gpt2_large_on_four() {
  auto s =
      scenario::load_scenario(cs::test_paths::source_dir() + "/scenarios/gpt2-large-1xh100.yaml");
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
  double floor = 1;  // the lowest estimate / simulated step time accepted
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
  double estimate = 0, simulated = 0;  // step seconds
  int64_t bound = 0, peak = 0;         // bytes per rank
  int64_t modelled = 0;  // of the peak: parameters, gradients, optimizer state, activations,
                         // reserve
  int64_t bound_of_modelled = 0;  // the bound less its logits and weight copies
};

Measured measure(const scenario::Scenario& base, const planner::Candidate& c) {
  strategy::validate(c.layout, c.training, base.model, base.gpus);
  const driver::Platform platform(base);
  planner::StepEstimator estimator(base, platform);
  const auto r =
      driver::simulate(planner::with_candidate(base, c),
                       {false, false, driver::RankMode::automatic, false, false}, &platform);
  const auto& at_peak = r.report.ranks[r.report.peak_index].memory.at_peak;
  int64_t modelled = 0;
  for (ir::MemoryCategory k : {ir::MemoryCategory::parameters, ir::MemoryCategory::gradients,
                               ir::MemoryCategory::optimizer_state, ir::MemoryCategory::activations,
                               ir::MemoryCategory::reserve})
    modelled += at_peak[static_cast<size_t>(k)];
  const planner::MemoryBound bound = planner::memory_lower_bound(base, c);
  return {estimator.step_seconds(c),
          r.report.step_time.seconds(),
          bound.total(),
          r.report.peak_memory,
          modelled,
          bound.total() - bound.logits - bound.weight_copies};
}

// The closed-form step time leaves out what only the simulated graph shows, so it is low, never
// high by more than rounding (+2%); how low depends on what the flavour runs:
//   pipelines, DDP/ZeRO with accumulation   the stages' ops as simulated, a few percent of
//                                           overlap jitter (measured -1.8 to -6.2%)
//   DDP/ZeRO, one micro-batch               the bucketed collectives contend with each other
//                                           and with the compute they overlap (to -14.8%)
//   ddp_flat                                one all-reduce per parameter tensor, each paying
//                                           its latency, priced as one (to -23.7%)
//   FSDP                                    per-unit gathers behind the rate limiter (two in
//                                           flight) and FSDP1's flat-gradient passes, priced as
//                                           overlapped with the unit's compute (to -26.2%)
// Each case states its own floor: a flavour whose emitted tasks and closed form drift apart by
// more than its margin (a few points above the measured error) fails here.
// The memory bound must stay a lower bound of the simulated peak. It counts model state,
// what the flavour unshards and the activations the schedule holds (and one micro-batch's logits
// and any FP8 weight copies, left out here), not DDP's bucket buffer or workspaces, so it is
// compared with those four categories and the reserve (the same
// fixed bytes on both sides, its fragmentation share of each side's tensors) at the peak: within 8%
// below (FULL_SHARD's second prefetched unit and the interleaved schedule's extra warm-up
// forwards, which the bound does not count, measured -6.4% and -6.8%) and 1% above (the bound is
// the heaviest stage's; the peak rank is the one the logits make heaviest).
void expect_agreement(const std::string& name, const Measured& m, double floor,
                      double ceiling = 1.02) {
  const double time_ratio = m.estimate / m.simulated;
  const double modelled_ratio =
      static_cast<double>(m.bound_of_modelled) / static_cast<double>(m.modelled);
  std::printf("%-32s step %+6.2f%%  bound/modelled %.3f\n", name.c_str(), 100 * (time_ratio - 1),
              modelled_ratio);
  EXPECT_LT(time_ratio, ceiling) << name;
  EXPECT_GT(time_ratio, floor) << name;
  EXPECT_LE(m.bound, m.peak) << name << ": the memory bound must be a lower bound";
  EXPECT_GT(modelled_ratio, 0.92) << name;
  EXPECT_LT(modelled_ratio, 1.01) << name;
}

// GPT-2 Large (36 layers, 774M parameters) on 4 GPUs of one DGX H100, sequence 1024.
TEST(RegistryClosedForm, EveryDataParallelFlavourAgreesWithItsSimulation) {
  const scenario::Scenario base = gpt2_large_on_four();
  for (const strategy::DataParallelFlavour* f : strategy::data_parallel_flavours()) {
    const double one_micro_batch = f->fsdp() ? 0.70 : f->bucketed() ? 0.82 : 0.72;
    const double accumulating = f->fsdp() ? 0.74 : f->bucketed() ? 0.90 : 0.85;
    // dp only, one micro-batch; dp with tp; dp with four accumulation micro-batches.
    std::vector<Case> cases{{"dp4", candidate(base, 1, 1, 4, 4), one_micro_batch},
                            {"tp2 dp2", candidate(base, 2, 1, 2, 2), one_micro_batch},
                            {"dp4 m4", candidate(base, 1, 1, 4, 16), accumulating}};
    for (Case& k : cases) {
      k.candidate.layout.data_parallel = f->id;
      expect_agreement(std::string(f->name) + " " + k.name, measure(base, k.candidate), k.floor);
    }
  }
}

TEST(RegistryClosedForm, EveryPipelineScheduleAgreesWithItsSimulation) {
  const scenario::Scenario base = gpt2_large_on_four();
  for (const strategy::PipelineScheduleFlavour* f : strategy::pipeline_schedule_flavours()) {
    planner::Candidate c = candidate(base, 1, 4, 1, 8);  // pp 4, 8 micro-batches
    c.layout.schedule = f->id;
    c.layout.virtual_stages = f->interleaves() ? 3 : 1;  // 36 layers in 12 chunks
    expect_agreement(std::string(f->name) + " pp4 m8", measure(base, c), 0.93);
  }
}

// The drift this fixed: the planner built its own WorkShapes, pricing context parallelism under
// PyTorch stacks with Transformer Engine's ring and bounding memory without the stack's eager
// intermediates, experts or attention kernel. Now every field the layout and the training set
// reach the shape the simulator builds.
TEST(RegistryClosedForm, PlannerAndSimulatorBuildOneWorkShape) {
  const scenario::Scenario base = gpt2_large_on_four();
  strategy::Layout l;
  l.cp = 2;
  l.tp = 2;
  l.sequence_parallel = true;
  strategy::TrainingSpec t = base.training;
  t.attention_kernel = ir::AttentionKernel::flash2;
  t.stack = model::Stack::torch_compile;
  EXPECT_EQ(strategy::make_work_shape(base.model, l, t).cp_ring, model::CpRing::torch_traced);
  t.stack = model::Stack::pytorch_eager;
  const model::WorkShape eager = strategy::make_work_shape(base.model, l, t);
  EXPECT_EQ(eager.cp_ring, model::CpRing::torch);
  EXPECT_TRUE(eager.unfused_chains);
  EXPECT_EQ(eager.attention_kernel, ir::AttentionKernel::flash2);
  EXPECT_EQ(eager.cp, 2);
  EXPECT_TRUE(eager.sequence_parallel);
  t.stack = model::Stack::megatron_core;
  EXPECT_EQ(strategy::make_work_shape(base.model, l, t).cp_ring, model::CpRing::p2p);
}

// The same agreement under PyTorch stacks: eager (the bound now holds autograd's saved
// intermediates of unfused chains, which it left out) and compiled with context parallelism
// (priced with the traced ring the simulator runs; its waits expose the KV passes, measured
// -15.8%). Under eager the estimate charges each op the longer of its kernel and its host issue
// time, while the simulated host runs ahead and hides short kernels' issue behind long ones: it
// may be high by a little more (measured +2.1%).
TEST(RegistryClosedForm, PyTorchStacksAgreeWithTheirSimulation) {
  scenario::Scenario base = gpt2_large_on_four();
  base.training.stack = model::Stack::pytorch_eager;
  expect_agreement("pytorch_eager ddp dp4", measure(base, candidate(base, 1, 1, 4, 4)), 0.82, 1.04);
  base.training.stack = model::Stack::torch_compile;
  planner::Candidate c = candidate(base, 1, 1, 2, 2);
  c.layout.cp = 2;
  expect_agreement("torch_compile cp2 dp2", measure(base, c), 0.80);
}

}  // namespace
}  // namespace cs
