// Memory as frameworks hold it: Megatron-Core's fp32 gradient buffers, FSDP2's sharded gradients
// under gradient accumulation, and the per-GPU reserve beside the step's tensors.
#include <gtest/gtest.h>

#include <cmath>

#include "driver/simulation.h"
#include "interop/launch_writers.h"
#include "interop/megatron_args.h"
#include "interop/scenario_draft.h"
#include "models/software_stack.h"
#include "planner/planner.h"
#include "scenarios/scenario.h"
#include "scenarios/scenario_writers.h"
#include "strategies/memory_reserve.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

std::string scenario_path(const std::string& name) {
  return cs::test_paths::source_dir() + "/scenarios/" + name;
}

constexpr int64_t kGpt2SmallParams = 124'439'808;

// Bytes rank 0 allocates (frees not subtracted) in `category`, and the bytes its gradient
// collectives move (nccl-tests' size), over one step.
struct RankTally {
  int64_t allocated = 0;
  int64_t gradient_collective_bytes = 0;
  int reduce_scatters = 0;
};
RankTally tally(const strategy::StepGraph& step, ir::MemoryCategory category) {
  RankTally t;
  for (const ir::Task& task : step.graph.tasks()) {
    if (task.rank != 0) continue;
    if (task.kind == ir::TaskKind::memory) {
      const ir::MemoryOp& m = step.graph.memory(task);
      if (m.category == category && m.delta > 0) t.allocated += m.delta;
    } else if (task.kind == ir::TaskKind::collective) {
      const ir::CollectiveCall& c = step.graph.collective(task);
      if (!c.gradients) continue;
      t.gradient_collective_bytes += c.bytes.count;
      t.reduce_scatters += c.type == ir::CollectiveType::reduce_scatter ? 1 : 0;
    }
  }
  return t;
}

// GPT-2 small under Megatron-Core with the distributed optimizer (ZeRO-1), bf16, tp 1, dp 2.
scenario::Scenario megatron_gpt2_small_dp2() {
  auto s = scenario::load_scenario(scenario_path("gpt2-small-1xh100.yaml"));
  s.training.stack = model::Stack::megatron_core;
  s.training.precision = model::Precision::mixed_bf16;
  s.layout.dp = 2;
  s.layout.data_parallel = strategy::DataParallel::zero1;
  s.training.global_batch = 16;  // micro-batch 8 per replica: one micro-batch
  return s;
}

TEST(FrameworkMemory, MegatronBf16KeepsAndReducesFp32Gradients) {
  // P = 124,439,808 (GPT-2 small), tp 1, dp 2, ZeRO-1 (--use-distributed-optimizer), --bf16.
  // Megatron-LM sets accumulate_allreduce_grads_in_fp32 under --bf16: the grad buffer is fp32,
  // whole on each rank (ZeRO-1 shards only the optimizer), and reduce-scattered in fp32:
  //   parameters 2P = 248,879,616 (bf16), gradients 4P = 497,759,232 (fp32 main_grad),
  //   optimizer state 12P / 2 = 746,638,848 (fp32 master, Adam m and v, sharded over dp 2),
  //   gradient collectives 4P = 497,759,232 bytes (the whole buffer, in buckets).
  const auto s = megatron_gpt2_small_dp2();
  const auto step = strategy::build_training_step(s.model, s.layout, s.training);
  const int64_t P = kGpt2SmallParams;
  EXPECT_EQ(tally(step, ir::MemoryCategory::parameters).allocated, 2 * P);
  const RankTally grads = tally(step, ir::MemoryCategory::gradients);
  EXPECT_EQ(grads.allocated, 4 * P);
  EXPECT_EQ(grads.gradient_collective_bytes, 4 * P);
  EXPECT_EQ(tally(step, ir::MemoryCategory::optimizer_state).allocated, 12 * P / 2);

  // --grad-reduce-in-bf16: the buffer and its reduction in bf16, 2P each; the rest unchanged.
  auto bf16 = s;
  bf16.training.grad_reduce_in_bf16 = true;
  const auto half = strategy::build_training_step(bf16.model, bf16.layout, bf16.training);
  const RankTally g16 = tally(half, ir::MemoryCategory::gradients);
  EXPECT_EQ(g16.allocated, 2 * P);
  EXPECT_EQ(g16.gradient_collective_bytes, 2 * P);
}

// Rank 0's memory tasks named `name` (exactly, or ending in it): their summed delta.
int64_t delta_named(const strategy::StepGraph& step, const std::string& name) {
  int64_t sum = 0;
  for (const ir::Task& task : step.graph.tasks()) {
    if (task.rank != 0 || task.kind != ir::TaskKind::memory) continue;
    const std::string& n = step.graph.name(task.name);
    if (n.size() >= name.size() && n.compare(n.size() - name.size(), name.size(), name) == 0)
      sum += step.graph.memory(task).delta;
  }
  return sum;
}

TEST(FrameworkMemory, PyTorchOnOneGpuAllocatesGradientsAsBackwardWritesThem) {
  // GPT-2 small (P = 124,439,808) in a plain PyTorch loop on one GPU, amp_bf16 (fp32 parameters,
  // so fp32 gradients): no gradient buffer at the step's start; backward allocates the .grad
  // tensors as it writes them, 4P = 497,759,232 B in all, and zero_grad(set_to_none=True) frees
  // the same after the optimizer.
  auto s = scenario::load_scenario(scenario_path("gpt2-small-1xh100.yaml"));
  s.training.stack = model::Stack::pytorch_eager;
  s.training.precision = model::Precision::amp_bf16;
  const int64_t P = kGpt2SmallParams;
  const auto one = strategy::build_training_step(s.model, s.layout, s.training);
  EXPECT_EQ(delta_named(one, "alloc.gradients"), 0);
  EXPECT_EQ(delta_named(one, ".grad"), 4 * P);
  EXPECT_EQ(delta_named(one, "zero_grad.set_to_none"), -4 * P);
  // Under DDP (dp 2) the gradients are views into its buckets, allocated when the model is
  // wrapped: 4P held from the start, nothing freed by zero_grad.
  auto ddp = s;
  ddp.layout.dp = 2;
  ddp.training.global_batch = 2 * s.training.micro_batch;
  const auto two = strategy::build_training_step(ddp.model, ddp.layout, ddp.training);
  EXPECT_EQ(delta_named(two, "alloc.gradients"), 4 * P);
  EXPECT_EQ(delta_named(two, "zero_grad.set_to_none"), 0);
}

TEST(FrameworkMemory, GradientBytesByStackAndPrecision) {
  using model::Precision;
  using model::Stack;
  // Megatron-Core: bf16 parameters (mixed_bf16, and FP8 on top of --bf16) keep fp32 main_grad;
  // --fp16 leaves accumulate_allreduce_grads_in_fp32 off (2 bytes); amp keeps fp32 anyway.
  EXPECT_EQ(model::gradient_bytes(Precision::mixed_bf16, Stack::megatron_core, false), 4);
  EXPECT_EQ(model::gradient_bytes(Precision::fp8, Stack::megatron_core, false), 4);
  EXPECT_EQ(model::gradient_bytes(Precision::mixed_bf16, Stack::megatron_core, true), 2);
  EXPECT_EQ(model::gradient_bytes(Precision::mixed_fp16, Stack::megatron_core, false), 2);
  EXPECT_EQ(model::gradient_bytes(Precision::amp_bf16, Stack::megatron_core, true), 4);
  // DeepSpeed's ZeRO optimizers keep the model dtype's gradients: unchanged.
  EXPECT_EQ(model::gradient_bytes(Precision::mixed_bf16, Stack::deepspeed, false), 2);
  // The planner's bound reads the same bytes: ZeRO-1 keeps the gradients whole, 4P.
  const auto s = megatron_gpt2_small_dp2();
  planner::Candidate c;
  c.layout = s.layout;
  c.training = s.training;
  EXPECT_EQ(planner::memory_lower_bound(s, c).gradients, 4 * kGpt2SmallParams);
}

TEST(FrameworkMemory, GradReduceInBf16RoundTripsThroughMegatronArguments) {
  // The launch writer emits --grad-reduce-in-bf16 when the scenario sets it; import megatron
  // reads it back as training.grad_reduce_in_bf16, and the draft parses to the same setting.
  auto s = scenario::load_scenario(scenario_path("llama2-7b-16xh100-tp8-dp2-flow.yaml"));
  s.training.grad_reduce_in_bf16 = true;
  const std::string script = interop::megatron_launch_script(scenario::launch_target(s));
  EXPECT_NE(script.find("--grad-reduce-in-bf16"), std::string::npos) << script;
  interop::ImportOptions o;
  const interop::ScenarioDraft d =
      interop::import_megatron(interop::launch_script_arguments(script, "bf16.sh"), o);
  const auto back = scenario::parse_scenario(interop::to_yaml(d), "draft.yaml");
  EXPECT_TRUE(back.training.grad_reduce_in_bf16);
  // Without the flag, Megatron's default: fp32 gradients.
  s.training.grad_reduce_in_bf16 = false;
  EXPECT_EQ(interop::megatron_launch_script(scenario::launch_target(s)).find("--grad-reduce"),
            std::string::npos);
}

TEST(FrameworkMemory, PrecisionAwareOptimizerKeepsBf16Moments) {
  // Megatron-Core's --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16
  // (Megatron-Bridge's DeepSeek-V3 recipes): the fp32 master stays, m and v take 2 bytes each.
  // GPT-2 small, ZeRO-1 over dp 2: optimizer state (4 + 2 + 2) P / 2 = 4P, against 12P / 2.
  auto s = megatron_gpt2_small_dp2();
  s.training.bf16_optimizer_moments = true;
  const int64_t P = kGpt2SmallParams;
  const auto step = strategy::build_training_step(s.model, s.layout, s.training);
  EXPECT_EQ(tally(step, ir::MemoryCategory::optimizer_state).allocated, 8 * P / 2);
  EXPECT_EQ(tally(step, ir::MemoryCategory::gradients).allocated, 4 * P);  // unchanged
  const model::PrecisionInfo info = s.training.precision_info();
  EXPECT_EQ(info.moment_bytes, 2);
  EXPECT_EQ(info.master_bytes(), 4);
  // The fused AdamW's traffic a parameter: read the fp32 master (4), the fp32 main_grad (4), m and
  // v (2 + 2); write the master (4), m and v (2 + 2) and the bf16 working copy (2): 22 bytes,
  // against 4 + 4 + 8 + 4 + 8 + 2 = 30 with fp32 moments.
  EXPECT_EQ(model::optimizer_op(1000, info, model::OptimizerImpl::fused).bytes.count, 22'000);
  s.training.bf16_optimizer_moments = false;
  EXPECT_EQ(model::optimizer_op(1000, s.training.precision_info(), model::OptimizerImpl::fused)
                .bytes.count,
            30'000);
  // The launch writer emits the three flags; import megatron reads them back.
  auto llama = scenario::load_scenario(scenario_path("llama2-7b-16xh100-tp8-dp2-flow.yaml"));
  llama.training.bf16_optimizer_moments = true;
  const std::string script = interop::megatron_launch_script(scenario::launch_target(llama));
  EXPECT_NE(script.find("--use-precision-aware-optimizer"), std::string::npos) << script;
  const interop::ScenarioDraft d = interop::import_megatron(
      interop::launch_script_arguments(script, "moments.sh"), interop::ImportOptions{});
  EXPECT_TRUE(
      scenario::parse_scenario(interop::to_yaml(d), "draft.yaml").training.bf16_optimizer_moments);
}

TEST(FrameworkMemory, Fsdp2WithAccumulationHoldsShardedGradientsOnly) {
  // GPT-2 Large under FSDP2 FULL_SHARD (TorchTitan's fully_shard), dp 2, amp_fp16 (fp32
  // parameters), global batch 64 with micro-batch 8: 4 micro-batches per replica. FSDP2 does not
  // call no_sync: each micro-batch reduce-scatters every unit (36 blocks + the root = 37 units),
  // 4 x 37 = 148 reduce-scatters, each moving the unit's whole fp32 gradient: 4 x 4P bytes in
  // all (P = 774,030,080).
  auto s = scenario::load_scenario(scenario_path("gpt2-large-2xh100-fsdp-full-shard.yaml"));
  s.layout.fsdp_version = 2;
  s.training.global_batch = 64;
  const auto step = strategy::build_training_step(s.model, s.layout, s.training);
  ASSERT_EQ(step.micro_batches, 4);
  const int64_t P = 774'030'080;
  const RankTally t = tally(step, ir::MemoryCategory::gradients);
  EXPECT_EQ(t.reduce_scatters, 4 * 37);
  EXPECT_EQ(t.gradient_collective_bytes, 4 * 4 * P);

  // At the peak the rank holds its sharded fp32 gradients (the first micro-batch's reductions
  // created them, later ones add into them) and at most the unsharded gradients of the units
  // whose reduction is in flight, never the whole model's: under 4P / 2 + 4P / 2 (half the model,
  // a loose ceiling), where FSDP1's no_sync holds all 4P unsharded beside its shards.
  const auto r = driver::simulate(s);
  const auto& at = r.report.ranks[r.report.peak_index].memory.at_peak;
  const int64_t grads = at[static_cast<size_t>(ir::MemoryCategory::gradients)];
  EXPECT_LT(grads, 4 * P);
  s.layout.fsdp_version = 1;
  const auto v1 = driver::simulate(s);
  const auto& at1 = v1.report.ranks[v1.report.peak_index].memory.at_peak;
  EXPECT_GE(at1[static_cast<size_t>(ir::MemoryCategory::gradients)], 4 * P);

  // The planner's bound: FSDP2 adds no unsharded gradients across micro-batches, only the
  // sharded ones (4P / 2, padded per unit to a multiple of dp: P is even, so exactly 2P); FSDP1
  // with no_sync adds the whole 4P.
  planner::Candidate c;
  c.layout = s.layout;
  c.training = s.training;
  c.layout.fsdp_version = 2;
  EXPECT_EQ(planner::memory_lower_bound(s, c).gradients, 4 * P / 2);
  c.layout.fsdp_version = 1;
  EXPECT_EQ(planner::memory_lower_bound(s, c).gradients, 4 * P / 2 + 4 * P);
}

TEST(FrameworkMemory, ReserveOfOneGpu) {
  // Megatron-Core on tp 8 (one NCCL communicator: the tensor-parallel group), dp 1, pp 1:
  //   CUDA context                 536,870,912 (512 MiB)
  //   cuBLAS workspaces            67,108,864 (PyTorch's 32 MiB + Transformer Engine's 32 MiB)
  //   NCCL ring buffers            231,211,008 (24 channels x (4 MiB + 4,915,200 + 524,288))
  //   fixed                        835,190,784
  // and 4.4% of the tensors' peak: beside 10 GiB (10,737,418,240) 472,446,402.56 -> 472,446,403.
  strategy::Layout l;
  l.tp = 8;
  strategy::TrainingSpec t;
  t.stack = model::Stack::megatron_core;
  const strategy::MemoryReserve r = strategy::memory_reserve(l, t);
  EXPECT_EQ(r.fixed, 835'190'784);
  EXPECT_EQ(r.beside(10'737'418'240), 835'190'784 + 472'446'403);
  // clustersim's own executor (stack ideal) measures its pool alone: no reserve.
  t.stack = model::Stack::ideal;
  EXPECT_EQ(strategy::memory_reserve(l, t).beside(10'737'418'240), 0);
}

TEST(FrameworkMemory, ReserveIsACategoryOfThePeakAndCountsInTheVerdict) {
  // GPT-2 small on one H100 in PyTorch eager: no communicator, one cuBLAS workspace. The reserve
  // is 512 MiB + 32 MiB + 4.4% of the tensors' peak, shown as its own category at the peak.
  const auto s = scenario::load_scenario(scenario_path("gpt2-small-1xh100.yaml"));
  const auto r = driver::simulate(s);
  const auto& at = r.report.ranks[r.report.peak_index].memory.at_peak;
  const int64_t reserve = at[static_cast<size_t>(ir::MemoryCategory::reserve)];
  const int64_t tensors = r.report.peak_memory - reserve;
  EXPECT_EQ(reserve, 570'425'344 + std::llround(static_cast<double>(tensors) * 0.044));
  // The verdict reads the peak with the reserve: a capacity between the two does not fit.
  auto tight = s;
  cost::DeviceSpec device = driver::device_of(s);
  device.memory_capacity = Bytes{tensors + reserve / 2};
  if (tight.profile)
    tight.profile->device = device;
  else
    tight.declared_gpu = device;
  ASSERT_EQ(driver::device_of(tight).memory_capacity.count, tensors + reserve / 2);
  EXPECT_FALSE(driver::simulate(tight).report.fits);
}

}  // namespace
}  // namespace cs
