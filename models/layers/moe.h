// The mixture-of-experts MLP (Megatron-Core's MoELayer): the router, token dispatch to the
// experts' ranks and combine (the alltoall or allgather dispatcher and their collectives), the
// routed experts as grouped GEMMs, and the shared experts beside them.
#pragma once

#include "models/layers/op_builder.h"

namespace cs::model::layers {

// One MoE MLP on this rank; parameters under `prefix` (see moe.cpp).
void moe_mlp(const LayerContext& c, BlockOps& ops, const std::string& prefix);

}  // namespace cs::model::layers
