// models/layers/transformer_layer and multi_token_prediction: which submodules a model's layers
// have, the layer composed from them, what checkpointing re-runs, and DeepSeek's MTP module.
#include "layer_ops.h"
#include "models/layers/multi_token_prediction.h"
#include "models/layers/transformer_layer.h"

namespace cs::model::test {
namespace {

TEST(LayerSpec, EachFamilysSubmodules) {
  const layers::LayerSpec gpt = layers::layer_spec(gpt2_small_layer(), 0);
  EXPECT_EQ(gpt.norm, layers::NormKind::layer_norm);
  EXPECT_EQ(gpt.attention, layers::AttentionKind::self_attention);
  EXPECT_FALSE(gpt.rotary);
  EXPECT_EQ(gpt.activation, layers::ActivationKind::gelu_tensor_ops);
  EXPECT_TRUE(gpt.dropout);
  const layers::LayerSpec llama = layers::layer_spec(llama3_8b_layer(), 0);
  EXPECT_EQ(llama.norm, layers::NormKind::rms_norm);
  EXPECT_TRUE(llama.rotary);
  EXPECT_EQ(llama.mlp, layers::MlpKind::dense);
  EXPECT_EQ(llama.activation, layers::ActivationKind::swiglu);
  EXPECT_FALSE(llama.dropout);
  // DeepSeek-V3: MLA everywhere, the first three layers dense, the rest MoE.
  const ModelSpec& ds = find_model_preset("deepseek-v3");
  EXPECT_EQ(layers::layer_spec(ds, 0).attention, layers::AttentionKind::mla);
  EXPECT_EQ(layers::layer_spec(ds, 2).mlp, layers::MlpKind::dense);
  EXPECT_EQ(layers::layer_spec(ds, 3).mlp, layers::MlpKind::moe);
}

TEST(LayerSpec, Gpt2LayerInOrder) {
  // GPT-2 small, 1024 tokens: ln_1, attention, dropout + residual, ln_2, MLP, dropout + residual.
  // Each residual add reads the branch and the residual and writes the sum (3 x 2 B) plus the
  // 1-byte dropout mask per element: 1024 x 768 x 7 = 5,505,024 B.
  const ModelSpec m = gpt2_small_layer();
  const WorkShape w = shape(1024);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::transformer_layer(c, ops, layers::layer_spec(m, 0), "h.0.");
  EXPECT_EQ(
      names_of(ops.forward),
      (std::vector<std::string>{"ln_1", "attn.qkv", "attn.core", "attn.proj", "attn.dropout_add",
                                "ln_2", "mlp.fc1", "mlp.act", "mlp.fc2", "mlp.dropout_add"}));
  EXPECT_EQ(op_named(ops.forward, "attn.dropout_add").op.bytes.count, 5505024);
  // Dropout and the add unfused: two kernels each way.
  EXPECT_EQ(op_named(ops.forward, "mlp.dropout_add").unfused_kernels, 2);
  // Backward runs in reverse: the last residual's gradient first, ln_1's last.
  const std::vector<Op> bwd = std::move(ops).backward_in_execution_order();
  EXPECT_EQ(bwd.front().name, "mlp.dropout_add.bwd");
  EXPECT_EQ(bwd.back().name, "ln_1.bwd");
}

TEST(LayerSpec, WhatCheckpointingReruns) {
  const ModelSpec m = llama3_8b_layer();
  const WorkShape w = shape(4096);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::transformer_layer(c, ops, layers::layer_spec(m, 0), "h.0.");
  // Selective (Megatron): the attention core alone.
  EXPECT_EQ(names_of(layers::recomputed_ops(Recompute::selective, ops.forward)),
            std::vector<std::string>{"attn.core"});
  // Op-selective (TorchTitan): of the four GEMMs qkv, proj, fc1, fc2 the second and fourth, and
  // every op but the GEMMs and the flash kernel.
  EXPECT_EQ(names_of(layers::recomputed_ops(Recompute::op_selective, ops.forward)),
            (std::vector<std::string>{"ln_1", "attn.rope", "attn.proj", "attn.dropout_add", "ln_2",
                                      "mlp.act", "mlp.fc2", "mlp.dropout_add"}));
  EXPECT_EQ(layers::recomputed_ops(Recompute::full, ops.forward).size(), ops.forward.size());
  EXPECT_TRUE(layers::recomputed_ops(Recompute::none, ops.forward).empty());
}

TEST(LayerSpec, WhatOpSelectiveRerunsOfFloat8Gemms) {
  // Llama 3 8B's layer under torchao Float8 (precision fp8): its four linear GEMMs run as
  // torch._scaled_mm. TorchTitan's per-op policy before 2026-03-23 saved aten.mm only, so all
  // four are re-run in backward; since then its list is PyTorch's compute-intensive ops, which
  // hold _scaled_mm, so none is. The non-GEMM ops (casts included) are re-run either way.
  const ModelSpec m = llama3_8b_layer();
  WorkShape w = shape(4096);
  w.precision = Precision::fp8;
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::transformer_layer(c, ops, layers::layer_spec(m, 0), "h.0.");
  auto gemms = [](const std::vector<Op>& rerun) {
    std::vector<std::string> out;
    for (const Op& op : rerun)
      if (op.op.op == ir::OpClass::gemm) out.push_back(op.name);
    return out;
  };
  const auto old_policy =
      layers::recomputed_ops(Recompute::op_selective, ops.forward, ScaledMmSaving::recomputed);
  EXPECT_EQ(gemms(old_policy),
            (std::vector<std::string>{"attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2"}));
  const auto new_policy =
      layers::recomputed_ops(Recompute::op_selective, ops.forward, ScaledMmSaving::saved);
  EXPECT_TRUE(gemms(new_policy).empty());
  // Both re-run the same non-GEMM ops: the old policy re-runs 4 ops more.
  EXPECT_EQ(old_policy.size(), new_policy.size() + 4);
  // What the layer keeps follows: the old policy drops the GEMM outputs the 16-bit policy keeps
  // (Q/K/V [4096, 4096 + 2 x 1024] and fc1's gate and up [4096, 2 x 14336], 2 B each:
  // 4096 x 34816 x 2 = 285,212,672 B); the new one keeps the other two as well (proj and fc2
  // outputs, [4096, 4096] each: 67,108,864 B more).
  WorkShape bf16 = shape(4096);
  bf16.recompute = Recompute::op_selective;
  WorkShape before = w, after = w;
  before.recompute = after.recompute = Recompute::op_selective;
  before.scaled_mm = ScaledMmSaving::recomputed;
  const int64_t kept16 = activation_bytes_of_layer(m, bf16, 0).count;
  EXPECT_EQ(kept16 - activation_bytes_of_layer(m, before, 0).count, 285'212'672);
  EXPECT_EQ(activation_bytes_of_layer(m, after, 0).count - kept16, 67'108'864);
}

TEST(LayerSpec, Float8TensorParallelismGathersTheFp8Cast) {
  // TorchTitan's Float8 tensor parallelism (tensorwise; torchao's Float8ColwiseParallel): a
  // column-parallel layer's input is cast to FP8 before its sequence-parallel all-gather. Llama 3
  // 8B's layer, 4096 tokens, TP 8 with SP: the gathered input [4096, 4096] is 16,777,216 elements,
  // 16,777,216 B in FP8 against 33,554,432 B in bf16; the row-parallel output gradient's gather
  // stays 33,554,432 B.
  const ModelSpec m = llama3_8b_layer();
  WorkShape w = shape(4096);
  w.tp = 8;
  w.sequence_parallel = true;
  w.precision = Precision::fp8;
  w.pytorch_autograd = true;  // a PyTorch stack: torchao's Float8 linears
  const layers::LayerContext torch(m, w, parameter_list(m));
  EXPECT_EQ(torch.tp.gather_if_sp().bytes.count, 16'777'216);
  EXPECT_EQ(torch.tp.gradient_gather_if_sp().bytes.count, 33'554'432);
  // Transformer Engine's stack (no PyTorch autograd flag) and torchao's rowwise recipe (no Float8
  // tensor parallelism) gather bf16.
  w.pytorch_autograd = false;
  EXPECT_EQ(layers::LayerContext(m, w, parameter_list(m)).tp.gather_if_sp().bytes.count,
            33'554'432);
  w.pytorch_autograd = true;
  w.precision = Precision::fp8_rowwise;
  EXPECT_EQ(layers::LayerContext(m, w, parameter_list(m)).tp.gather_if_sp().bytes.count,
            33'554'432);
}

TEST(LayerSpec, MultiTokenPredictionModule) {
  // An MTP module on a small Llama-like model (hidden 256, 4 heads of 64, SwiGLU 512), 128
  // tokens, bf16. eh_proj [512 -> 256]: 2 x 128 x 256 x 512 = 33,554,432 FLOPs. It saves its
  // decoder layer's activations and eh_proj's input:
  //   norm, qkv and fc1 inputs and the residual's: 4 x 128 x 256 x 2 B = 262,144;
  //   Q, K, V and the projection input: 128 x 2 B x (2 x 256 + 2 x 256) = 262,144;
  //   SwiGLU's gate, up and product: 128 x 512 x 2 B x 3 = 393,216;
  //   the fused core's fp32 log-sum-exp per head and token: 4 x 128 x 4 = 2,048;
  //   eh_proj's input [128, 512] x 2 B = 131,072: 1,050,624 B in all.
  ModelSpec m = llama3_8b_layer();
  m.hidden = 256;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 512;
  m.vocab = 1000;
  m.mtp_depth = 1;
  const WorkShape w = shape(128);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  EXPECT_EQ(layers::multi_token_prediction(c, ops, 0).count, 1050624);
  EXPECT_DOUBLE_EQ(op_named(ops.forward, "mtp.eh_proj").op.flops.value, 33554432.0);
  EXPECT_EQ(names_of(ops.forward).front(), "mtp.enorm");
  EXPECT_EQ(names_of(ops.forward).back(), "mtp.loss");
  // The shared head's gradient is the main head's to mark ready.
  EXPECT_TRUE(op_named(ops.reversed_backward, "mtp.lm_head.wgrad").grads_ready.empty());
  EXPECT_EQ(op_named(ops.reversed_backward, "mtp.eh_proj.wgrad").grads_ready,
            c.ids({"mtp.0.eh_proj.weight"}));
}

}  // namespace
}  // namespace cs::model::test
