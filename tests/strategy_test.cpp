// Tensor parallelism, ZeRO / FSDP model state, placement and representative ranks, each against
// a figure derived by hand or published (seed 004, the ZeRO paper, seed 000, seed 002).
#include <gtest/gtest.h>

#include <set>

#include "driver/simulation.h"
#include "scenarios/scenario.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

std::string scenario_path(const std::string& name) {
  return cs::test_paths::source_dir() + "/scenarios/" + name;
}

// Seed 004's tensor-parallel exercise: 12 layers, d_model 512, batch 8, sequence 512, fp16, TP 2.
model::ModelSpec seed004_model() {
  model::ModelSpec m = model::find_model_preset("gpt2-small");
  m.name = "seed004";
  m.hidden = 512;
  m.heads = m.kv_heads = 8;
  m.ffn_hidden = 2048;
  return m;
}

struct CollectiveTally {
  int calls = 0;
  std::set<int64_t> sizes;
};
// Rank 0's collectives of a type and phase inside decoder layers (layer >= 0), either those of
// activation recomputation or the others.
CollectiveTally tally_layer_collectives(const strategy::StepGraph& step, ir::CollectiveType type,
                                        ir::Phase phase, bool recompute = false) {
  CollectiveTally t;
  for (const auto& task : step.graph.tasks()) {
    if (task.kind != ir::TaskKind::collective || task.rank != 0 || task.layer < 0 ||
        task.phase != phase || static_cast<bool>(task.recompute) != recompute) {
      continue;
    }
    const auto& call = step.graph.collective(task);
    if (call.type != type) continue;
    ++t.calls;
    t.sizes.insert(call.bytes.count);
  }
  return t;
}

strategy::StepGraph seed004_step(bool sequence_parallel,
                                 model::Recompute recompute = model::Recompute::none) {
  strategy::Layout l;
  l.tp = 2;
  l.sequence_parallel = sequence_parallel;
  strategy::TrainingSpec t;
  t.global_batch = t.micro_batch = 8;
  t.seq_len = 512;
  t.precision = model::Precision::mixed_fp16;
  t.recompute = recompute;
  strategy::validate(l, t, seed004_model(), 2);
  return strategy::build_training_step(seed004_model(), l, t);
}

TEST(TensorParallel, Seed004TwentyFourAllReducesOfFourMiBPerForward) {
  // Megatron: the attention projection and the second MLP linear are row-parallel, so each layer
  // all-reduces its [s, b, h] output twice in forward: 12 x 2 = 24 calls of
  // b * s * h * 2 bytes = 8 * 512 * 512 * 2 = 4 MiB (seed 004). Backward all-reduces the input
  // gradients of the two column-parallel linears: 24 more of the same size.
  const auto step = seed004_step(false);
  const auto fwd =
      tally_layer_collectives(step, ir::CollectiveType::all_reduce, ir::Phase::forward);
  EXPECT_EQ(fwd.calls, 24);
  EXPECT_EQ(fwd.sizes, (std::set<int64_t>{4 << 20}));
  const auto bwd =
      tally_layer_collectives(step, ir::CollectiveType::all_reduce, ir::Phase::backward);
  EXPECT_EQ(bwd.calls, 24);
  EXPECT_EQ(bwd.sizes, (std::set<int64_t>{4 << 20}));
}

TEST(TensorParallel, SequenceParallelTradesEachAllReduceForAGatherAndAScatter) {
  // Korthikanti et al. 2022: with sequence parallelism each forward all-reduce becomes a
  // reduce-scatter, and an all-gather precedes each column-parallel linear: per layer 2 + 2 in
  // forward, same total bytes moved (an all-reduce is a reduce-scatter plus an all-gather).
  const auto step = seed004_step(true);
  EXPECT_EQ(tally_layer_collectives(step, ir::CollectiveType::all_reduce, ir::Phase::forward).calls,
            0);
  const auto rs =
      tally_layer_collectives(step, ir::CollectiveType::reduce_scatter, ir::Phase::forward);
  const auto ag = tally_layer_collectives(step, ir::CollectiveType::all_gather, ir::Phase::forward);
  EXPECT_EQ(rs.calls, 24);
  EXPECT_EQ(ag.calls, 24);
  EXPECT_EQ(rs.sizes, (std::set<int64_t>{4 << 20}));
  EXPECT_EQ(ag.sizes, (std::set<int64_t>{4 << 20}));
}

TEST(TensorParallel, FullRecomputeRepeatsTheForwardCollectives) {
  // Full recomputation re-runs each layer's forward before its backward, so under SP it repeats
  // the forward's 2 all-gathers and 2 reduce-scatters per layer: 24 + 24, all 4 MiB.
  const auto step = seed004_step(true, model::Recompute::full);
  const auto ag =
      tally_layer_collectives(step, ir::CollectiveType::all_gather, ir::Phase::backward, true);
  const auto rs =
      tally_layer_collectives(step, ir::CollectiveType::reduce_scatter, ir::Phase::backward, true);
  EXPECT_EQ(ag.calls, 24);
  EXPECT_EQ(rs.calls, 24);
  EXPECT_EQ(ag.sizes, (std::set<int64_t>{4 << 20}));
}

TEST(ModelState, ZeroPaperAndSeed004Figures) {
  // Mixed-precision AdamW: 2 (fp16 weight) + 2 (fp16 gradient) + 12 (fp32 master, m, v) bytes per
  // parameter; ZeRO-1 shards the 12, ZeRO-2 the 2 + 12, ZeRO-3 all 16.
  const auto p = model::precision_info(model::Precision::mixed_bf16);
  using strategy::DataParallel;
  // ZeRO paper, Figure 1: 7.5B parameters on 64 GPUs: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB.
  const int64_t big = 7'500'000'000;
  EXPECT_EQ(strategy::model_state_per_rank(big, p, DataParallel::ddp, 64).total(), 120'000'000'000);
  EXPECT_NEAR(strategy::model_state_per_rank(big, p, DataParallel::zero1, 64).total() * 1e-9, 31.4,
              0.05);
  EXPECT_NEAR(strategy::model_state_per_rank(big, p, DataParallel::zero2, 64).total() * 1e-9, 16.6,
              0.05);
  EXPECT_NEAR(
      strategy::model_state_per_rank(big, p, DataParallel::fsdp_full_shard, 64).total() * 1e-9, 1.9,
      0.05);
}

// Sums rank 0's static model-state allocations (the "alloc.*" memory tasks) of a step.
int64_t static_model_state(const strategy::StepGraph& step) {
  int64_t total = 0;
  for (const auto& task : step.graph.tasks()) {
    if (task.kind != ir::TaskKind::memory || task.rank != 0) continue;
    const std::string& name = step.graph.name(task.name);
    const auto cat = step.graph.memory(task).category;
    if (name.rfind("alloc.", 0) == 0 && cat != ir::MemoryCategory::comm_buffers)
      total += step.graph.memory(task).delta;
  }
  return total;
}

TEST(ModelState, Seed004HundredMillionParametersOnTwoGpus) {
  // Seed 004: a 100M-parameter model on 2 GPUs holds ~1.6 GB of model state under DDP, ~0.9 GB
  // under ZeRO-2 and ~0.8 GB under ZeRO-3. An MLP of 100 layers of 1000 x 1000 weights plus
  // biases has 100 * 1,001,000 = 100,100,000 parameters:
  //   DDP    16 B       -> 1,601,600,000 B
  //   ZeRO-2 2 + 14 / 2 -> 900,900,000 B
  //   ZeRO-3 16 / 2     -> 800,800,000 B
  model::ModelSpec m;
  m.name = "mlp-100m";
  m.family = model::Family::mlp;
  m.layers = 100;
  m.hidden = m.ffn_hidden = 1000;
  ASSERT_EQ(model::parameter_count(m), 100'100'000);
  strategy::TrainingSpec t;
  t.global_batch = 2;
  t.precision = model::Precision::mixed_bf16;
  const std::pair<strategy::DataParallel, int64_t> cases[] = {
      {strategy::DataParallel::ddp, 1'601'600'000},
      {strategy::DataParallel::zero2, 900'900'000},
      {strategy::DataParallel::fsdp_full_shard, 800'800'000}};
  for (auto [dp_kind, expected] : cases) {
    strategy::Layout l;
    l.dp = 2;
    l.data_parallel = dp_kind;
    EXPECT_EQ(static_model_state(strategy::build_training_step(m, l, t)), expected)
        << strategy::to_string(dp_kind);
  }
}

TEST(Fsdp, Seed002SpeedupsAllGatherCountsAndMemoryOrder) {
  // Seed 002 (GPT-2 Large, 2x H100): FULL_SHARD 1.91x, SHARD_GRAD_OP 1.92x over one GPU.
  const auto full = driver::simulate(
      scenario::load_scenario(scenario_path("gpt2-large-2xh100-fsdp-full-shard.yaml")));
  const auto grad_op = driver::simulate(
      scenario::load_scenario(scenario_path("gpt2-large-2xh100-fsdp-shard-grad-op.yaml")));
  const auto ddp =
      driver::simulate(scenario::load_scenario(scenario_path("gpt2-large-2xh100-ddp.yaml")),
                       {.with_baseline = false});
  EXPECT_NEAR(full.speedup, 1.91, 0.05);
  EXPECT_NEAR(grad_op.speedup, 1.92, 0.05);
  // Units: 36 blocks plus the root (embedding, final norm, tied head) = 37. SHARD_GRAD_OP
  // gathers each unit once per step (kept across the no_sync micro-batch) = 37; FULL_SHARD
  // gathers 37 before forward and 36 before backward (the root is not resharded after forward)
  // = 73 per forward-backward, twice for the 2 accumulation micro-batches here.
  EXPECT_EQ(grad_op.step.buckets.size(), 37u);
  EXPECT_EQ(grad_op.report.collectives.at("all_gather").calls, 37);
  EXPECT_EQ(full.report.collectives.at("all_gather").calls, 2 * 73);
  EXPECT_EQ(full.report.collectives.at("reduce_scatter").calls, 37);
  // One micro-batch per step (global batch 16): 73 all-gathers per optimizer step.
  auto one = scenario::load_scenario(scenario_path("gpt2-large-2xh100-fsdp-full-shard.yaml"));
  one.training.global_batch = 16;
  EXPECT_EQ(
      driver::simulate(one, {.with_baseline = false}).report.collectives.at("all_gather").calls,
      73);
  // Memory: DDP > SHARD_GRAD_OP > FULL_SHARD.
  EXPECT_GT(ddp.report.peak_memory, grad_op.report.peak_memory);
  EXPECT_GT(grad_op.report.peak_memory, full.report.peak_memory);
}

// GPT-2 small on the first `gpus` GPUs of one DGX H100 (only the ranks a group names are costed,
// so the node's other GPUs play no part).
scenario::Scenario gpt2_small_on_dgx_h100(int gpus) {
  auto s = scenario::load_scenario(scenario_path("gpt2-small-1xh100.yaml"));
  s.cluster_name = "dgx_h100";
  s.cluster = topo::preset_with_nodes("dgx_h100", 1);
  s.gpu = s.cluster.gpu;
  s.gpus = gpus;
  return s;
}

TEST(Memory, Seed000OrderingTensorParallelFsdpDdpFlatDdpBucketed) {
  // Seed 000 (4 ranks): TensorParallel 1030 MB < FSDP 1158 MB < DDPFlat 1277 MB < DDPBucketed
  // 1631 MB. Tensor parallelism splits weights and most activations; FSDP shards model state but
  // gathers a unit at a time; flat DDP replicates it; bucketed DDP adds flat bucket buffers.
  auto s = gpt2_small_on_dgx_h100(4);
  s.training.micro_batch = 1;
  s.training.seq_len = 512;
  auto peak = [&](int tp, int dp, strategy::DataParallel kind) {
    auto v = s;
    v.layout.tp = tp;
    v.layout.dp = dp;
    v.layout.data_parallel = kind;
    v.training.global_batch = dp;
    return driver::simulate(v, {.with_baseline = false}).report.peak_memory;
  };
  const int64_t tp = peak(4, 1, strategy::DataParallel::ddp);
  const int64_t fsdp = peak(1, 4, strategy::DataParallel::fsdp_full_shard);
  const int64_t flat = peak(1, 4, strategy::DataParallel::ddp_flat);
  const int64_t bucketed = peak(1, 4, strategy::DataParallel::ddp);
  EXPECT_LT(tp, fsdp);
  EXPECT_LT(fsdp, flat);
  EXPECT_LT(flat, bucketed);
}

TEST(Placement, MegatronOrderPutsTensorParallelRanksInsideANode) {
  // Default order tp-dp-pp: rank = (pp * dp_size + dp) * tp_size + tp. With TP 8, PP 8, DP 16,
  // rank 8 is (tp 0, dp 1, pp 0) and rank 128 is (tp 0, dp 0, pp 1).
  strategy::Layout l;
  l.tp = 8;
  l.pp = 8;
  l.dp = 16;
  EXPECT_EQ(strategy::rank_of(l, {0, 0, 1}), 8);
  EXPECT_EQ(strategy::rank_of(l, {0, 1, 0}), 128);
  EXPECT_EQ(strategy::rank_of(l, {3, 2, 5}), (2 * 16 + 5) * 8 + 3);
  for (int r : {0, 7, 8, 129, 1023}) EXPECT_EQ(strategy::rank_of(l, strategy::coord_of(l, r)), r);
  // tp-pp-dp: pipeline stages next, data-parallel replicas outermost.
  l.order = {strategy::Dim::tp, strategy::Dim::cp, strategy::Dim::pp, strategy::Dim::dp};
  EXPECT_EQ(strategy::rank_of(l, {0, 1, 0}), 8);
}

TEST(RepresentativeRanks, GiveTheSameStepTimeAndMemoryAsTheFullGraph) {
  // Data-parallel replicas and tensor-parallel peers do identical work, so simulating one rank
  // per stage must reproduce the full graph's step time and per-stage peak exactly.
  auto s = gpt2_small_on_dgx_h100(8);
  s.layout.tp = 2;
  s.layout.pp = 2;
  s.layout.dp = 2;
  s.layout.data_parallel = strategy::DataParallel::zero1;
  s.training.global_batch = 16;
  s.training.micro_batch = 2;
  const auto full = driver::simulate(
      s, {.with_baseline = false, .suggest = false, .ranks = driver::RankMode::all});
  const auto rep = driver::simulate(
      s, {.with_baseline = false, .suggest = false, .ranks = driver::RankMode::representative});
  ASSERT_EQ(rep.report.ranks.size(), 2u);
  EXPECT_EQ(full.report.step_time, rep.report.step_time);
  EXPECT_EQ(full.report.peak_memory, rep.report.peak_memory);
  for (const auto& rr : rep.report.ranks) {
    const auto& same = full.report.ranks[rr.cluster_rank];
    EXPECT_EQ(same.compute, rr.compute);
    EXPECT_EQ(same.memory.peak, rr.memory.peak);
  }
}

TEST(LargeScale, Gpt3On1024A100sFitsWithFullRecomputeAndSaysHowFarOverWithout) {
  // Narayanan et al. 2021 trained GPT-3 175B on 1,024 A100 80 GB with TP 8, PP 8, DP 16 and full
  // recomputation. Without recomputation stage 0 keeps p = 8 micro-batches of 12 layers of
  // s*b*h*(10 + 24/t + 5as/(ht)) = 2048*12288*(13 + 10) B = 579 MB each: 96 x 579 MB = 55.6 GB
  // of activations on top of 16 B x 2.73B parameters = 43.7 GB of model state: over 80 GB.
  const auto s = scenario::load_scenario(scenario_path("gpt3-175b-1024xa100.yaml"));
  const auto with = driver::simulate(s);
  EXPECT_TRUE(with.report.fits);
  EXPECT_FALSE(with.baseline.has_value());  // 1,024 GPUs: no single-GPU twin
  auto without = s;
  without.training.recompute = model::Recompute::none;
  const auto r = driver::simulate(without);
  EXPECT_FALSE(r.report.fits);
  const double act =
      r.report.ranks[0].memory.at_peak[static_cast<size_t>(ir::MemoryCategory::activations)];
  EXPECT_NEAR(act, 96 * 2048.0 * 12288 * 23, 0.02 * act);
  ASSERT_FALSE(r.suggestions.empty());
  EXPECT_TRUE(r.suggestions.front().fits);
}

}  // namespace
}  // namespace cs

namespace cs {
namespace {

TEST(StepNames, AGraphBuiltWithoutNamesTimesTheSameAndNamesNothing) {
  // The planner builds graphs only to time them (task_names off): the same tasks, the same step
  // and peak memory, and every task's name the one empty name. Mixtral with EP and ZeRO-1 covers
  // compute, collectives, all-to-all and memory tasks.
  const auto s = scenario::load_scenario(scenario_path("mixtral-8x7b-16xh100-ep8.yaml"));
  driver::SimulateOptions named, unnamed;
  named.with_baseline = unnamed.with_baseline = false;
  unnamed.task_names = false;
  const auto a = driver::simulate(s, named);
  const auto b = driver::simulate(s, unnamed);
  ASSERT_EQ(a.step.graph.size(), b.step.graph.size());
  EXPECT_EQ(a.report.step_time, b.report.step_time);
  EXPECT_EQ(a.report.peak_memory, b.report.peak_memory);
  std::set<std::string> names;
  for (ir::TaskId t = 0; t < b.step.graph.size(); ++t) names.insert(b.step.graph.task_name(t));
  EXPECT_EQ(names, std::set<std::string>{""});
  EXPECT_EQ(a.step.graph.task_name(0).empty(), false);
}

TEST(StepNames, NamesMadeOfPartsAreInternedOnce) {
  ir::TaskGraph g(1);
  strategy::StepEmitter e(g);
  strategy::TaskNames& names = e.names();
  const ir::NameId base = g.intern("L3.mlp.fc1.fwd");
  const ir::NameId chunk2 = names.joined(names.joined(base, ".tp_all_gather"), ".chunk", 2);
  EXPECT_EQ(g.name(chunk2), "L3.mlp.fc1.fwd.tp_all_gather.chunk2");
  EXPECT_NE(names.joined(base, ".chunk", 2), names.joined(base, ".chunk", 3));
  // Asked again, the same id; and a name built by its owner's callback only the first time.
  EXPECT_EQ(names.joined(names.joined(base, ".tp_all_gather"), ".chunk", 2), chunk2);
  const int owner = 0;
  int built = 0;
  auto make = [&] {
    ++built;
    return std::string("L3.activations");
  };
  const ir::NameId a = names.of(&owner, ".activations", make);
  EXPECT_EQ(names.of(&owner, ".activations", make), a);
  EXPECT_EQ(built, 1);
  EXPECT_EQ(g.name(a), "L3.activations");

  // A graph that keeps no names gets the one empty name, whatever the parts.
  ir::TaskGraph unnamed(1);
  unnamed.keep_names(false);
  strategy::StepEmitter u(unnamed);
  EXPECT_EQ(unnamed.name(u.names().joined(unnamed.intern("x"), ".chunk", 1)), "");
}

// Past the table's first 1,024 slots (half of which it fills before growing), every name is still
// found, twice over: 5,000 chunks of one base, each its own text and the same id when asked again.
TEST(StepNames, ManyNamesSurviveTheTableGrowing) {
  ir::TaskGraph g(1);
  strategy::StepEmitter e(g);
  strategy::TaskNames& names = e.names();
  const ir::NameId base = g.intern("L0.attn.qkv.fwd");
  std::vector<ir::NameId> ids;
  for (int i = 0; i < 5000; ++i) ids.push_back(names.joined(base, ".chunk", i));
  for (int i = 0; i < 5000; ++i) {
    EXPECT_EQ(names.joined(base, ".chunk", i), ids[static_cast<size_t>(i)]);
    EXPECT_EQ(g.name(ids[static_cast<size_t>(i)]), "L0.attn.qkv.fwd.chunk" + std::to_string(i));
  }
  EXPECT_EQ(g.name_count(), 5001u);  // the base and 5,000 chunks, each interned once
}

}  // namespace
}  // namespace cs
