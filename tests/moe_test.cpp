// Mixture-of-experts with expert parallelism: memory per GPU, all-to-all sizes, and DeepSeek-V3's
// published layout, against hand derivations (all-to-all times: all_to_all_test.cpp).
#include <gtest/gtest.h>

#include "driver/simulation.h"
#include "models/model_spec.h"
#include "models/model_work.h"
#include "scenarios/scenario.h"
#include "strategies/training_step.h"

namespace cs {
namespace {

std::string scenario_path(const std::string& name) { return std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name; }

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
  // = 5,637,144,576. Weights and gradients bf16: 2 x 7,242,780,672 B each.
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
  const int64_t whole = 4 * sq * 4096 * 2 + sq * 2 * (2 * 4096 + 2 * 1024) + sq * 8 * 4 + 2 * sq * 2 * (4096 + 3 * 14336) + 32 * sq * 4;
  const int64_t activations = 32 * kept + (whole - kept);
  for (const auto& rank : r.report.ranks) {
    auto at = [&](ir::MemoryCategory c) { return rank.memory.at_peak[static_cast<size_t>(c)]; };
    EXPECT_EQ(at(ir::MemoryCategory::parameters), 2 * (dense + experts));
    EXPECT_EQ(at(ir::MemoryCategory::gradients), 2 * (dense + experts));
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
    EXPECT_EQ(step.graph.group_ranks(call.group), (std::vector<ir::RankId>{0, 1, 2, 3, 4, 5, 6, 7}));
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
    if (task.kind == ir::TaskKind::collective && step.graph.collective(task).type == ir::CollectiveType::all_to_all) {
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
  int64_t weights = 0;
  for (const auto& task : step.graph.tasks()) {
    if (task.rank == 2 && task.kind == ir::TaskKind::memory && step.graph.task_name(static_cast<ir::TaskId>(&task - step.graph.tasks().data())) == "alloc.parameters") {
      weights = step.graph.memory(task).delta;
    }
  }
  EXPECT_EQ(weights, 2 * 4 * per_layer);
}

}  // namespace
}  // namespace cs
