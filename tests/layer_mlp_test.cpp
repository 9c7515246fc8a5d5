// models/layers/mlp: the dense MLP's GEMMs and activation, GELU's unfused chain, and the mlp
// family's ReLU layer.
#include "layer_ops.h"
#include "models/layers/mlp.h"

namespace cs::model::test {
namespace {

TEST(LayerMlp, SwigluIsThreeGemmsOfLlama3_8B) {
  // Llama 3 8B's MLP on 4096 tokens: gate and up fused into fc1 [4096 -> 2 x 14336] and down
  // [14336 -> 4096], three GEMMs of 2 x 4096 x 4096 x 14336 = 481,036,337,152 FLOPs each:
  // fc1 962,072,674,304, fc2 481,036,337,152. The activation reads gate and up and writes their
  // product: 4096 x 14336 x 3 x 2 B = 352,321,536 B; its backward reads two more: 587,202,560.
  const ModelSpec m = llama3_8b_layer();
  const WorkShape w = shape(4096);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::dense_mlp(c, ops, "h.0.", layers::activation_kind(m));
  ASSERT_EQ(names_of(ops.forward), (std::vector<std::string>{"mlp.fc1", "mlp.act", "mlp.fc2"}));
  EXPECT_DOUBLE_EQ(ops.forward[0].op.flops.value, 962072674304.0);
  EXPECT_DOUBLE_EQ(ops.forward[2].op.flops.value, 481036337152.0);
  EXPECT_EQ(ops.forward[1].op.bytes.count, 352321536);
  EXPECT_EQ(op_named(ops.reversed_backward, "mlp.act.bwd").op.bytes.count, 587202560);
  // silu and mul unfused; backward the mul's two products and silu's derivative.
  EXPECT_EQ(ops.forward[1].unfused_kernels, 2);
  EXPECT_EQ(op_named(ops.reversed_backward, "mlp.act.bwd").unfused_kernels, 3);
}

TEST(LayerMlp, Gpt2GeluAsTensorOpsUnderAutocast) {
  // GPT-2's gelu_new unfused is 8 kernels forward and 10 backward, in fp32 under autocast (pow
  // is on its fp32 list), moving 9x and 7x the fused op's element accesses. Its GEMMs:
  // fc1 [768 -> 3072] on 1024 tokens, 2 x 1024 x 3072 x 768 = 4,831,838,208 FLOPs, with biases
  // whose gradients eager sums in kernels of their own.
  const ModelSpec m = gpt2_small_layer();
  WorkShape w = shape(1024);
  w.precision = Precision::amp_fp16;
  w.unfused_chains = true;
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::dense_mlp(c, ops, "h.0.", layers::activation_kind(m));
  const Op& act = op_named(ops.forward, "mlp.act");
  EXPECT_EQ(act.unfused_kernels, 8);
  EXPECT_TRUE(act.unfused_in_fp32);
  EXPECT_DOUBLE_EQ(act.unfused_traffic, 9.0);
  const Op& act_bwd = op_named(ops.reversed_backward, "mlp.act.bwd");
  EXPECT_EQ(act_bwd.unfused_kernels, 10);
  EXPECT_DOUBLE_EQ(act_bwd.unfused_traffic, 7.0);
  EXPECT_DOUBLE_EQ(op_named(ops.forward, "mlp.fc1").op.flops.value, 4831838208.0);
  // fc2's bias gradient sums dy [1024, 768]: 786,432 elements x 2 B = 1,572,864 B.
  EXPECT_EQ(op_named(ops.reversed_backward, "mlp.fc2.bias_grad").op.bytes.count, 1572864);
  // The one-kernel GELU: one kernel each way, no op-by-op traffic.
  ModelSpec one = m;
  one.activation = Activation::gelu;
  EXPECT_EQ(layers::activation_kind(one), layers::ActivationKind::gelu_one_kernel);
}

TEST(LayerMlp, ReluLayerOfTheMlpFamily) {
  // The mlp family's layer on a micro-batch of 32 rows of 256: y = ReLU(x W + b), a GEMM of
  // 2 x 32 x 256 x 256 = 4,194,304 FLOPs, then the ReLU reading and writing 32 x 256 x 2 B x 2 =
  // 32,768 B (backward reads one more: 49,152 B).
  ModelSpec m;
  m.name = "mlp";
  m.family = Family::mlp;
  m.layers = 2;
  m.hidden = 256;
  WorkShape w;
  w.micro_batch = 32;
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::relu_layer(c, ops, 1);
  ASSERT_EQ(names_of(ops.forward), (std::vector<std::string>{"fc1", "fc1.relu"}));
  EXPECT_DOUBLE_EQ(ops.forward[0].op.flops.value, 4194304.0);
  EXPECT_EQ(ops.forward[1].op.bytes.count, 32768);
  EXPECT_EQ(op_named(ops.reversed_backward, "fc1.relu.bwd").op.bytes.count, 49152);
  EXPECT_EQ(op_named(ops.reversed_backward, "fc1.wgrad").grads_ready,
            c.ids({"fc1.weight", "fc1.bias"}));
}

}  // namespace
}  // namespace cs::model::test
