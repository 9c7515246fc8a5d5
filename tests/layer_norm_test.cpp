// models/layers/norm: a norm's bytes and FLOPs, and what it runs as where chains are not fused.
#include "layer_ops.h"
#include "models/layers/norm.h"

namespace cs::model::test {
namespace {

TEST(LayerNorm, RmsNormMovesTwoElementsForwardAndThreeBackward) {
  // Llama's RMSNorm over T x h = 2048 x 4096 = 8,388,608 elements in bf16 (2 B): forward reads x
  // and writes y, 2 x 8,388,608 x 2 = 33,554,432 B at 5 FLOPs per element (41,943,040);
  // backward reads dy and x and writes dx, 50,331,648 B at 8 per element (67,108,864).
  const ModelSpec m = llama3_8b_layer();
  const WorkShape w = shape(2048);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::norm(c, ops, layers::norm_kind(m), "ln_1", c.T_sp * c.h, {3});
  ASSERT_EQ(ops.forward.size(), 1u);
  EXPECT_EQ(ops.forward[0].op.op, ir::OpClass::norm);
  EXPECT_EQ(ops.forward[0].op.bytes.count, 33554432);
  EXPECT_DOUBLE_EQ(ops.forward[0].op.flops.value, 41943040.0);
  const Op& bwd = ops.reversed_backward.at(0);
  EXPECT_EQ(bwd.op.bytes.count, 50331648);
  EXPECT_DOUBLE_EQ(bwd.op.flops.value, 67108864.0);
  EXPECT_EQ(bwd.grads_ready, std::vector<int>{3});
  // Llama's reference RMSNorm written as tensor ops: 8 kernels forward, 10 backward unfused.
  EXPECT_EQ(ops.forward[0].unfused_kernels, 8);
  EXPECT_EQ(bwd.unfused_kernels, 10);
  EXPECT_FALSE(ops.forward[0].unfused_in_fp32);
}

TEST(LayerNorm, EagerLayerNormRunsInFp32UnderAutocastOnly) {
  // GPT-2's LayerNorm is one native kernel forward and two backward; layer_norm is on autocast's
  // fp32 list, so under amp its kernels move 4-byte elements, under mixed precision they do not.
  const ModelSpec m = gpt2_small_layer();
  ASSERT_EQ(layers::norm_kind(m), layers::NormKind::layer_norm);
  for (const auto& [precision, fp32] :
       {std::pair{Precision::amp_fp16, true}, std::pair{Precision::mixed_bf16, false}}) {
    WorkShape w = shape(1024);
    w.precision = precision;
    const layers::LayerContext c(m, w, parameter_list(m));
    layers::BlockOps ops;
    layers::norm(c, ops, layers::NormKind::layer_norm, "ln_f", c.T * c.h, {});
    EXPECT_EQ(ops.forward[0].unfused_kernels, 1);
    EXPECT_EQ(ops.reversed_backward[0].unfused_kernels, 2);
    EXPECT_EQ(ops.forward[0].unfused_in_fp32, fp32) << to_string(precision);
    // 1024 x 768 elements x 2 (read, write) x 2 B (fp16 and bf16 alike) = 3,145,728 B.
    EXPECT_EQ(ops.forward[0].op.bytes.count, 3145728);
  }
}

}  // namespace
}  // namespace cs::model::test
