// The model families of 2025-2026 (issue 32): sliding-window attention and sinks (gpt-oss,
// Gemma 3, Phi-3, Mistral), gpt-oss's MoE, Gemma 3's norms and GeGLU, Phi-3/Phi-4, and
// Nemotron-H's hybrid Mamba-2 stack, read from the config.json files under tests/data/hf/
// (README.md there: sources, licences and the published counts). Every expected value is
// derived by hand in its comment.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "interop/hf_config.h"
#include "layer_ops.h"
#include "models/layers/attention_core.h"
#include "models/layers/mamba.h"
#include "models/layers/transformer_layer.h"
#include "test_paths.h"

namespace cs::model::test {
namespace {

ModelSpec imported(const std::string& name) {
  return interop::load_hf_config(cs::test_paths::source_dir() + "/tests/data/hf/" + name).spec;
}

std::string refusal_of(const std::string& name) {
  try {
    imported(name);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// Decoder layer `layer`'s forward ops on one rank.
std::vector<Op> layer_forward(const ModelSpec& m, const WorkShape& w, int layer) {
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::transformer_layer(c, ops, layers::layer_spec(m, layer),
                            "h." + std::to_string(layer) + ".");
  return ops.forward;
}

TEST(ModelFamilies, GptOss20bParameterCounts) {
  // Per layer: qkv [2880 -> 64 x 64 + 2 x 8 x 64 = 5120] 14,745,600 + bias 5,120; 64 sinks;
  // o_proj 4096 x 2880 = 11,796,480 + bias 2,880: attention 26,550,144. Router 32 x 2880 + 32
  // biases = 92,192; an expert's gate_up 2880 x 5760 = 16,588,800 + 5,760 and down 2880 x 2880 =
  // 8,294,400 + 2,880: 24,891,840, x 32 = 796,538,880; two norms 5,760: 823,186,976 a layer,
  // x 24 = 19,756,487,424. Embedding and LM head 201,088 x 2,880 = 579,133,440 each, final norm
  // 2,880: 20,914,757,184 (the model card's 20.91B). Active: 4 of 32 experts (99,567,360 of
  // 796,538,880 a layer), without the input embedding: 24 x 126,215,456 + 579,133,440 + 2,880 =
  // 3,608,307,264 (3.61B).
  const ModelSpec m = imported("gpt-oss-20b.json");
  EXPECT_EQ(parameter_count(m), 20914757184);
  EXPECT_EQ(active_parameter_count(m), 3608307264);
  // layer_types alternates sliding and full, starting sliding: every second layer full.
  EXPECT_EQ(m.attention_window(0), 128);
  EXPECT_EQ(m.attention_window(1), 0);
  EXPECT_EQ(m.attention_window(22), 128);
  EXPECT_EQ(m.attention_window(23), 0);
}

TEST(ModelFamilies, GptOss120bParameterCounts) {
  // 36 layers of 128 experts: router 128 x 2880 + 128 = 368,768, experts 128 x 24,891,840 =
  // 3,186,155,520, attention and norms as the 20b's (26,550,144 + 5,760): 3,213,080,192 a layer,
  // x 36 = 115,670,886,912, + 1,158,266,880 + 2,880 = 116,829,156,672 (116.83B). Active: 36 x
  // (26,550,144 + 368,768 + 99,567,360 + 5,760) + 579,133,440 + 2,880 = 5,132,849,472 (5.13B).
  const ModelSpec m = imported("gpt-oss-120b.json");
  EXPECT_EQ(parameter_count(m), 116829156672);
  EXPECT_EQ(active_parameter_count(m), 5132849472);
}

TEST(ModelFamilies, GptOssPresetsAreTheirConfigs) {
  // The presets carry what `import hf` reads from openai/gpt-oss-120b and -20b's config.json.
  for (const char* name : {"gpt-oss-120b", "gpt-oss-20b"}) {
    const ModelSpec preset = model::find_model_preset(name);
    const ModelSpec m = imported(std::string(name) + ".json");
    EXPECT_EQ(parameter_count(preset), parameter_count(m)) << name;
    EXPECT_EQ(active_parameter_count(preset), active_parameter_count(m)) << name;
    EXPECT_EQ(preset.layers, m.layers);
    EXPECT_EQ(preset.head_dim(), m.head_dim());
    EXPECT_EQ(preset.max_seq, m.max_seq);
    EXPECT_EQ(preset.ffn_activation, m.ffn_activation);
    EXPECT_EQ(preset.attention_sinks, m.attention_sinks);
    EXPECT_EQ(preset.active_count, m.active_count);
    for (int l : {0, 1, 22, 23}) EXPECT_EQ(preset.attention_window(l), m.attention_window(l));
  }
  EXPECT_EQ(parameter_count(model::find_model_preset("gpt-oss-120b")), 116829156672);
}

TEST(ModelFamilies, Phi4AndPhi3MiniParameterCounts) {
  // Phi-4: qkv_proj [5120 -> 5120 + 2 x 1280] 39,321,600 + o_proj 26,214,400; gate_up_proj and
  // down_proj 3 x 5120 x 17920 = 275,251,200; norms 10,240: 340,797,440 a layer, x 40 =
  // 13,631,897,600; embedding and head 2 x 100,352 x 5,120 = 1,027,604,480; final norm 5,120:
  // 14,659,507,200 (14.7B). No window (sliding_window null).
  const ModelSpec phi4 = imported("phi-4.json");
  EXPECT_EQ(parameter_count(phi4), 14659507200);
  EXPECT_FALSE(phi4.window.enabled());
  // Phi-3 mini: 4 x 3072^2 = 37,748,736 + 3 x 3072 x 8192 = 75,497,472 + 6,144 = 113,252,352 a
  // layer, x 32 = 3,624,075,264, + 2 x 32,064 x 3,072 = 197,001,216 + 3,072: 3,821,079,552
  // (3.8B); every layer windowed at 2047.
  const ModelSpec phi3 = imported("phi-3-mini-4k.json");
  EXPECT_EQ(parameter_count(phi3), 3821079552);
  EXPECT_EQ(phi3.attention_window(0), 2047);
  EXPECT_EQ(phi3.attention_window(31), 2047);
}

TEST(ModelFamilies, Gemma3_1bParameterCountAndLayers) {
  // q [1152 -> 4 x 256] 1,179,648, k and v [1152 -> 256] 589,824, o 1,179,648, q/k norms 512:
  // 2,949,632; GeGLU 3 x 1152 x 6912 = 23,887,872; four norms 4,608: 26,842,112 a layer, x 26 =
  // 697,894,912 (the report's 698M non-embedding, with the final norm's 1,152); tied embedding
  // 262,144 x 1,152 = 301,989,888 (302M): 999,885,952.
  const ModelSpec m = imported("gemma-3-1b.json");
  EXPECT_EQ(parameter_count(m), 999885952);
  // Five windowed layers (512) to one full: layers 5, 11, ... attend their whole prefix.
  EXPECT_EQ(m.attention_window(4), 512);
  EXPECT_EQ(m.attention_window(5), 0);
  EXPECT_EQ(m.attention_window(6), 512);
  // Its layers normalise each submodule's output too, and each head's q and k (Gemma3Attention's
  // q_norm and k_norm).
  const std::vector<Op> fwd = layer_forward(m, shape(1024), 0);
  EXPECT_EQ(names_of(fwd), (std::vector<std::string>{
                               "ln_1", "attn.qkv", "attn.q_norm", "attn.k_norm", "attn.rope",
                               "attn.core", "attn.proj", "ln_attn_out", "attn.dropout_add", "ln_2",
                               "mlp.fc1", "mlp.act", "mlp.fc2", "ln_mlp_out", "mlp.dropout_add"}));
}

TEST(ModelFamilies, NemotronH8bParameterCount) {
  // The pattern has 24 M, 4 * and 24 - layers. A Mamba layer: in_proj [4096 -> 2 x 8192 + 2 x 8
  // x 128 + 128 = 18560] 76,021,760; conv1d over 10,240 channels, 4 taps, with bias 51,200;
  // dt_bias, A_log, D 3 x 128; the gated norm 8,192; out_proj 8192 x 4096 = 33,554,432; its norm
  // 4,096: 109,640,064. An attention layer: qkv [4096 -> 4096 + 2 x 1024] 25,165,824 + o
  // 16,777,216 + 4,096 = 41,947,136. An MLP layer (squared ReLU, not gated): 2 x 4096 x 21504 +
  // 4,096 = 176,164,864. 24 x 109,640,064 + 4 x 41,947,136 + 24 x 176,164,864 = 7,027,106,816,
  // + embedding and head 2 x 131,072 x 4,096 = 1,073,741,824 + 4,096: 8,100,852,736 (8B).
  const ModelSpec m = imported("nemotron-h-8b-base-8k.json");
  EXPECT_EQ(parameter_count(m), 8100852736);
  EXPECT_EQ(m.hybrid_layer(0), 'M');
  EXPECT_EQ(m.hybrid_layer(7), '*');
  EXPECT_EQ(m.hybrid_layer(1), '-');
}

TEST(ModelFamilies, MistralWindowsEveryLayerAndQwenOnlyWhenAsked) {
  // Mistral 7B v0.1's config.json: sliding_window 4096 on every layer (MistralAttention).
  const std::string mistral = R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
    "sliding_window": 4096})";
  const interop::HfModel m = interop::parse_hf_config(mistral, "mistral.json");
  EXPECT_EQ(m.spec.attention_window(0), 4096);
  EXPECT_EQ(m.spec.attention_window(31), 4096);
  // The scenario's dimension keys cannot say so: a note sends the reader to hf_config.
  ASSERT_FALSE(m.notes.empty());
  EXPECT_NE(m.notes.back().find("leave out sliding windows"), std::string::npos);
  // Qwen2.5 windows only with use_sliding_window (false in its config): none.
  EXPECT_FALSE(imported("qwen2.5-7b.json").window.enabled());
}

TEST(ModelFamilies, SlidingWindowAttentionFlopsBeyondTheWindow) {
  // gpt-oss-20b's layer 0 (window 128) at 4096 tokens, one sequence, 64 heads of 64: query i
  // attends min(i + 1, 128) keys. Counted as the full kernel's s^2 / 2 is, s W - W^2 / 2 =
  // 524,288 - 8,192 = 516,096 pairs (the exact sum, s W - W (W - 1) / 2 = 516,160, differs only
  // by the diagonal's half the full count leaves out too), 4 x 64 x 64 FLOPs each: 8,455,716,864
  // forward, 2.5x backward: 21,139,292,160; 126 keys per query on average. Layer 1 is full:
  // 4 x 64 x 4096^2 x 64 / 2 = 137,438,953,472.
  const ModelSpec m = imported("gpt-oss-20b.json");
  const WorkShape w = shape(4096);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps windowed, full;
  layers::transformer_layer(c, windowed, layers::layer_spec(m, 0), "h.0.");
  layers::transformer_layer(c, full, layers::layer_spec(m, 1), "h.1.");
  const Op& core = op_named(windowed.forward, "attn.core");
  EXPECT_DOUBLE_EQ(core.op.flops.value, 8455716864.0);
  EXPECT_EQ(core.op.n, 126);
  EXPECT_FALSE(core.op.causal);  // priced as an unmasked 4096 x 126 kernel of the same FLOPs
  EXPECT_DOUBLE_EQ(op_named(windowed.reversed_backward, "attn.core.bwd").op.flops.value,
                   21139292160.0);
  EXPECT_DOUBLE_EQ(op_named(full.forward, "attn.core").op.flops.value, 137438953472.0);
  // The grouped experts' weight gradients complete the 32 experts' weights and biases; the
  // router's, its weight and bias.
  EXPECT_EQ(op_named(windowed.reversed_backward, "mlp.experts.fc1.wgrad").grads_ready.size(), 64u);
  EXPECT_EQ(op_named(windowed.reversed_backward, "mlp.experts.fc2.wgrad").grads_ready.size(), 64u);
  EXPECT_EQ(op_named(windowed.reversed_backward, "mlp.router.wgrad").grads_ready,
            c.ids({"h.0.mlp.router.weight", "h.0.mlp.router.bias"}));
  // The sinks' gradient is complete after the core's backward.
  EXPECT_EQ(op_named(windowed.reversed_backward, "attn.core.bwd").grads_ready,
            c.ids({"h.0.attn.sinks"}));
  // At or below the window the layer is the full causal kernel: 4 x 64 x 128^2 x 64 / 2.
  const WorkShape short_w = shape(128);
  const layers::LayerContext short_c(m, short_w, parameter_list(m));
  layers::BlockOps short_ops;
  layers::transformer_layer(short_c, short_ops, layers::layer_spec(m, 0), "h.0.");
  EXPECT_TRUE(op_named(short_ops.forward, "attn.core").op.causal);
  EXPECT_DOUBLE_EQ(op_named(short_ops.forward, "attn.core").op.flops.value, 134217728.0);
}

TEST(ModelFamilies, HuggingFaceSdpaMasksAWindowThatReachesTheSequence) {
  // Mistral 7B v0.1 (window 4096) under PyTorch autograd (Hugging Face's SDPA path): at 4,096
  // tokens the keys are not fewer than the window, so transformers passes a boolean mask and the
  // kernel computes the whole square: 4 x 32 x 4096^2 x 128 = 274,877,906,944 FLOPs forward,
  // not causal, masked. At 2,048 tokens it is the causal kernel:
  // 4 x 32 x 2048^2 x 128 / 2 = 34,359,738,368. Without PyTorch autograd (Megatron-Core's
  // kernels) a window equal to the sequence is the causal kernel too: 137,438,953,472.
  const interop::HfModel m = interop::parse_hf_config(
      R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
    "sliding_window": 4096})",
      "mistral.json");
  auto core_at = [&](int64_t seq, bool pytorch_autograd) {
    WorkShape w = shape(seq);
    w.pytorch_autograd = pytorch_autograd;
    return op_named(layer_forward(m.spec, w, 0), "attn.core").op;
  };
  const ir::ComputeOp masked = core_at(4096, true);
  EXPECT_TRUE(masked.explicit_mask);
  EXPECT_FALSE(masked.causal);
  EXPECT_DOUBLE_EQ(masked.flops.value, 274877906944.0);
  const ir::ComputeOp shorter = core_at(2048, true);
  EXPECT_FALSE(shorter.explicit_mask);
  EXPECT_DOUBLE_EQ(shorter.flops.value, 34359738368.0);
  const ir::ComputeOp megatron = core_at(4096, false);
  EXPECT_FALSE(megatron.explicit_mask);
  EXPECT_DOUBLE_EQ(megatron.flops.value, 137438953472.0);
}

TEST(ModelFamilies, NemotronHMambaLayerFlops) {
  // Layer 0 (Mamba) on one sequence of 8192 tokens, one rank: 64 chunks of 128; 8 groups,
  // 128 heads of P = 64, state N = 128.
  //   in_proj: 2 x 8192 x 18560 x 4096 = 1,245,540,515,840
  //   SSD 1, C B^T: 2 x 128 x 128 x 128 x (64 x 8) = 2,147,483,648
  //   SSD 1, scores x X: 2 x 128 x 64 x 128 x (64 x 128) = 17,179,869,184
  //   SSD 2, chunk states B^T X: 2 x 128 x 64 x 128 x 8192 = 17,179,869,184
  //   SSD 4, C x state: 2 x 128 x 64 x 128 x 8192 = 17,179,869,184
  //   out_proj: 2 x 8192 x 4096 x 8192 = 549,755,813,888
  // The scan's GEMMs: 2 s (G Q N + H (Q P + 2 N P)) = 16384 x 3,276,800 = 53,687,091,200; the
  // layer's: 1,848,983,420,928. Backward: 2x each.
  const ModelSpec m = imported("nemotron-h-8b-base-8k.json");
  const std::vector<Op> fwd = layer_forward(m, shape(8192), 0);
  EXPECT_EQ(names_of(fwd),
            (std::vector<std::string>{"ln_1", "mamba.in_proj", "mamba.conv1d", "mamba.ssd.cb",
                                      "mamba.ssd.diag", "mamba.ssd.states", "mamba.ssd.pass",
                                      "mamba.ssd.off", "mamba.norm", "mamba.out_proj",
                                      "mixer.dropout_add"}));
  EXPECT_DOUBLE_EQ(op_named(fwd, "mamba.in_proj").op.flops.value, 1245540515840.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "mamba.ssd.cb").op.flops.value, 2147483648.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "mamba.ssd.diag").op.flops.value, 17179869184.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "mamba.ssd.states").op.flops.value, 17179869184.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "mamba.ssd.off").op.flops.value, 17179869184.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "mamba.out_proj").op.flops.value, 549755813888.0);
  double gemm = 0;
  for (const Op& op : fwd) gemm += op.op.op == ir::OpClass::gemm ? op.op.flops.value : 0;
  EXPECT_DOUBLE_EQ(gemm, 1848983420928.0);
  // Layer 7 is attention without rotary positions, layer 1 a squared-ReLU MLP [4096 -> 21504].
  EXPECT_EQ(names_of(layer_forward(m, shape(8192), 7)),
            (std::vector<std::string>{"ln_1", "attn.qkv", "attn.core", "attn.proj",
                                      "mixer.dropout_add"}));
  EXPECT_EQ(op_named(layer_forward(m, shape(8192), 1), "mlp.fc1").op.n, 21504);
}

TEST(ModelFamilies, MambaScanStaysIn16BitsUnderFp8) {
  // Transformer Engine's FP8 recipe quantizes its linears (in_proj, out_proj); mamba_ssm's Triton
  // scan kernels take bf16 operands whatever the recipe, so the scan's products are bf16 GEMMs.
  const ModelSpec m = imported("nemotron-h-8b-base-8k.json");
  WorkShape w = shape(8192);
  w.precision = Precision::fp8;
  const std::vector<Op> fwd = layer_forward(m, w, 0);
  EXPECT_EQ(op_named(fwd, "mamba.in_proj").op.dtype, ir::DType::fp8);
  for (const char* scan : {"mamba.ssd.cb", "mamba.ssd.diag", "mamba.ssd.states", "mamba.ssd.off"})
    EXPECT_EQ(op_named(fwd, scan).op.dtype, ir::DType::bf16) << scan;
}

TEST(ModelFamilies, NemotronHMambaStateAndActivationMemory) {
  // The recurrent state of one sequence: 128 heads x 64 x 128 fp32 = 4,194,304 B, plus the conv's
  // last 3 inputs over 10,240 channels at 2 B = 61,440: 4,255,744 B a layer. The chunk states
  // the scan writes over 8192 tokens: 64 x 128 x 64 x 128 x 4 B = 268,435,456 B.
  const ModelSpec m = imported("nemotron-h-8b-base-8k.json");
  EXPECT_EQ(layers::mamba_state_bytes(m.mamba, 2), 4255744);
  EXPECT_EQ(layers::mamba_chunk_states_bytes(m.mamba, 8192), 268435456);
  // Saved for backward per token at bf16, one rank: the norm's input 4096 x 2, the in_proj input
  // 4096 x 2, zxbcdt 18560 x 2, the scan output 8192 x 2 and 8 fp32 1/rms: 8,192 + 61,728 =
  // 69,920 B; x 8192 tokens = 572,784,640 B.
  const WorkShape w = shape(8192);
  EXPECT_EQ(activation_bytes_of_layer(m, w, 0).count, 572784640);
  // An MLP layer keeps its norm's and fc1's inputs (2 x 4096) and relu2's input and output
  // (2 x 21504), 2 B each: 102,400 B a token, 838,860,800 B.
  EXPECT_EQ(activation_bytes_of_layer(m, w, 1).count, 838860800);
}

TEST(ModelFamilies, Nemotron3SuperParameterCountMatchesTheCheckpoint) {
  // hidden 4096, 88 layers: 40 M, 40 E, 8 *. A Mamba layer (128 heads of 64, 8 groups, state 128)
  // is Nemotron-H 8B's: 109,640,064. An attention layer: its norm 4,096, qkv [4096 -> 4096 + 2 x 2
  // x 128] 18,874,368, o 16,777,216: 35,655,680. An MoE layer: its norm 4,096, router 512 x 4096
  // = 2,097,152 and its 512 score-correction biases, 512 latent experts each up [1024 -> 2688] and
  // down [2688 -> 1024] (squared ReLU, not gated): 512 x 5,505,024 = 2,818,572,288, the shared
  // expert 2 x 4096 x 5376 = 44,040,192, fc1_latent_proj and fc2_latent_proj 2 x 4096 x 1024 =
  // 8,388,608: 2,873,102,848. 40 x 109,640,064 + 8 x 35,655,680 + 40 x 2,873,102,848 +
  // embedding and head 2 x 131072 x 4096 = 1,073,741,824 + the final norm 4,096:
  // 120,668,707,840. The MTP module: enorm, hnorm 2 x 4,096, eh_proj 2 x 4096 x 4096 =
  // 33,554,432, an attention layer 35,655,680, an MoE layer 2,873,102,848, its norm 4,096:
  // 2,942,325,248. Together 123,611,033,088: the checkpoint's element count (Megatron-Bridge's
  // verification card; tests/data/hf/README.md), whose MTP holds 2,942,324,736 BF16 weights and
  // one 512-float bias.
  const ModelSpec m = imported("nemotron-3-super-120b-a12b.json");
  EXPECT_EQ(parameter_count(m), 120668707840);
  EXPECT_EQ(mtp_parameter_count(m), 2942325248);
  EXPECT_EQ(parameter_count(m) + mtp_parameter_count(m), 123611033088);
  EXPECT_EQ(m.moe.latent, 1024);
  EXPECT_EQ(m.moe_layer_count(), 40);
  // The preset is the same model.
  const ModelSpec& preset = find_model_preset("nemotron-3-super");
  EXPECT_EQ(parameter_count(preset), parameter_count(m));
  EXPECT_EQ(mtp_parameter_count(preset), mtp_parameter_count(m));
}

TEST(ModelFamilies, Nemotron3NanoParameterCount) {
  // hidden 2688, 52 layers: 23 M, 23 E, 6 *. A Mamba layer (64 heads of 64, 8 groups, state 128:
  // d_inner 4096, conv over 6,144 channels, in_proj [2688 -> 10304]): 27,697,152 + 24,576 + 6,144
  // + 192 + 4,096 + out_proj 11,010,048 + its norm 2,688 = 38,744,896. Attention (32 heads of
  // 128, 2 KV heads): 2,688 + 2688 x 4608 + 4096 x 2688 = 23,399,040. MoE: 2,688 + router
  // 344,064 + 128 biases + 128 experts x 2 x 2688 x 1856 = 1,277,165,568 + the shared expert
  // 2 x 2688 x 3712 = 19,955,712: 1,297,468,160. 23 x 38,744,896 + 6 x 23,399,040 + 23 x
  // 1,297,468,160 + 2 x 131072 x 2688 + 2,688 = 31,577,940,288: the report's "31.6B total".
  EXPECT_EQ(parameter_count(imported("nemotron-3-nano-30b-a3b.json")), 31577940288);
  EXPECT_EQ(parameter_count(find_model_preset("nemotron-3-nano")), 31577940288);
  // 3.5 Lightning adds an MTP module: 2 x 2,688 + eh_proj 2 x 2688^2 = 14,450,688 + an attention
  // layer 23,399,040 + an MoE layer 1,297,468,160 + 2,688 = 1,335,325,952; with the main model
  // 32,913,266,240, the count its verification card gives (Megatron-Bridge's
  // examples/model_verification_cards/nemotron-3.5-lightning/card.yaml: "32,913,266,240
  // parameters ... including the MTP layers").
  const ModelSpec& lightning = find_model_preset("nemotron-3.5-lightning");
  EXPECT_EQ(mtp_parameter_count(lightning), 1335325952);
  EXPECT_EQ(parameter_count(lightning) + mtp_parameter_count(lightning), 32913266240);
}

TEST(ModelFamilies, LatentMoeLayerWorkAndDispatchBytes) {
  // Nemotron 3 Super's layer 1 (E) on 8192 tokens, EP 8 (64 local experts), bf16: each token's
  // 22 copies, 180,224 in all, move at the latent width: 180,224 x 1024 x 2 B = 369,098,752 B per
  // all-to-all. The experts' fc1 reads 2,816 copies per local expert: 2 x 2816 x 2688 x 1024 x
  // 64 = 992,137,445,376 FLOPs. fc1_latent_proj [4096 -> 1024] over the 8192 tokens: 2 x 8192 x
  // 1024 x 4096 = 68,719,476,736. The shared expert's fc1 [4096 -> 5376], not gated:
  // 360,777,252,864.
  const ModelSpec& m = find_model_preset("nemotron-3-super");
  WorkShape w = shape(8192);
  w.ep = 8;
  const std::vector<Op> fwd = layer_forward(m, w, 1);
  EXPECT_EQ(
      names_of(fwd),
      (std::vector<std::string>{
          "ln_1", "mlp.router", "mlp.topk", "mlp.fc1_latent_proj", "mlp.permute", "mlp.experts.fc1",
          "mlp.experts.act", "mlp.experts.fc2", "mlp.unpermute", "mlp.fc2_latent_proj",
          "mlp.shared.fc1", "mlp.shared.act", "mlp.shared.fc2", "mixer.dropout_add"}));
  EXPECT_EQ(op_named(fwd, "mlp.permute").tp_after.bytes.count, 369098752);
  EXPECT_DOUBLE_EQ(op_named(fwd, "mlp.experts.fc1").op.flops.value, 992137445376.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "mlp.fc1_latent_proj").op.flops.value, 68719476736.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "mlp.shared.fc1").op.flops.value, 360777252864.0);
}

TEST(ModelFamilies, Nemotron3MoeLayerActivationMemory) {
  // Nano's layer 1 (E), 8192 tokens, one rank, bf16, no recomputation: the norm's and the
  // router's inputs 2 x 2688 x 2 B a token (88,080,384 B); the router's fp32 scores 8192 x 128 x
  // 4 = 4,194,304; 49,152 routed copies (top 6), each its fc1 input 2688 and squared ReLU's input
  // and output 2 x 1856, at 2 B: 629,145,600; the shared expert's 2 x 3712 per token at 2 B:
  // 121,634,816. 843,055,104 B.
  const ModelSpec& m = find_model_preset("nemotron-3-nano");
  EXPECT_EQ(activation_bytes_of_layer(m, shape(8192), 1).count, 843055104);
}

TEST(ModelFamilies, ImportedModelsBuildTheirWork) {
  // Each builds a step's work; TP 2 splits Nemotron-H's Mamba heads and groups.
  for (const char* name : {"gpt-oss-20b.json", "gemma-3-1b.json", "phi-4.json",
                           "phi-3-mini-4k.json", "nemotron-h-8b-base-8k.json",
                           "nemotron-3-nano-30b-a3b.json", "nemotron-3-super-120b-a12b.json"}) {
    SCOPED_TRACE(name);
    const ModelSpec m = imported(name);
    WorkShape w = shape(4096, 2, true);
    const ModelWork work = build_model_work(m, w);
    EXPECT_EQ(work.blocks.size(), static_cast<size_t>(m.layers + 2));
    EXPECT_GT(work.model_flops.value, 0);
  }
  // A windowed model refuses context parallelism over sequences longer than its window.
  WorkShape cp = shape(8192);
  cp.cp = 2;
  EXPECT_THROW(build_model_work(imported("gpt-oss-20b.json"), cp), UserError);
}

TEST(ModelFamilies, RefusalsNameTheKeyAndADimensionsBlock) {
  const std::string phi3_small = refusal_of("phi-3-small-8k.json");
  EXPECT_NE(phi3_small.find("dense_attention_every_n_layers: blocksparse attention"),
            std::string::npos)
      << phi3_small;
  EXPECT_NE(phi3_small.find("model: {family: llama, layers: 32, hidden: 4096, heads: 32, "
                            "kv_heads: 8, ffn_hidden: 14336, vocab: 100352, max_seq: 8192}"),
            std::string::npos)
      << phi3_small;
}

TEST(ModelFamilies, NemotronMoeConfigsNameWhatIsMissingOrNotModelled) {
  // A pattern with E layers needs the experts' keys; an MTP pattern other than "*E" is refused.
  const std::string base = R"({"architectures": ["NemotronHForCausalLM"], "hidden_size": 2688,
    "num_hidden_layers": 4, "num_attention_heads": 32, "num_key_value_heads": 2,
    "intermediate_size": 1856, "vocab_size": 131072, "max_position_embeddings": 8192,
    "hybrid_override_pattern": "MEM*", "mamba_num_heads": 64, "mamba_head_dim": 64,
    "ssm_state_size": 128, "n_groups": 8)";
  auto refusal = [](const std::string& text) {
    try {
      interop::parse_hf_config(text, "nano.json");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal(base + "}").find("nano.json: n_routed_experts"), std::string::npos)
      << refusal(base + "}");
  const std::string moe = base + R"(, "n_routed_experts": 8, "num_experts_per_tok": 2,
    "moe_intermediate_size": 1856, "num_nextn_predict_layers": 1)";
  EXPECT_EQ(interop::parse_hf_config(moe + "}", "nano.json").spec.mtp_depth, 1);
  const std::string other_mtp = refusal(moe + R"(, "mtp_hybrid_override_pattern": "*-"})");
  EXPECT_NE(other_mtp.find("mtp_hybrid_override_pattern: '*-' is not modelled"), std::string::npos)
      << other_mtp;
}

}  // namespace
}  // namespace cs::model::test
