// DeepSeek-V3's multi-token prediction modules (Megatron-Core's MultiTokenPredictionLayer), which
// run in the head's block after the main loss.
#pragma once

#include "models/layers/op_builder.h"

namespace cs::model::layers {

// Module k (0-based), predicting the token k + 2 ahead: RMSNorms of the hidden state and of the
// next token's embedding, a [2h -> h] projection, one decoder layer (index layers + k), a final
// norm, and the main model's head and loss again (the shared head's gradient is marked ready by
// the main head's, which runs after them in backward). Returns the bytes it saves for backward.
Bytes multi_token_prediction(const LayerContext& c, BlockOps& ops, int k);

}  // namespace cs::model::layers
