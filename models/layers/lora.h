// LoRA fine-tuning as Megatron-Bridge runs it (src/megatron/bridge/peft/: lora.py's LoRA,
// lora_layers.py's LoRALinear, utils.py's ParallelLinearAdapter), over a dense decoder layer:
//
//   y = x W + B(A(dropout(x))) * alpha / rank
//
// W is the targeted linear, frozen with the rest of the base model (PEFT.freeze_model sets
// requires_grad False on every parameter, then the adapters are added): its forward GEMM and its
// input gradient dX = dY W^T still run, its weight gradient does not. A is [in x rank] and B
// [rank x out], in the compute dtype: they are Megatron-Core's own Column/RowParallelLinear, not
// Transformer Engine modules, so FP8 recipes leave them in bf16. They train: gradients, optimizer
// state and data-parallel reduction are theirs alone (ParameterTensor::trainable).
//
// Tensor parallelism as ParallelLinearAdapter splits them:
//   beside a column-parallel W (linear_qkv, linear_fc1): A column-parallel over the rank
//     ([in x rank / t], its output all-gathered to [T, rank]), B column-parallel over the output
//     ([rank x out / t], like W's). Under sequence parallelism the adapter all-gathers its own
//     copy of the sequence-sharded input [T, in] before A (gather_from_sequence_parallel_region)
//     and keeps it for A's weight gradient; its backward reduce-scatters A's input gradient.
//     Without it, A's input gradient is all-reduced (ColumnParallelLinear's input copy).
//   beside a row-parallel W (linear_proj, linear_fc2): A row-parallel over the input
//     ([in / t x rank], its partial outputs all-reduced), B column-parallel with gather_output
//     ([rank x out / t], its output all-gathered to [T, out], then re-split over the sequence
//     under sequence parallelism, whose backward all-gathers the output gradient).
//   Both: B's input gradient [T, rank] is all-reduced (ColumnParallelLinear's input copy).
// The output is scaled by alpha / rank and added to W's (two elementwise kernels).
#pragma once

#include <string>
#include <vector>

#include "models/layers/op_builder.h"

namespace cs::model::layers {

// A targeted linear's full (unsplit) widths and whether Megatron splits it by columns.
struct LoraTargetShape {
  int64_t in = 0, out = 0;
  bool column = true;
};
LoraTargetShape lora_target_shape(const ModelSpec& m, LoraTarget target);

// Freezes every parameter of `params` (the base model's, parameter_list) and appends, per decoder
// layer in order, the A and B of each target `lora` adapts ("h.<l>.attn.qkv.lora_a.weight", ...).
void add_lora_adapters(const ModelSpec& m, const LoraSpec& lora,
                       std::vector<ParameterTensor>& params);

// "LoRA rank 16 on linear_qkv, linear_proj" (the report's setup line).
std::string lora_summary(const LoraSpec& lora);

// The linear's name in a layer's ops and parameters: "attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2".
std::string lora_target_linear(LoraTarget target);

// The adapter beside `target` of the layer whose parameters are under `prefix` ("h.3."), when the
// shape's LoRA adapts it; nothing otherwise. Called right after the linear itself.
void lora_adapter(const LayerContext& c, BlockOps& ops, LoraTarget target,
                  const std::string& prefix);

// What one decoder layer's adapters save for backward, bytes per token on one TP rank, beyond
// the layer's own activations (model_work.h, activation_bytes_of_layer): B's input [T, rank];
// A's input where it is a tensor of the adapter's own (the sequence-parallel gather beside a
// column-parallel W, or dropout's output) and dropout's 1-byte mask. A's input beside a
// row-parallel W without dropout is W's input, already counted.
int64_t lora_saved_bytes_per_token(const ModelSpec& m, const WorkShape& w);

// Throws UserError where the shape's LoRA is not modelled (MoE, MLA, hybrid or MTP layers, the
// mlp family) or cannot run (a column-parallel target's rank not divisible by the TP size).
void check_lora_shape(const ModelSpec& m, const WorkShape& w);

}  // namespace cs::model::layers
