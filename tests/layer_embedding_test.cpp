// models/layers/embedding: the embedding lookup, the LM head, the cross-entropy loss and what it
// keeps, and the mlp family's loss.
#include "layer_ops.h"
#include "models/layers/embedding.h"

namespace cs::model::test {
namespace {

TEST(LayerEmbedding, Gpt2SmallHeadAndLoss) {
  // GPT-2 small, 1024 tokens, one rank. The LM head [768 -> 50257]: 2 x 1024 x 50257 x 768 =
  // 79,047,426,048 FLOPs. The loss reads the 16-bit logits and the fp32 log-softmax's 8 B per
  // logit: 1024 x 50257 x 10 B = 514,631,680 B.
  const ModelSpec m = gpt2_small_layer();
  const WorkShape w = shape(1024);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::lm_head(c, ops, "lm_head", {});
  layers::cross_entropy(c, ops, "loss");
  ASSERT_EQ(names_of(ops.forward), (std::vector<std::string>{"lm_head", "loss"}));
  EXPECT_DOUBLE_EQ(ops.forward[0].op.flops.value, 79047426048.0);
  EXPECT_EQ(ops.forward[1].op.bytes.count, 514631680);
  EXPECT_EQ(ops.forward[1].tp_after.count, 0);  // one rank: no vocab-parallel all-reduces
  // Per logit kept for the gradient: bf16 logits and the fp32 log-softmax (2 + 4), or eager's
  // three fp32 tensors (12).
  EXPECT_EQ(layers::logit_bytes(w, 2), 6);
  WorkShape eager = w;
  eager.eager_loss = true;
  EXPECT_EQ(layers::logit_bytes(eager, 2), 12);
}

TEST(LayerEmbedding, VocabParallelUnderTensorParallelism) {
  // TP 2 with SP: each rank's head is [768 -> 50257 / 2 = 25128] (integer division), and the
  // loss all-reduces three fp32 values per token, 1024 x 4 B = 4,096 B each. The embedding
  // looks up the rank's 512-token shard (SP) and its learned positions: 512 x 768 x 2 B x 3
  // (read row and position, write) = 2,359,296 B, reduce-scattered after.
  const ModelSpec m = gpt2_small_layer();
  const WorkShape w = shape(1024, 2, true);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::embedding(c, ops);
  layers::lm_head(c, ops, "lm_head", {});
  layers::cross_entropy(c, ops, "loss");
  const Op& embed = op_named(ops.forward, "embed");
  EXPECT_EQ(embed.op.bytes.count, 2359296);
  EXPECT_EQ(embed.tp_after.type, ir::CollectiveType::reduce_scatter);
  EXPECT_EQ(op_named(ops.forward, "lm_head").op.n, 25128);
  const Op& loss = op_named(ops.forward, "loss");
  EXPECT_EQ(loss.tp_after.type, ir::CollectiveType::all_reduce);
  EXPECT_EQ(loss.tp_after.count, 3);
  EXPECT_EQ(loss.tp_after.bytes.count, 4096);
  // The embedding's gradient completes the token and position tables.
  EXPECT_EQ(op_named(ops.reversed_backward, "embed.bwd").grads_ready, c.ids({"wte", "wpe"}));
}

TEST(LayerEmbedding, HeadStaysIn16BitsUnderFp8) {
  const ModelSpec m = gpt2_small_layer();
  WorkShape w = shape(1024);
  w.precision = Precision::fp8;
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::lm_head(c, ops, "lm_head", {});
  ASSERT_EQ(ops.forward.size(), 1u);  // no FP8 cast
  EXPECT_EQ(ops.forward[0].op.dtype, ir::DType::bf16);
}

}  // namespace
}  // namespace cs::model::test
