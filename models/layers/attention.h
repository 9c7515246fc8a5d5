// Attention (Megatron-Core's SelfAttention and MLASelfAttention): the projections around the
// attention core (attention_core.h), split by heads under tensor parallelism.
#pragma once

#include "models/layers/op_builder.h"

namespace cs::model::layers {

// Multi-head or grouped-query attention with fused q/k/v: the column-parallel qkv projection
// [h -> (q_hidden + 2 kv_hidden) / t], rotary positions on q and k where `rotary`, the core
// (causal, over at most `window` keys per query where window > 0, with gpt-oss's sinks where the
// model has them), and the row-parallel output projection [q_hidden / t -> h]. Parameters under
// `prefix`.
void self_attention(const LayerContext& c, BlockOps& ops, const std::string& prefix, bool rotary,
                    int64_t window = 0);

// Multi-head latent attention (DeepSeek-V2/V3); see attention.cpp.
void mla_attention(const LayerContext& c, BlockOps& ops, const std::string& prefix);

}  // namespace cs::model::layers
