// The attention core (Megatron-Core's core_attention): softmax(Q K^T) V on the rank's s tokens per
// sequence and its local heads, as one fused kernel, as context parallelism's ring of fused
// kernels (Transformer Engine's peer-to-peer ring or PyTorch's, WorkShape::cp_ring), or as
// eager's matmuls and softmax.
#pragma once

#include "models/layers/op_builder.h"

namespace cs::model::layers {

// `d` is the head size the FLOPs see (MLA: the mean of the query/key and value sizes,
// 4 b h s^2 d / 2 = 2 b h s^2 (d_qk + d_v) / 2); `kv_width` the K and V elements per token a
// peer-to-peer ring step passes; `window` > 0: each query attends at most that many keys
// (sliding-window layers; windowed_attention); `core_params`: parameters the core's backward
// completes (gpt-oss's sinks).
void attention_core(const LayerContext& c, BlockOps& ops, int64_t d, int64_t kv_width,
                    int64_t window = 0, std::vector<int> core_params = {});

// The fused kernel of a causal sliding window of `window` < s keys over `batch_heads` x s
// queries; `factor` 1 forward, 2.5 backward (as OpFactory::attention).
ir::ComputeOp windowed_attention(const OpFactory& f, int64_t batch_heads, int64_t s, int64_t window,
                                 int64_t d, double factor);

}  // namespace cs::model::layers
