// Context parallelism: ring attention's peer-to-peer bytes and attention FLOPs per rank, and the
// activation memory it divides, against hand derivations.
#include <gtest/gtest.h>

#include "common/error.h"
#include "models/model_work.h"
#include "strategies/layout.h"
#include "strategies/training_step.h"

namespace cs {
namespace {

// A small Llama: 2 layers, h 1024, 8 heads of 128, 2 KV heads, ffn 2816, vocab 32000.
model::ModelSpec small_llama() {
  model::ModelSpec m;
  m.name = "llama-small";
  m.family = model::Family::llama;
  m.layers = 2;
  m.hidden = 1024;
  m.heads = 8;
  m.kv_heads = 2;
  m.ffn_hidden = 2816;
  m.vocab = 32000;
  m.max_seq = 8192;
  return m;
}

strategy::StepGraph step_with_cp(int cp) {
  strategy::Layout l;
  l.cp = cp;
  strategy::TrainingSpec t;
  t.global_batch = 1;
  t.micro_batch = 1;
  t.seq_len = 4096;
  strategy::validate(l, t, small_llama(), cp);
  return strategy::build_training_step(small_llama(), l, t);
}

struct LayerTally {
  int64_t sent = 0, sends = 0;
  double attention_flops_fwd = 0, attention_flops_bwd = 0;
};

LayerTally tally(const strategy::StepGraph& step, ir::RankId rank, int layer) {
  LayerTally t;
  const auto& g = step.graph;
  for (const auto& task : g.tasks()) {
    if (task.rank != rank || task.layer != layer) continue;
    if (task.kind == ir::TaskKind::send) {
      t.sent += g.transfer(task).bytes.count;
      ++t.sends;
    }
    if (task.kind == ir::TaskKind::compute && g.compute(task).op == ir::OpClass::attention) {
      (task.phase == ir::Phase::forward ? t.attention_flops_fwd : t.attention_flops_bwd) +=
          g.compute(task).flops.value;
    }
  }
  return t;
}

TEST(ContextParallel, RingPassesKvChunksAndSplitsCausalAttentionEvenly) {
  // s 4096, b 1, bf16 (2 B), 2 KV heads of 128: one rank's K and V chunk is
  // 2 x (s / cp) x 256 x 2 B. Forward passes it cp - 1 times; backward passes K, V and their
  // gradients cp - 1 times: 3 (cp - 1) chunks per layer and rank.
  // Attention: causal 4 b heads s^2 d / 2 forward (2.5x backward) for the whole sequence; with
  // load balancing every rank does 1/cp of it.
  const double whole_fwd = 4.0 * 8 * 4096.0 * 4096.0 * 128 / 2;
  for (int cp : {2, 4}) {
    const auto step = step_with_cp(cp);
    const int64_t chunk = 2 * (4096 / cp) * 256 * 2;
    for (ir::RankId r = 0; r < static_cast<ir::RankId>(cp); ++r) {
      const LayerTally t = tally(step, r, 0);
      EXPECT_EQ(t.sent, 3 * (cp - 1) * chunk) << "cp " << cp << " rank " << r;
      EXPECT_EQ(t.sends, 2 * (cp - 1)) << "cp " << cp << " rank " << r;
      EXPECT_DOUBLE_EQ(t.attention_flops_fwd, whole_fwd / cp) << "cp " << cp;
      EXPECT_DOUBLE_EQ(t.attention_flops_bwd, 2.5 * whole_fwd / cp) << "cp " << cp;
    }
  }
  // cp = 1: no transfer, the whole causal attention on the one rank.
  const LayerTally one = tally(step_with_cp(1), 0, 0);
  EXPECT_EQ(one.sends, 0);
  EXPECT_DOUBLE_EQ(one.attention_flops_fwd, whole_fwd);
}

TEST(ContextParallel, TwoRanksHalveALayersActivations) {
  // Every saved activation is per token (norm inputs, Q/K/V, the MLP's inner activations, the
  // log-sum-exp per query row), and each CP rank holds s / cp tokens: CP 2 halves the layer.
  model::WorkShape w;
  w.micro_batch = 1;
  w.seq = 4096;
  const int64_t whole = model::activation_bytes_per_layer(small_llama(), w).count;
  w.cp = 2;
  EXPECT_EQ(2 * model::activation_bytes_per_layer(small_llama(), w).count, whole);
  // By hand (s 4096, h 1024, ab 2, kv 256, ffn 2816): norms 4 s h ab, Q + proj input 2 s h ab,
  // K + V 2 s kv ab, SwiGLU 3 s f ab, log-sum-exp 8 heads x s x 4 B.
  const int64_t s = 4096;
  EXPECT_EQ(whole, s * 1024 * 8 + s * 2 * (2 * 1024 + 2 * 256) + s * 2816 * 2 * 3 + 8 * s * 4);
}

TEST(ContextParallel, GradientsAreAveragedOverDataAndContextRanks) {
  // DDP with cp 2, dp 1: the two CP ranks hold the same parameters, so the gradient buckets are
  // all-reduced over both (Megatron's DP x CP group).
  const auto step = step_with_cp(2);
  int grads = 0;
  for (const auto& task : step.graph.tasks()) {
    if (task.kind != ir::TaskKind::collective || task.rank != 0) continue;
    const auto& call = step.graph.collective(task);
    if (call.gradients) {
      ++grads;
      EXPECT_EQ(step.graph.group_ranks(call.group).size(), 2u);
    }
  }
  EXPECT_GT(grads, 0);
}

TEST(ContextParallel, RotaryModelsTrainBeyondTheirContextLearnedPositionsDoNot) {
  // TorchTitan's Table 2 trains Llama 3.1 8B at 262,144 tokens with CP 8, twice the 131,072 its
  // rotary positions were trained to: nothing in the model ends there, so it is simulated.
  strategy::Layout l;
  l.cp = 8;
  strategy::TrainingSpec t;
  t.global_batch = 1;
  t.seq_len = 262144;
  EXPECT_NO_THROW(strategy::validate(l, t, model::find_model_preset("llama3.1-8b"), 8));
  // GPT-2's learned position table has 1,024 rows: 1,025 tokens have no position.
  strategy::Layout one;
  t.seq_len = 1025;
  try {
    strategy::validate(one, t, model::find_model_preset("gpt2-small"), 1);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_STREQ(
        e.what(),
        "seq_len 1025 exceeds gpt2-small's context of 1024 (its learned positions end there)");
  }
}

}  // namespace
}  // namespace cs
