// models/layers/attention and attention_core: the projections' GEMMs for grouped-query and latent
// attention, and the core as one fused kernel, context parallelism's rings and eager's matmuls.
#include "layer_ops.h"
#include "models/layers/attention.h"
#include "models/layers/attention_core.h"

namespace cs::model::test {
namespace {

TEST(LayerAttention, GroupedQueryProjectionsOfLlama3_8B) {
  // Llama 3 8B, 4096 tokens, one rank: q is 32 x 128 = 4096 wide, k and v 8 x 128 = 1024 each, so
  // the fused qkv projection is [4096 -> 6144]: 2 x 4096 x 6144 x 4096 = 206,158,430,208 FLOPs;
  // o_proj [4096 -> 4096]: 2 x 4096^3 = 137,438,953,472. Rotary positions read and write q and
  // k, 4096 x (4096 + 1024) = 20,971,520 elements, 2 x 2 B each: 83,886,080 B.
  const ModelSpec m = llama3_8b_layer();
  const WorkShape w = shape(4096);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::self_attention(c, ops, "h.0.", /*rotary=*/true);
  EXPECT_EQ(names_of(ops.forward),
            (std::vector<std::string>{"attn.qkv", "attn.rope", "attn.core", "attn.proj"}));
  EXPECT_DOUBLE_EQ(op_named(ops.forward, "attn.qkv").op.flops.value, 206158430208.0);
  EXPECT_EQ(op_named(ops.forward, "attn.qkv").op.n, 6144);
  EXPECT_DOUBLE_EQ(op_named(ops.forward, "attn.proj").op.flops.value, 137438953472.0);
  EXPECT_EQ(op_named(ops.forward, "attn.rope").op.bytes.count, 83886080);
  // The wgrads complete the model's own q/k/v and o_proj weights.
  EXPECT_EQ(op_named(ops.reversed_backward, "attn.qkv.wgrad").grads_ready,
            c.ids({"h.0.attn.qkv.weight"}));

  // Under TP 2 each rank holds half the heads: 16 q heads and 4 KV heads, [4096 -> 3072].
  const WorkShape w2 = shape(4096, 2);
  const layers::LayerContext c2(m, w2, parameter_list(m));
  layers::BlockOps half;
  layers::self_attention(c2, half, "h.0.", true);
  EXPECT_DOUBLE_EQ(op_named(half.forward, "attn.qkv").op.flops.value, 103079215104.0);
}

TEST(LayerAttention, FusedCoreIsHalfTheCausalScoresWork) {
  // 4 b a s^2 d / 2 for the causal mask: 4 x 1 x 32 x 4096^2 x 128 / 2 = 137,438,953,472 FLOPs;
  // the backward's five matmuls against two: 2.5x, 343,597,383,680.
  const ModelSpec m = llama3_8b_layer();
  const WorkShape w = shape(4096);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::attention_core(c, ops, m.head_dim(), 2 * m.kv_hidden());
  ASSERT_EQ(ops.forward.size(), 1u);
  EXPECT_TRUE(ops.forward[0].op.causal);
  EXPECT_DOUBLE_EQ(ops.forward[0].op.flops.value, 137438953472.0);
  EXPECT_DOUBLE_EQ(ops.reversed_backward.at(0).op.flops.value, 343597383680.0);
}

TEST(LayerAttention, PeerToPeerRingPassesKvChunks) {
  // Context parallelism 2 over 8192 tokens: each rank holds s = 4096 and runs 2 steps, each the
  // causal kernel at 4096. Step 0 passes its K, V chunk on while it computes: 4096 tokens x
  // (1024 + 1024) elements x 2 B = 16,777,216 B; step 1 waits for it and passes nothing.
  // Backward passes K, V and their gradients: twice that.
  const ModelSpec m = llama3_8b_layer();
  WorkShape w = shape(8192);
  w.cp = 2;
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::attention_core(c, ops, m.head_dim(), 2 * m.kv_hidden());
  ASSERT_EQ(names_of(ops.forward), (std::vector<std::string>{"attn.core.cp0", "attn.core.cp1"}));
  EXPECT_EQ(ops.forward[0].ring.passes.count, 16777216);
  EXPECT_FALSE(ops.forward[0].ring.waits);
  EXPECT_EQ(ops.forward[1].ring.passes.count, 0);
  EXPECT_TRUE(ops.forward[1].ring.waits);
  EXPECT_DOUBLE_EQ(ops.forward[0].op.flops.value, 137438953472.0);
  const std::vector<Op> bwd = std::move(ops).backward_in_execution_order();
  ASSERT_EQ(names_of(bwd), (std::vector<std::string>{"attn.core.cp0.bwd", "attn.core.cp1.bwd"}));
  EXPECT_EQ(bwd[0].ring.passes.count, 33554432);
}

TEST(LayerAttention, TorchRingGathersKvAtQueryWidth) {
  // PyTorch's ring all-gathers K and V repeated to the 32 query heads: E = 32 x 4096 x 128 =
  // 16,777,216 elements per tensor on each of cp = 2 ranks, so the gathered output is
  // 2 x 2E x 2 B = 134,217,728 B, issued by step 0's kernel and waited for by step 1's.
  const ModelSpec m = llama3_8b_layer();
  WorkShape w = shape(8192);
  w.cp = 2;
  w.cp_ring = CpRing::torch;
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::attention_core(c, ops, m.head_dim(), 2 * m.kv_hidden());
  EXPECT_EQ(names_of(ops.forward),
            (std::vector<std::string>{"attn.core.cp.pack", "attn.core.cp0", "attn.core.cp0.merge",
                                      "attn.core.cp1", "attn.core.cp1.merge"}));
  EXPECT_EQ(op_named(ops.forward, "attn.core.cp0").ring.gathers.count, 134217728);
  EXPECT_TRUE(op_named(ops.forward, "attn.core.cp1").ring.waits);
  // The pack reads and writes K and V: 4E x 2 B = 134,217,728 B.
  EXPECT_EQ(op_named(ops.forward, "attn.core.cp.pack").op.bytes.count, 134217728);
}

TEST(LayerAttention, EagerCoreIsTwoBatchedMatmulsAndASoftmax) {
  // GPT-2 small eager at 1024 tokens: QK^T is 12 batched [1024 x 64] x [64 x 1024] GEMMs,
  // 2 x 12 x 1024^2 x 64 = 1,610,612,736 FLOPs; the softmax (with dropout) reads and writes
  // 8 x 2 B + a 1-byte mask per score: 12 x 1024^2 x 17 = 213,909,504 B.
  const ModelSpec m = gpt2_small_layer();
  WorkShape w = shape(1024);
  w.attention = AttentionImpl::eager;
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::attention_core(c, ops, m.head_dim(), 2 * m.kv_hidden());
  ASSERT_EQ(names_of(ops.forward),
            (std::vector<std::string>{"attn.scores", "attn.softmax", "attn.av"}));
  EXPECT_DOUBLE_EQ(ops.forward[0].op.flops.value, 1610612736.0);
  EXPECT_EQ(ops.forward[1].op.bytes.count, 213909504);
  EXPECT_EQ(ops.reversed_backward.size(), 5u);  // four GEMMs and the softmax's gradient
}

TEST(LayerAttention, LatentAttentionOfDeepSeekV3) {
  // DeepSeek-V3's MLA (config.json: hidden 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512,
  // qk_nope 128, qk_rope 64, v 128), 1024 tokens on one rank:
  //   q_a [7168 -> 1536]: 2 x 1024 x 1536 x 7168 = 22,548,578,304 FLOPs;
  //   kv_b [512 -> 128 x (128 + 128) = 32768]: 2 x 1024 x 32768 x 512 = 34,359,738,368;
  //   the core at the mean head size (192 + 128) / 2 = 160: 4 x 128 x 1024^2 x 160 / 2 =
  //   42,949,672,960.
  ModelSpec m = llama3_8b_layer();
  m.hidden = 7168;
  m.heads = 128;
  m.kv_heads = 128;
  m.mla = {1536, 512, 128, 64, 128};
  const WorkShape w = shape(1024);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::mla_attention(c, ops, "h.0.");
  EXPECT_EQ(names_of(ops.forward),
            (std::vector<std::string>{"attn.q_a", "attn.q_a_norm", "attn.q_b", "attn.kv_a",
                                      "attn.kv_a_norm", "attn.kv_b", "attn.core", "attn.proj"}));
  EXPECT_DOUBLE_EQ(op_named(ops.forward, "attn.q_a").op.flops.value, 22548578304.0);
  EXPECT_DOUBLE_EQ(op_named(ops.forward, "attn.kv_b").op.flops.value, 34359738368.0);
  EXPECT_DOUBLE_EQ(op_named(ops.forward, "attn.core").op.flops.value, 42949672960.0);
}

}  // namespace
}  // namespace cs::model::test
