// Uneven pipeline stages: Llama 3 405B as Meta laid it out (TP 8, PP 16 with 7-layer first and
// last stages, DP 128, seq 8192), each stage's memory at its peak derived by hand.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "driver/simulation.h"
#include "scenarios/scenario.h"
#include "strategies/layout.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

TEST(UnevenPipeline, DefaultSplitGivesTheEndsTheRemainder) {
  strategy::Layout l;
  l.pp = 16;
  // 126 = 7 + 14 x 8 + 7: the middle stages take ceil(126 / 16) = 8, the ends share 14.
  std::vector<int> meta(16, 8);
  meta.front() = meta.back() = 7;
  EXPECT_EQ(strategy::stage_layer_counts(l, 126), meta);
  EXPECT_EQ(strategy::stage_split_string(l, 126),
            "layers per stage 7, 8 x 14, 7 (default split: 126 layers do not divide by pp 16; set "
            "first_stage_layers / "
            "last_stage_layers to choose)");
  // Explicit: 30 layers on 4 stages with 6 on the first and 8 on the last leave 16 for two.
  l.pp = 4;
  l.first_stage_layers = 6;
  l.last_stage_layers = 8;
  EXPECT_EQ(strategy::stage_layer_counts(l, 30), (std::vector<int>{6, 8, 8, 8}));
}

TEST(UnevenPipeline, InterleavedChunksSplitAsTorchTitanDoes) {
  // TorchTitan's Table 5 (Llama 3.1 405B, PP 8, Interleaved 1F1B): two chunks per stage by
  // default, 16 chunks for 126 layers. Its rule: the first chunk takes 126 / 16 = 7, the next
  // 126 % 16 = 14 chunks take 8, the last what remains, 126 - 7 - 112 = 7.
  strategy::Layout l;
  l.pp = 8;
  l.virtual_stages = 2;
  l.schedule = strategy::PipelineSchedule::interleaved;
  std::vector<int> titan(16, 8);
  titan.front() = titan.back() = 7;
  EXPECT_EQ(strategy::chunk_layer_counts(l, 126), titan);
  EXPECT_EQ(strategy::stage_split_string(l, 126),
            "layers per model chunk 7, 8 x 14, 7 (default split, TorchTitan's: 126 layers do not "
            "divide by pp x virtual_stages 16)");
  // 12 layers in 8 chunks: base 1, 4 extra to chunks 1-4, the last takes 12 - 1 - 8 - 2 = 1.
  l.pp = 4;
  EXPECT_EQ(strategy::chunk_layer_counts(l, 12), (std::vector<int>{1, 2, 2, 2, 2, 1, 1, 1}));
  // Even: no split string. Stage 0 then runs chunks 0 and 4 (global chunk g on stage g % pp).
  EXPECT_EQ(strategy::chunk_layer_counts(l, 16), std::vector<int>(8, 2));
  EXPECT_EQ(strategy::stage_split_string(l, 16), "");
  // The step follows the split: GPT-2 small (12 layers) on pp 4 x v 2, chunks 1, 2, 2, 2, 2, 1, 1,
  // 1; stage 0 runs chunk 0 (layer 0) and chunk 4 (after 1 + 2 x 3 = 7 layers: layers 7 and 8),
  // stage 3 chunks 3 (layers 5, 6) and 7 (layer 11).
  {
    strategy::Layout g;
    g.pp = 4;
    g.virtual_stages = 2;
    g.schedule = strategy::PipelineSchedule::interleaved;
    strategy::TrainingSpec gt;
    gt.global_batch = 4;
    gt.micro_batch = 1;
    gt.seq_len = 1024;
    const auto step = strategy::build_training_step(model::find_model_preset("gpt2-small"), g, gt);
    std::map<int, std::set<int>> layers_of_stage;
    for (const auto& task : step.graph.tasks()) {
      if (task.kind == ir::TaskKind::compute && task.phase == ir::Phase::forward && task.layer >= 0)
        layers_of_stage[step.stage_of_rank[task.rank]].insert(task.layer);
    }
    EXPECT_EQ(layers_of_stage[0], (std::set<int>{0, 7, 8}));
    EXPECT_EQ(layers_of_stage[3], (std::set<int>{5, 6, 11}));
  }
  // The layout is valid (it was refused while interleaved chunks had to divide the layers).
  model::ModelSpec m = model::find_model_preset("llama3-405b");
  strategy::Layout big;
  big.tp = 8;
  big.pp = 8;
  big.dp = 8;
  big.sequence_parallel = true;
  big.virtual_stages = 2;
  big.schedule = strategy::PipelineSchedule::interleaved;
  strategy::TrainingSpec t;
  t.global_batch = 64;
  t.micro_batch = 1;
  t.seq_len = 8192;
  EXPECT_NO_THROW(strategy::validate(big, t, m, 512));
}

TEST(UnevenPipeline, EmbeddingAndLossCountedAsLayersSplitAsMegatronDoes) {
  // Megatron-Bridge's Llama 3.1 405B recipes (TP 4, CP 2, PP 8, VP 8 on 128 B200) set
  // account_for_embedding/loss_in_pipeline_split: 126 + 2 = 128 "layers" over 8 x 8 = 64 chunks
  // is 2 a chunk; the first chunk builds 2 - 1 = 1 decoder layer (the embedding is the other), the
  // last 1 (the loss). Stage 0 runs chunks 0, 8, ..., 56: 1 + 7 x 2 = 15 layers; stage 7 likewise
  // 15; stages 1-6 run 8 x 2 = 16. Total 15 + 6 x 16 + 15 = 126.
  strategy::Layout l;
  l.pp = 8;
  l.virtual_stages = 8;
  l.schedule = strategy::PipelineSchedule::interleaved;
  l.embedding_in_split = l.loss_in_split = true;
  std::vector<int> chunks(64, 2);
  chunks.front() = chunks.back() = 1;
  EXPECT_EQ(strategy::chunk_layer_counts(l, 126), chunks);
  std::vector<int> stages(8, 16);
  stages.front() = stages.back() = 15;
  EXPECT_EQ(strategy::stage_layer_counts(l, 126), stages);
  EXPECT_EQ(strategy::stage_split_string(l, 126),
            "layers per model chunk 1, 2 x 62, 1 (the embedding and the loss counted as layers of "
            "the split)");
  // Qwen3-235B (94 layers) on PP 8: VP 2 gives 96 / 16 = 6 a chunk, the ends 5; VP 4 gives
  // 96 / 32 = 3, the ends 2 (Megatron-Bridge's B200 and H100 recipes).
  l.virtual_stages = 2;
  std::vector<int> qwen_vp2(16, 6);
  qwen_vp2.front() = qwen_vp2.back() = 5;
  EXPECT_EQ(strategy::chunk_layer_counts(l, 94), qwen_vp2);
  l.virtual_stages = 4;
  std::vector<int> qwen_vp4(32, 3);
  qwen_vp4.front() = qwen_vp4.back() = 2;
  EXPECT_EQ(strategy::chunk_layer_counts(l, 94), qwen_vp4);
  // Only the embedding counted: 31 layers + 1 = 32 over pp 8 x vp 2 = 16 chunks, 2 a chunk, the
  // first 1, the last 2.
  l.virtual_stages = 2;
  l.loss_in_split = false;
  std::vector<int> embedding_only(16, 2);
  embedding_only.front() = 1;
  EXPECT_EQ(strategy::chunk_layer_counts(l, 31), embedding_only);
}

TEST(UnevenPipeline, EmbeddingAndLossCountedRunTheirChunksLayers) {
  // A 14-layer GPT-2 small on pp 2 x vp 4 with both counted: 16 / 8 = 2 a chunk, chunks
  // 1, 2, 2, 2, 2, 2, 2, 1. Stage 0 runs chunks 0, 2, 4, 6: layers 0 | 3, 4 | 7, 8 | 11, 12;
  // stage 1 chunks 1, 3, 5, 7: layers 1, 2 | 5, 6 | 9, 10 | 13.
  model::ModelSpec m = model::find_model_preset("gpt2-small");
  m.layers = 14;
  strategy::Layout l;
  l.pp = 2;
  l.virtual_stages = 4;
  l.schedule = strategy::PipelineSchedule::interleaved;
  l.embedding_in_split = l.loss_in_split = true;
  strategy::TrainingSpec t;
  t.global_batch = 4;
  t.seq_len = 1024;
  EXPECT_NO_THROW(strategy::validate(l, t, m, 2));
  const auto step = strategy::build_training_step(m, l, t);
  std::map<int, std::set<int>> layers_of_stage;
  for (const auto& task : step.graph.tasks()) {
    if (task.kind == ir::TaskKind::compute && task.phase == ir::Phase::forward && task.layer >= 0)
      layers_of_stage[step.stage_of_rank[task.rank]].insert(task.layer);
  }
  EXPECT_EQ(layers_of_stage[0], (std::set<int>{0, 3, 4, 7, 8, 11, 12}));
  EXPECT_EQ(layers_of_stage[1], (std::set<int>{1, 2, 5, 6, 9, 10, 13}));
  // pp 2 x vp 8: 16 / 16 = 1 a chunk, chunks 0, 1 x 14, 0: the first chunk holds only the
  // embedding, the last only the head. Stage 0 runs chunks 0, 2, ..., 14: layers 1, 3, ..., 13;
  // stage 1 chunks 1, 3, ..., 15: layers 0, 2, ..., 12 (chunk 15 none).
  l.virtual_stages = 8;
  t.global_batch = 8;
  EXPECT_NO_THROW(strategy::validate(l, t, m, 2));
  const auto thin = strategy::build_training_step(m, l, t);
  layers_of_stage.clear();
  for (const auto& task : thin.graph.tasks()) {
    if (task.kind == ir::TaskKind::compute && task.phase == ir::Phase::forward && task.layer >= 0)
      layers_of_stage[thin.stage_of_rank[task.rank]].insert(task.layer);
  }
  EXPECT_EQ(layers_of_stage[0], (std::set<int>{1, 3, 5, 7, 9, 11, 13}));
  EXPECT_EQ(layers_of_stage[1], (std::set<int>{0, 2, 4, 6, 8, 10, 12}));
}

TEST(UnevenPipeline, EmbeddingAndLossCountedMustDivideByTheChunks) {
  // Llama 3.1 405B: 128 over pp 8 x vp 8 = 64 chunks, valid (TP 4, CP 2, DP 2 on 128 GPUs).
  model::ModelSpec m = model::find_model_preset("llama3.1-405b");
  strategy::Layout l;
  l.tp = 4;
  l.cp = 2;
  l.pp = 8;
  l.dp = 2;
  l.sequence_parallel = true;
  l.virtual_stages = 8;
  l.schedule = strategy::PipelineSchedule::interleaved;
  l.embedding_in_split = l.loss_in_split = true;
  strategy::TrainingSpec t;
  t.global_batch = 64;
  t.seq_len = 8192;
  EXPECT_NO_THROW(strategy::validate(l, t, m, 128));
  // pp 8 x vp 16 = 128 chunks: 1 a chunk, the first holding only the embedding and the last only
  // the head and loss (Megatron-Core builds them empty of decoder layers; Megatron-Bridge's
  // PP 16 x VP 8 recipes run so): chunks 0, 1 x 126, 0; stage 0 runs chunks 0, 8, ..., 120: 15
  // layers, stage 7 likewise, stages 1-6 16.
  l.virtual_stages = 16;
  EXPECT_NO_THROW(strategy::validate(l, t, m, 128));
  std::vector<int> one_each(128, 1);
  one_each.front() = one_each.back() = 0;
  EXPECT_EQ(strategy::chunk_layer_counts(l, 126), one_each);
  // pp 8 x vp 32 = 256 chunks: under one counted layer a chunk.
  l.virtual_stages = 32;
  EXPECT_THROW(strategy::validate(l, t, m, 128), UserError);
  // pp 8 x vp 5 = 40 chunks: 128 does not divide.
  l.virtual_stages = 5;
  EXPECT_THROW(strategy::validate(l, t, m, 128), UserError);
  // Megatron-Core refuses the flags with --decoder-first/last-pipeline-num-layers.
  l.virtual_stages = 1;
  l.schedule = strategy::PipelineSchedule::one_f_one_b;
  EXPECT_NO_THROW(strategy::validate(l, t, m, 128));  // 15, 16 x 6, 15
  l.first_stage_layers = 15;
  EXPECT_THROW(strategy::validate(l, t, m, 128), UserError);
}

TEST(UnevenPipeline, ExplicitSplitMustCoverEveryLayer) {
  model::ModelSpec m = model::find_model_preset("llama3-405b");
  strategy::Layout l;
  l.tp = 8;
  l.pp = 16;
  l.dp = 128;
  l.sequence_parallel = true;
  l.first_stage_layers = 7;
  l.last_stage_layers = 6;  // 126 - 13 = 113 does not divide by 14
  strategy::TrainingSpec t;
  t.global_batch = 2048;
  t.seq_len = 8192;
  EXPECT_THROW(strategy::validate(l, t, m, 16384), UserError);
  l.last_stage_layers = 7;
  EXPECT_NO_THROW(strategy::validate(l, t, m, 16384));
}

TEST(UnevenPipeline, Llama3_405bStageMemoryMatchesTheHandDerivation) {
  const auto s = scenario::load_scenario(cs::test_paths::source_dir() +
                                         "/scenarios/llama3-405b-16384xh100.yaml");
  driver::SimulateOptions o;
  o.with_baseline = false;
  const auto r = driver::simulate(s, o);
  ASSERT_EQ(r.report.ranks.size(), 16u);  // one representative rank per stage

  // Per decoder layer and TP rank (h 16384, 128 heads of 128, 8 KV heads, ffn 53248, vocab
  // 128256, t = 8, no biases): attention q and o 2 x h^2, k and v 2 x h x 1024, SwiGLU MLP
  // 3 x h x 53248, all split by TP; two RMSNorms (2h) replicated.
  const int64_t h = 16384, kv = 1024, f = 53248, V = 128256, t = 8;
  const int64_t layer = (2 * h * h + 2 * h * kv + 3 * h * f) / t + 2 * h;
  const int64_t embedding = V * h / t,
                head = V * h / t + h;  // vocab-parallel; final norm replicated
  // Activations one layer saves per micro-batch (s 8192, b 1, bf16, SP, fused attention):
  // norm inputs 4 s h ab / t, Q and the projection input 2 s h ab and K, V 2 s kv ab, SwiGLU's
  // gate, up and product 3 s f ab, all / t, and the fp32 log-sum-exp b (128 / t) s 4.
  const int64_t sq = 8192, ab = 2;
  const int64_t act_layer = sq * h * 4 * ab / t + sq * ab * (2 * h + 2 * kv) / t +
                            sq * f * ab * 3 / t + (128 / t) * sq * 4;
  ASSERT_EQ(act_layer, 533'200'896);
  for (int stage = 0; stage < 16; ++stage) {
    const auto& m = r.report.ranks[static_cast<size_t>(stage)].memory;
    const int64_t layers = stage == 0 || stage == 15 ? 7 : 8;
    const int64_t params = layers * layer + (stage == 0 ? embedding : 0) + (stage == 15 ? head : 0);
    auto at = [&](ir::MemoryCategory c) { return m.at_peak[static_cast<size_t>(c)]; };
    // Weights in bf16, gradients in 16-bit buffers (the file sets grad_reduce_in_bf16, the
    // nearest expressible memory to Meta's sharded fp32 gradients); fp32 master, m and v (12 B)
    // sharded over DP 128, rounded up.
    EXPECT_EQ(at(ir::MemoryCategory::parameters), 2 * params) << "stage " << stage;
    EXPECT_EQ(at(ir::MemoryCategory::gradients), 2 * params) << "stage " << stage;
    EXPECT_EQ(at(ir::MemoryCategory::optimizer_state), (12 * params + 127) / 128)
        << "stage " << stage;
    // 1F1B: stage s holds p - s = 16 - s micro-batches in flight at its peak (m = 16 >= p), and
    // the first stage's embedding saves nothing beyond its layers' inputs.
    if (stage > 0 && stage < 15) {
      EXPECT_EQ(at(ir::MemoryCategory::activations), (16 - stage) * layers * act_layer)
          << "stage " << stage;
    }
  }
  // With 16-bit gradient buffers the step fits in 80 GB with the per-GPU reserve beside it (CUDA
  // context, cuBLAS and three NCCL communicators' buffers, 4.4% fragmentation). With Megatron's
  // default fp32 main_grad it would not: 2 B more per parameter, as many bytes again as the
  // 16-bit gradients (8 layers of 398.5M parameters per TP rank: 6.4 GB), on top of a peak
  // within 4 GB of the capacity.
  const auto& peak = r.report.ranks[r.report.peak_index].memory;
  const int64_t grads = peak.at_peak[static_cast<size_t>(ir::MemoryCategory::gradients)];
  EXPECT_TRUE(r.report.fits);
  EXPECT_GT(r.report.peak_memory + grads, r.report.memory_capacity.count);
}

}  // namespace
}  // namespace cs
