// The MLP (Megatron-Core's MLP): fc1, the activation, fc2; fc1 column-parallel, fc2 row-parallel
// under tensor parallelism. GELU MLPs (GPT-2, GPT-NeoX) have fc1 [h -> ffn]; gated SwiGLU MLPs
// (Llama and the models built like it) fuse gate and up into fc1 [h -> 2 ffn]. Also the mlp
// family's layer, a linear layer and a ReLU.
#pragma once

#include "models/layers/op_builder.h"

namespace cs::model::layers {

// How the activation runs: SwiGLU (silu(gate) * up), GPT-2's tanh GELU written as tensor ops
// (gelu_new: eight kernels forward and ten backward where chains are not fused), or a GELU that
// is one kernel each way (gelu_pytorch_tanh, gelu); GeGLU (Gemma), gpt-oss's clamped SwiGLU and
// Nemotron-H's squared ReLU (model::FfnActivation).
enum class ActivationKind : uint8_t {
  swiglu,
  gelu_tensor_ops,
  gelu_one_kernel,
  geglu,
  clamped_swiglu,
  relu2
};
ActivationKind activation_kind(const ModelSpec& m);
// The activation reads a gate and an up projection: fc1 is two ffn wide.
bool gated(ActivationKind kind);

// The activation over `elements` of the fc1 output (per gated pair for SwiGLU): forward reads its
// inputs and writes its output, backward reads two more (~8 and ~12 FLOPs per element).
void activation(const LayerContext& c, BlockOps& ops, ActivationKind kind, const std::string& name,
                int64_t elements);

// A dense MLP on the rank's T tokens, ffn_hidden / t wide; parameters under `prefix`.
void dense_mlp(const LayerContext& c, BlockOps& ops, const std::string& prefix,
               ActivationKind kind);

// The mlp family's layer `layer`: y = ReLU(x W + b) on the micro-batch's rows.
void relu_layer(const LayerContext& c, BlockOps& ops, int layer);

}  // namespace cs::model::layers
