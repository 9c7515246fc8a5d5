// The model's ends: the token embedding (vocab-parallel under tensor parallelism, plus learned
// positions for GPT-2), the LM head and its cross-entropy loss, and the mlp family's loss.
#pragma once

#include "models/layers/op_builder.h"

namespace cs::model::layers {

// The embedding lookup on the rank's tokens; its backward scatters into the dense vocab x h
// gradient of the rank's vocabulary slice.
void embedding(const LayerContext& c, BlockOps& ops);

// The LM head [h -> vocab / t], column-parallel (vocab-parallel) and always in 16 bits (see
// embedding.cpp); `params` empty where it is the tied embedding or shared with the main head.
void lm_head(const LayerContext& c, BlockOps& ops, const std::string& name,
             std::vector<int> params);

// Cross-entropy over the rank's T x vocab / t logits, with fp32 log-softmax.
void cross_entropy(const LayerContext& c, BlockOps& ops, const std::string& name);

// What each loss keeps per logit from forward to backward (Block::logits).
int64_t logit_bytes(const WorkShape& w, int64_t ab);

// The mlp family's squared-error loss on the last layer's rows x h outputs.
void squared_error_loss(const LayerContext& c, BlockOps& ops);

}  // namespace cs::model::layers
