// Mixture-of-experts with expert and expert-tensor parallelism: memory per GPU, all-to-all sizes,
// the expert grid's groups, routing (capacity, imbalance) and DeepSeek-V3's published layout,
// against hand derivations (all-to-all times: all_to_all_test.cpp).
#include <gtest/gtest.h>

#include <set>

#include "driver/simulation.h"
#include "error_of.h"
#include "interop/megatron_args.h"
#include "models/model_spec.h"
#include "models/model_work.h"
#include "scenarios/scenario.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

std::string scenario_path(const std::string& name) {
  return cs::test_paths::source_dir() + "/scenarios/" + name;
}

// Bytes of the parameters allocated on `rank` at the step's start (its "alloc.parameters" task).
int64_t parameter_bytes_on(const strategy::StepGraph& step, ir::RankId rank) {
  const auto& tasks = step.graph.tasks();
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].rank == rank && tasks[i].kind == ir::TaskKind::memory &&
        step.graph.task_name(static_cast<ir::TaskId>(i)) == "alloc.parameters") {
      return step.graph.memory(tasks[i]).delta;
    }
  }
  return 0;
}

TEST(Moe, Mixtral8x7bOn16H100WithEp8MemoryPerGpu) {
  const auto s = scenario::load_scenario(scenario_path("mixtral-8x7b-16xh100-ep8.yaml"));
  driver::SimulateOptions o;
  o.with_baseline = false;
  const auto r = driver::simulate(s, o);
  // Mixtral 8x7B (h 4096, 32 layers, 32 heads, 8 KV heads of 128, 8 experts of 14336, vocab
  // 32000, untied). Dense per layer: q and o 2 x 4096^2, k and v 2 x 4096 x 1024, two RMSNorms
  // 2 x 4096, router 8 x 4096 = 41,984,000; with the embedding and head (2 x 32000 x 4096) and
  // the final norm: 32 x 41,984,000 + 262,144,000 + 4096 = 1,605,636,096 on every rank.
  // Experts: 3 x 4096 x 14336 = 176,160,768 each; EP 8 leaves 1 of 8 per layer: 32 x that
  // = 5,637,144,576. Weights bf16: 2 x 7,242,780,672 B; gradients in Megatron-Core's fp32
  // main_grad buffer (--bf16 without --grad-reduce-in-bf16): 4 x 7,242,780,672 B.
  const int64_t dense = 1'605'636'096, experts = 5'637'144'576;
  // zero1: the 12 B/param fp32 master, m and v of dense parameters sharded over DP 16, of each
  // expert over the dp / ep = 2 ranks holding it.
  const int64_t optimizer = 12 * dense / 16 + 12 * experts / 2;
  // Full recomputation keeps each layer's input (s h ab = 4096 x 4096 x 2) for the 32 layers of
  // the one micro-batch in flight; the peak comes in the first layer backward, which
  // re-materialises everything else of an MoE layer: norm inputs 4 s h ab, Q/K/V/proj input
  // s ab (2 x 4096 + 2 x 1024), router probabilities s x 8 x 4 B, the 2 s routed token copies
  // (expert input and SwiGLU's gate, up, product: 2 s ab (4096 + 3 x 14336)), log-sum-exp
  // 32 s 4 B, less the kept input.
  const int64_t sq = 4096, kept = sq * 4096 * 2;
  const int64_t whole = 4 * sq * 4096 * 2 + sq * 2 * (2 * 4096 + 2 * 1024) + sq * 8 * 4 +
                        2 * sq * 2 * (4096 + 3 * 14336) + 32 * sq * 4;
  const int64_t activations = 32 * kept + (whole - kept);
  for (const auto& rank : r.report.ranks) {
    auto at = [&](ir::MemoryCategory c) { return rank.memory.at_peak[static_cast<size_t>(c)]; };
    EXPECT_EQ(at(ir::MemoryCategory::parameters), 2 * (dense + experts));
    EXPECT_EQ(at(ir::MemoryCategory::gradients), 4 * (dense + experts));
    EXPECT_EQ(at(ir::MemoryCategory::optimizer_state), optimizer);
    EXPECT_EQ(at(ir::MemoryCategory::activations), activations);
  }
}

TEST(Moe, DispatchAndCombineAllToAllSizes) {
  // Each rank routes its s = 4096 tokens to top_k = 2 experts: 8192 token copies of h = 4096
  // bf16 values, 67,108,864 B per all-to-all (nccl-tests' per-rank size). Per layer and
  // micro-batch: dispatch and combine forward, their gradients backward, and full recomputation
  // repeats the forward pair: 6 calls, 4 micro-batches, 32 layers = 768.
  const auto s = scenario::load_scenario(scenario_path("mixtral-8x7b-16xh100-ep8.yaml"));
  const auto step = strategy::build_training_step(s.model, s.layout, s.training);
  int calls = 0;
  for (const auto& task : step.graph.tasks()) {
    if (task.kind != ir::TaskKind::collective || task.rank != 0) continue;
    const auto& call = step.graph.collective(task);
    if (call.type != ir::CollectiveType::all_to_all) continue;
    ++calls;
    EXPECT_EQ(call.bytes.count, 67'108'864);
    // The EP group: 8 consecutive data-parallel ranks, ranks 0-7 (one node).
    EXPECT_EQ(step.graph.group_ranks(call.group),
              (std::vector<ir::RankId>{0, 1, 2, 3, 4, 5, 6, 7}));
  }
  EXPECT_EQ(calls, 768);
}

TEST(Moe, ZeroBubbleWPassKeepsTheExpertsAndMlaInputs) {
  // Zero-bubble's W pass reads every linear's input, so B frees all but these (per micro-batch,
  // bf16, s = 4096, tp 1, balanced routing).
  // DeepSeek-V3, MoE layer 3 (block 4): MLA's q_a/kv_a input h 7168, latents q 1536 and kv 512,
  // o_proj's input 128 x 128 = 16,384; router and shared fc1 input h 7168, shared fc2 input
  // 2048: 34,816 per token. The 4096 x 8 = 32,768 routed copies the local experts read: fc1's
  // h 7168 and fc2's 2048 each. 2 x (4096 x 34,816 + 32,768 x 9,216) = 889,192,448 B, under the
  // layer's 1,852,309,504 saved (so not capped by it).
  model::WorkShape w;
  w.seq = 4096;
  w.ep = 64;
  const auto& ds = model::find_model_preset("deepseek-v3");
  const auto work = model::build_model_work(ds, w);
  EXPECT_EQ(work.blocks[4].saved_activations.count, 1'852'309'504);
  EXPECT_EQ(work.blocks[4].weight_grad_inputs.count, 889'192'448);
  // Dense layer 0 (block 1): MLA 25,600 + fc1 input 7168 + fc2 input 18,432 per token
  // = 51,200 x 4096 x 2 = 419,430,400 B.
  EXPECT_EQ(work.blocks[1].weight_grad_inputs.count, 419'430'400);
  // Mixtral 8x7B (no MLA, no shared expert), ep 8: qkv input 4096 + o_proj input 4096, router
  // input 4096 per token; 8192 routed copies x (4096 + 14336):
  // 2 x (4096 x 12,288 + 8192 x 18,432) = 402,653,184 B.
  w.ep = 8;
  const auto mixtral = model::build_model_work(model::find_model_preset("mixtral-8x7b"), w);
  EXPECT_EQ(mixtral.blocks[1].weight_grad_inputs.count, 402'653'184);
}

TEST(Moe, DeepSeekV3OnH800WithDeepSeeksLayout) {
  // DeepSeek-V3 technical report (2024), section 3.2: 2,048 H800, PP 16, EP 64 across 8 nodes,
  // ZeRO-1 data parallelism, no tensor parallelism.
  const auto s = scenario::load_scenario(scenario_path("deepseek-v3-2048xh800.yaml"));
  const auto step = strategy::build_training_step(s.model, s.layout, s.training, {true});
  // Routed experts per GPU: 256 / 64 = 4 per MoE layer. One expert: 3 x 7168 x 2048 =
  // 44,040,192 parameters; the all-to-all of a micro-batch of one 4096-token sequence carries
  // 4096 x 8 copies of 7168 bf16 values = 469,762,048 B per rank.
  int64_t a2a = 0;
  for (const auto& task : step.graph.tasks()) {
    if (task.kind == ir::TaskKind::collective &&
        step.graph.collective(task).type == ir::CollectiveType::all_to_all) {
      a2a = step.graph.collective(task).bytes.count;
      EXPECT_EQ(step.graph.group_ranks(step.graph.collective(task).group).size(), 64u);
      break;
    }
  }
  EXPECT_EQ(a2a, int64_t{4096} * 8 * 7168 * 2);

  // Parameters on a GPU of stage 2 (decoder layers 6-9, all MoE: layers 0-2 are dense). Per MoE
  // layer, h 7168, 128 heads: MLA q_a 7168 x 1536, q_a_norm 1536, q_b 1536 x 128 x 192, kv_a
  // 7168 x 576, kv_a_norm 512, kv_b 512 x 128 x 256, o_proj 128 x 128 x 7168 = 187,107,328;
  // two RMSNorms 14,336; router 256 x 7168 and its score bias 256; one shared expert
  // 44,040,192; 4 local routed experts 176,160,768: 409,157,888 per layer, x 4 layers. Weights
  // are bf16 (2 B each) on every rank.
  const int64_t per_layer = 187'107'328 + 14'336 + 1'835'008 + 256 + 44'040'192 + 176'160'768;
  ASSERT_EQ(step.stage_of_rank[2], 2);
  EXPECT_EQ(parameter_bytes_on(step, 2), 2 * 4 * per_layer);
}

// Mixtral 8x7B on 16 H100 (two nodes) with TP 2 and sequence parallelism, DP 8, EP 4, one
// micro-batch of one 4096-token sequence per rank, plain DDP; `extra` adds layout keys.
std::string mixtral_tp2(const std::string& extra) {
  return "model:\n  preset: mixtral-8x7b\ncluster:\n  preset: dgx_h100\n  nodes: 2\n"
         "layout:\n  tp: 2\n  dp: 8\n  ep: 4\n  sequence_parallel: true\n  data_parallel: ddp\n" +
         extra +
         "training:\n  global_batch: 8\n  micro_batch: 1\n  seq_len: 4096\n  precision: "
         "mixed_bf16\n";
}

struct Collectives {
  std::set<std::vector<ir::RankId>> groups;  // distinct groups
  std::vector<int64_t> bytes;
  int calls = 0;
};
// Rank 0's collectives of `type` whose task name contains `tag`.
Collectives rank0(const strategy::StepGraph& step, ir::CollectiveType type,
                  const std::string& tag) {
  Collectives out;
  const auto& tasks = step.graph.tasks();
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].kind != ir::TaskKind::collective || tasks[i].rank != 0) continue;
    const auto& call = step.graph.collective(tasks[i]);
    if (call.type != type ||
        step.graph.task_name(static_cast<ir::TaskId>(i)).find(tag) == std::string::npos)
      continue;
    out.groups.insert(step.graph.group_ranks(call.group));
    out.bytes.push_back(call.bytes.count);
    ++out.calls;
  }
  return out;
}

// Parameters per GPU of Mixtral 8x7B under TP 2 (public config: hidden 4096, 32 layers, 32 heads
// and 8 KV heads of 128, 8 experts of ffn 14336, top-2, vocab 32000, untied). Per layer, TP-split:
// q and o 2 x 4096^2, k and v 2 x 4096 x 1024: 41,943,040 / 2 = 20,971,520; replicated: two
// RMSNorms 2 x 4096 and the router 8 x 4096 = 40,960. 32 layers: 672,399,360; the embedding and
// head 2 x 32000 x 4096 / 2 = 131,072,000 and the final norm 4096: 803,475,456 dense.
// One expert: 3 x 4096 x 14336 = 176,160,768.
constexpr int64_t kMixtralTp2Dense = 803'475'456, kMixtralExpert = 176'160'768;

TEST(Moe, MixtralTp2WholeExpertsFoldEpOverTensorParallelRanks) {
  // etp 1: EP 4 splits the 8 experts 2 per rank, whole: 32 x 2 x 176,160,768 = 11,274,289,152.
  const auto s = scenario::parse_scenario(mixtral_tp2(""), "tp2.yaml");
  EXPECT_EQ(s.layout.etp, 1);  // our default
  const auto step = strategy::build_training_step(s.model, s.layout, s.training);
  EXPECT_EQ(parameter_bytes_on(step, 0), 2 * (kMixtralTp2Dense + 32 * 2 * kMixtralExpert));
  // Expert grid over the 16 ranks (local index = dp x 2 + tp): etp 1, so the EP group is 4
  // consecutive ranks, two TP pairs; the dispatch sends rank 0's 4096 / 2 = 2048 SP tokens to
  // top-2 experts, 4096 copies of 4096 bf16 values = 33,554,432 B.
  const Collectives a2a = rank0(step, ir::CollectiveType::all_to_all, ".ep_");
  EXPECT_EQ(a2a.groups, (std::set<std::vector<ir::RankId>>{{0, 1, 2, 3}}));
  for (int64_t b : a2a.bytes) EXPECT_EQ(b, 33'554'432);
  // Dispatch and combine forward, their gradients backward: 4 per layer, 32 layers.
  EXPECT_EQ(a2a.calls, 4 * 32);
  EXPECT_EQ(rank0(step, ir::CollectiveType::all_gather, ".etp_").calls, 0);
  // Expert gradients: tp x cp x dp / (etp x ep) = 2 x 1 x 8 / 4 = 4 ranks with the same experts,
  // local indices 0, 4, 8, 12; dense gradients over dp x cp = 8 (the same TP index).
  const Collectives grads = rank0(step, ir::CollectiveType::all_reduce, "");
  EXPECT_TRUE(grads.groups.count({0, 4, 8, 12}));
  EXPECT_TRUE(grads.groups.count({0, 2, 4, 6, 8, 10, 12, 14}));
  EXPECT_EQ(strategy::expert_data_parallel_size(s.layout), 4);
}

TEST(Moe, MixtralTp2ExpertTensorParallelSplitsEachExpert) {
  // etp 2 (Megatron's default, = tp): each rank holds half of each of its 2 experts:
  // 32 x 2 x 176,160,768 / 2 = 5,637,144,576.
  const auto s = scenario::parse_scenario(mixtral_tp2("  etp: 2\n"), "tp2.yaml");
  const auto step = strategy::build_training_step(s.model, s.layout, s.training);
  EXPECT_EQ(parameter_bytes_on(step, 0), 2 * (kMixtralTp2Dense + 32 * 2 * kMixtralExpert / 2));
  // ETP is innermost: the ETP group is the TP pair {0, 1}; EP steps over local indices by 2.
  const Collectives a2a = rank0(step, ir::CollectiveType::all_to_all, ".ep_");
  EXPECT_EQ(a2a.groups, (std::set<std::vector<ir::RankId>>{{0, 2, 4, 6}}));
  for (int64_t b : a2a.bytes) EXPECT_EQ(b, 33'554'432);
  // The pair all-gathers the copies both received (2 x 4096 x 4096 x 2 B = 67,108,864) before
  // fc1 and reduce-scatters fc2's partial sums; backward the reverse: 2 of each per layer.
  const Collectives gather = rank0(step, ir::CollectiveType::all_gather, ".etp_");
  const Collectives scatter = rank0(step, ir::CollectiveType::reduce_scatter, ".etp_");
  EXPECT_EQ(gather.groups, (std::set<std::vector<ir::RankId>>{{0, 1}}));
  EXPECT_EQ(gather.calls, 2 * 32);
  EXPECT_EQ(scatter.calls, 2 * 32);
  for (int64_t b : gather.bytes) EXPECT_EQ(b, 67'108'864);
  for (int64_t b : scatter.bytes) EXPECT_EQ(b, 67'108'864);
  // Expert gradients: 2 x 1 x 8 / (2 x 4) = 2 ranks, local indices 0 and 8.
  EXPECT_TRUE(rank0(step, ir::CollectiveType::all_reduce, "").groups.count({0, 8}));
  EXPECT_EQ(strategy::expert_data_parallel_size(s.layout), 2);
}

TEST(Moe, AllGatherDispatcherGathersTheExpertGroupsTokens) {
  // Megatron's allgather dispatcher: every rank of the etp x ep group gathers the group's tokens
  // (each rank's 4096 / 2 = 2048 SP tokens of 4096 bf16 values), its local experts take theirs,
  // and the outputs are reduce-scattered back; no all-to-all, no expert-TP collectives.
  for (const auto& [etp, group] : {std::pair{1, std::vector<ir::RankId>{0, 1, 2, 3}},
                                   std::pair{2, std::vector<ir::RankId>{0, 1, 2, 3, 4, 5, 6, 7}}}) {
    const auto s = scenario::parse_scenario(
        mixtral_tp2("  etp: " + std::to_string(etp) + "\n") + "moe:\n  dispatcher: allgather\n",
        "ag.yaml");
    const auto step = strategy::build_training_step(s.model, s.layout, s.training);
    EXPECT_EQ(rank0(step, ir::CollectiveType::all_to_all, "").calls, 0);
    EXPECT_EQ(rank0(step, ir::CollectiveType::all_gather, ".etp_all_gather").calls, 0);
    const Collectives gather = rank0(step, ir::CollectiveType::all_gather, ".etp_ep_");
    const Collectives scatter = rank0(step, ir::CollectiveType::reduce_scatter, ".etp_ep_");
    EXPECT_EQ(gather.groups, (std::set<std::vector<ir::RankId>>{group}));
    // Forward: gather the tokens, scatter the outputs; backward: gather the output gradients,
    // scatter the input gradients. 2 of each per layer, 32 layers.
    EXPECT_EQ(gather.calls, 2 * 32);
    EXPECT_EQ(scatter.calls, 2 * 32);
    // etp 1: 4 ranks x 2048 x 4096 x 2 B = 67,108,864; etp 2: 8 ranks, 134,217,728.
    for (int64_t b : gather.bytes)
      EXPECT_EQ(b, int64_t{2048} * static_cast<int64_t>(group.size()) * 4096 * 2);
  }
}

TEST(Moe, RoutingCapacityAndImbalance) {
  // Mixtral 8x7B, tp 1, EP 8 (one expert per rank), one 4096-token sequence: a rank routes
  // 4096 x 2 = 8192 copies; the dispatch all-to-all carries them (8192 x 4096 x 2 B).
  const auto& m = model::find_model_preset("mixtral-8x7b");
  model::WorkShape w;
  w.seq = 4096;
  w.ep = 8;
  auto op = [&](const model::WorkShape& shape, const std::string& name) {
    // Kept in a variable: a range-for over a member of a temporary reads freed memory (C++20).
    const model::ModelWork work = model::build_model_work(m, shape);
    for (const auto& o : work.blocks[1].forward) {
      if (o.name == name) return o;
    }
    return model::Op{};
  };
  const int64_t dropless = int64_t{8192} * 4096 * 2;
  EXPECT_EQ(op(w, "mlp.permute").tp_after.bytes.count, dropless);
  // Capacity factor 1.0 with balanced routing drops nothing: each expert's cap is
  // ceil(1.0 x 8192 / 8) = 1024 copies per source rank, 8 x 1024 = 8192 received.
  model::WorkShape cf = w;
  cf.moe_capacity_factor = 1.0;
  EXPECT_EQ(op(cf, "mlp.permute").tp_after.bytes.count, dropless);
  // Padded to capacity 1.25: ceil(1.25 x 1024) = 1280 per expert, 8 x 1280 = 10,240 copies.
  cf.moe_capacity_factor = 1.25;
  cf.moe_pad_to_capacity = true;
  EXPECT_EQ(op(cf, "mlp.permute").tp_after.bytes.count, int64_t{10'240} * 4096 * 2);
  // Imbalance 1.5, dropless: the busiest rank receives 1.5 x 8192 = 12,288 copies; its grouped
  // fc1 GEMM (its one expert, 4096 -> 2 x 14336) does 2 x 12,288 x 28,672 x 4096 FLOPs, 1.5 x
  // the balanced 2 x 8192 x 28,672 x 4096 = 1,924,145,348,608.
  model::WorkShape skew = w;
  skew.moe_imbalance = 1.5;
  EXPECT_EQ(op(skew, "mlp.permute").tp_after.bytes.count, int64_t{12'288} * 4096 * 2);
  EXPECT_DOUBLE_EQ(op(w, "mlp.experts.fc1").op.flops.value, 1'924'145'348'608.0);
  EXPECT_DOUBLE_EQ(op(skew, "mlp.experts.fc1").op.flops.value, 1.5 * 1'924'145'348'608.0);
  EXPECT_EQ(op(skew, "mlp.experts.fc1").op.m, 12'288);
  // The model's FLOPs count the balanced work: imbalance is time on the busiest rank, not work.
  EXPECT_DOUBLE_EQ(model::build_model_work(m, skew).model_flops.value,
                   model::build_model_work(m, w).model_flops.value);
  // Capacity 1.0 with that imbalance drops down to the cap: 8 x 1024 = 8192 again.
  skew.moe_capacity_factor = 1.0;
  EXPECT_EQ(op(skew, "mlp.permute").tp_after.bytes.count, dropless);
}

TEST(Moe, ImbalanceSlowsTheCriticalRanksGroupedGemm) {
  // The whole step: imbalance 1.5 on Mixtral tp 2 / EP 4 gives the grouped GEMMs 1.5 x the rows
  // (rank 0 receives 1.5 x 4096 copies for its 2 experts, 3072 per expert where balanced is
  // 2048), so their simulated time is 1.5 x, within the GEMM model's efficiency change between
  // the two shapes (both compute-bound on an H100).
  auto gemm_seconds = [](const std::string& moe) {
    const auto s = scenario::parse_scenario(mixtral_tp2("") + moe, "tp2.yaml");
    driver::SimulateOptions o;
    o.with_baseline = false;
    const auto r = driver::simulate(s, o);
    double sum = 0;
    const auto& tasks = r.step.graph.tasks();
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].rank != 0 || tasks[i].kind != ir::TaskKind::compute) continue;
      if (r.step.graph.task_name(static_cast<ir::TaskId>(i)).find("mlp.experts.fc") ==
          std::string::npos)
        continue;
      sum += (r.timeline.tasks[i].end - r.timeline.tasks[i].start).seconds();
    }
    return sum;
  };
  const double balanced = gemm_seconds(""), skewed = gemm_seconds("moe:\n  imbalance: 1.5\n");
  ASSERT_GT(balanced, 0);
  EXPECT_NEAR(skewed / balanced, 1.5, 0.05);
}

TEST(Moe, DeepSeekV3MlaAndSharedExpertSplitByTp) {
  // DeepSeek-V3 (h 7168, 128 heads, q latent 1536, kv latent 512 + rotary 64, qk 128 + 64, v 128,
  // one shared expert of 2048) at tp 4 with SP, one 4096-token sequence, layer 3 (MoE; block 4).
  model::WorkShape w;
  w.seq = 4096;
  w.tp = 4;
  w.sequence_parallel = true;
  w.ep = 8;
  const auto work = model::build_model_work(model::find_model_preset("deepseek-v3"), w);
  auto op = [&](const std::string& name) {
    for (const auto& o : work.blocks[4].forward) {
      if (o.name == name) return o;
    }
    ADD_FAILURE() << name;
    return model::Op{};
  };
  // q_a and kv_a are replicated and read the rank's 4096 / 4 = 1024-token shard: no collective.
  EXPECT_EQ(op("attn.q_a").op.m, 1024);
  EXPECT_EQ(op("attn.q_a").tp_before.count + op("attn.kv_a").tp_before.count, 0);
  // q_b all-gathers the q latent of the whole sequence, 4096 x 1536 x 2 B = 12,582,912, and
  // yields 128 / 4 = 32 heads of 192 per token; kv_b gathers the kv latent and the shared rotary
  // key, 4096 x (512 + 64) x 2 B = 4,718,592, for 32 heads of 128 + 128.
  EXPECT_EQ(op("attn.q_b").tp_before.type, ir::CollectiveType::all_gather);
  EXPECT_EQ(op("attn.q_b").tp_before.bytes.count, 12'582'912);
  EXPECT_EQ(op("attn.q_b").op.n, 32 * 192);
  EXPECT_EQ(op("attn.kv_b").tp_before.bytes.count, 4'718'592);
  EXPECT_EQ(op("attn.kv_b").op.n, 32 * 256);
  // o_proj is row-parallel: 32 x 128 = 4096 inputs, its output reduce-scattered (4096 x 7168 x 2
  // B).
  EXPECT_EQ(op("attn.proj").op.k, 4096);
  EXPECT_EQ(op("attn.proj").tp_after.type, ir::CollectiveType::reduce_scatter);
  EXPECT_EQ(op("attn.proj").tp_after.bytes.count, int64_t{4096} * 7168 * 2);
  // The router scores the 1024-token shard; the shared expert is a TP-split SwiGLU (2 x 2048 / 4
  // = 1024 fc1 outputs over the gathered 4096 tokens).
  EXPECT_EQ(op("mlp.router").op.m, 1024);
  EXPECT_EQ(op("mlp.shared.fc1").op.n, 1024);
  EXPECT_EQ(op("mlp.shared.fc1").tp_before.bytes.count, int64_t{4096} * 7168 * 2);
  // Dispatch: the shard's 1024 x 8 copies of 7168 bf16 values.
  EXPECT_EQ(op("mlp.permute").tp_after.bytes.count, int64_t{1024} * 8 * 7168 * 2);
}

TEST(Moe, DeepSeekV3ParametersPerGpuWithTp2) {
  // DeepSeek's layout with TP 2 + SP added (PP 16, DP 64, EP 64, etp 1): 2 x 64 = 128 ranks per
  // stage re-split as EP 64 x edp 2. Parameters on a GPU of stage 2 (4 MoE layers). Per layer:
  // MLA's replicated q_a 7168 x 1536, q_a_norm 1536, kv_a 7168 x 576 and kv_a_norm 512 =
  // 15,140,864, and half of q_b 1536 x 128 x 192, kv_b 512 x 128 x 256 and o_proj 128 x 128 x
  // 7168 (171,966,464 / 2 = 85,983,232); two RMSNorms 14,336; the router 256 x 7168 and its score
  // bias 256 (replicated); half the shared expert, 44,040,192 / 2 = 22,020,096; 256 / 64 = 4
  // whole routed experts, 176,160,768. Weights are bf16.
  auto s = scenario::load_scenario(scenario_path("deepseek-v3-2048xh800.yaml"));
  s.layout.tp = 2;
  s.layout.dp = 64;
  s.layout.sequence_parallel = true;
  strategy::validate(s.layout, s.training, s.model, s.gpus);
  const auto step = strategy::build_training_step(s.model, s.layout, s.training, {true});
  const int64_t per_layer =
      15'140'864 + 85'983'232 + 14'336 + 1'835'008 + 256 + 22'020'096 + 176'160'768;
  ASSERT_EQ(step.stage_of_rank[2], 2);
  EXPECT_EQ(parameter_bytes_on(step, 2), 2 * 4 * per_layer);
  EXPECT_EQ(strategy::expert_data_parallel_size(s.layout), 2);
}

TEST(Moe, MegatronImportKeepsMegatronsEtpDefault) {
  // Megatron sets --expert-tensor-parallel-size to TP when it is not given (arguments.py).
  interop::ImportOptions o;
  o.gpus = 16;
  const std::vector<std::string> args = {"--num-layers",
                                         "2",
                                         "--hidden-size",
                                         "1024",
                                         "--num-attention-heads",
                                         "8",
                                         "--seq-length",
                                         "1024",
                                         "--padded-vocab-size",
                                         "32000",
                                         "--swiglu",
                                         "--normalization",
                                         "RMSNorm",
                                         "--disable-bias-linear",
                                         "--position-embedding-type",
                                         "rope",
                                         "--ffn-hidden-size",
                                         "4096",
                                         "--num-experts",
                                         "8",
                                         "--tensor-model-parallel-size",
                                         "2",
                                         "--expert-model-parallel-size",
                                         "4",
                                         "--sequence-parallel"};
  auto etp_of = [&](std::vector<std::string> a) {
    for (const auto& [k, v] : interop::import_megatron(a, o).layout) {
      if (k == "etp") return v;
    }
    return std::string("1");
  };
  EXPECT_EQ(etp_of(args), "2");
  auto whole = args;
  whole.insert(whole.end(), {"--expert-tensor-parallel-size", "1"});
  EXPECT_EQ(etp_of(whole), "1");
  // EP 8 x ETP 2 = 16 ranks: TP 2 x DP 8 = 16 holds them; EP 16 x ETP 2 does not.
  auto wide = args;
  wide[wide.size() - 2] = "16";
  EXPECT_EQ(test::error_of([&] { interop::import_megatron(wide, o); }),
            "megatron argument --expert-model-parallel-size: EP 16 x ETP 2 must divide TP x CP x "
            "DP (16)");
}

TEST(Moe, ExpertLayoutAndRoutingErrors) {
  using test::error_of;
  auto parse = [](const std::string& text) {
    return error_of([&] { scenario::parse_scenario(text, "m.yaml"); });
  };
  const std::string tp4 =
      "model:\n  preset: mixtral-8x7b\ncluster:\n  preset: dgx_h100\n  nodes: 2\n"
      "layout:\n  tp: 4\n  dp: 4\n  ep: 4\n  sequence_parallel: true\n";
  const std::string train = "training:\n  global_batch: 4\n  micro_batch: 1\n  seq_len: 4096\n";
  EXPECT_EQ(parse(tp4 + "  etp: 2\n" + train),
            "m.yaml:7:3: layout: etp 2 is not simulated: use etp: 1 (whole experts on each rank) "
            "or etp: 4 (= tp, experts split like the dense MLP)");
  EXPECT_NE(parse(tp4 + "  etp: 0\n" + train).find("layout.etp"), std::string::npos);
  // EP 8 x ETP 4 = 32 does not divide the 16 ranks of the stage.
  EXPECT_EQ(parse("model:\n  preset: mixtral-8x7b\ncluster:\n  preset: dgx_h100\n  nodes: 2\n"
                  "layout:\n  tp: 4\n  dp: 4\n  ep: 8\n  etp: 4\n  sequence_parallel: true\n" +
                  train),
            "m.yaml:7:3: layout: ep x etp = 8 x 4 must divide tp x cp x dp = 16: experts are split "
            "over each pipeline stage's "
            "tp x cp x dp ranks (Megatron-Core's expert grid)");
  EXPECT_EQ(parse("model:\n  preset: mixtral-8x7b\ncluster:\n  preset: dgx_h100\n  nodes: "
                  "2\nlayout:\n  tp: 2\n  dp: 8\n"
                  "training:\n  global_batch: 8\n  micro_batch: 1\n  seq_len: 4096\n"),
            "m.yaml:7:3: layout: mixtral-8x7b has MoE layers: with tp > 1 they need "
            "sequence_parallel: true (Megatron-Core asserts it: "
            "each TP rank routes and dispatches its own sequence shard)");
  EXPECT_EQ(parse(tp4 + train + "moe:\n  capacity_factor: 0\n"),
            "m.yaml:16:20: moe.capacity_factor: expected a number in (0, 16] (each expert's cap "
            "over its balanced share; leave it out "
            "for dropless routing)");
  EXPECT_NE(parse(tp4 + train + "moe:\n  capacity_factor: 17\n")
                .find("moe.capacity_factor: expected a number in (0, 16]"),
            std::string::npos);
  EXPECT_EQ(parse(tp4 + train + "moe:\n  imbalance: 4.5\n"),
            "m.yaml:16:14: moe.imbalance: expected a number in [1, ep = 4] (the busiest EP rank's "
            "token copies over the mean; 1: balanced)");
  EXPECT_NE(parse(tp4 + train + "moe:\n  imbalance: 0.9\n")
                .find("moe.imbalance: expected a number in [1, ep = 4]"),
            std::string::npos);
  EXPECT_EQ(parse(tp4 + train + "moe:\n  pad_to_capacity: true\n"),
            "m.yaml:16:20: moe.pad_to_capacity: needs moe.capacity_factor (dropless routing has no "
            "capacity)");
  EXPECT_NE(parse("model:\n  preset: llama2-7b\ncluster:\n  preset: dgx_h100\n  nodes: "
                  "1\nlayout:\n  dp: 8\n" +
                  train + "moe:\n  imbalance: 1\n")
                .find("has no experts; the moe section applies to mixture-of-experts models"),
            std::string::npos);
}

}  // namespace
}  // namespace cs
