// Norms: LayerNorm (GPT-2, GPT-NeoX) and RMSNorm (Llama and the models built like it), one fused
// memory-bound op each way over the elements they normalise.
#pragma once

#include "models/layers/op_builder.h"

namespace cs::model::layers {

enum class NormKind : uint8_t { layer_norm, rms_norm };
NormKind norm_kind(const ModelSpec& m);

// Forward reads x and writes y (2 elements, ~5 FLOPs each); backward reads dy and x and writes dx
// (3 elements, ~8 FLOPs each), completing `params`' gradients.
void norm(const LayerContext& c, BlockOps& ops, NormKind kind, const std::string& name,
          int64_t elements, std::vector<int> params);

}  // namespace cs::model::layers
