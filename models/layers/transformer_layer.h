// A decoder layer composed from its submodules, the way Megatron-Core's TransformerLayer is built
// from a layer spec: input norm, attention, residual add, pre-MLP norm, MLP, residual add. The
// spec says which kind of each submodule a layer of a model has; the dimensions come from the
// ModelSpec (LayerContext).
#pragma once

#include "models/layers/mlp.h"
#include "models/layers/norm.h"
#include "models/layers/op_builder.h"

namespace cs::model::layers {

enum class AttentionKind : uint8_t {
  self_attention,  // multi-head or grouped-query, fused q/k/v (attention.h)
  mla,             // multi-head latent attention (DeepSeek-V2/V3)
};
enum class MlpKind : uint8_t { dense, moe };
// A decoder layer (attention then MLP), or one of a hybrid stack's single-mixer layers
// (Megatron-Core's MambaStack: norm, one mixer, residual add), ModelSpec::layer_pattern's M, *,
// -, E.
enum class LayerKind : uint8_t { transformer, mamba, attention, mlp, moe };

struct LayerSpec {
  LayerKind kind = LayerKind::transformer;
  NormKind norm = NormKind::layer_norm;  // ln_1 and ln_2
  AttentionKind attention = AttentionKind::self_attention;
  bool rotary = false;  // self_attention: rotary positions on q and k
  int64_t window = 0;   // self_attention: keys a query attends at most (0: the causal prefix)
  MlpKind mlp = MlpKind::dense;
  ActivationKind activation = ActivationKind::gelu_tensor_ops;  // dense MLP's
  bool dropout = false;         // the residual adds apply dropout first
  bool sandwich_norms = false;  // Gemma: a norm on the attention's and on the MLP's output too
};

// Decoder layer `layer`'s spec (0-based; MTP modules' layers are layers + k).
LayerSpec layer_spec(const ModelSpec& m, int layer);

// Appends one decoder layer's ops; its parameters are named under `prefix` ("h.3.", "mtp.0.").
void transformer_layer(const LayerContext& c, BlockOps& ops, const LayerSpec& spec,
                       const std::string& prefix);

// The forward ops activation checkpointing re-runs before backward (see transformer_layer.cpp).
std::vector<Op> recomputed_ops(Recompute policy, const std::vector<Op>& forward,
                               ScaledMmSaving scaled_mm = ScaledMmSaving::saved);

}  // namespace cs::model::layers
