// A Mamba-2 mixer (model::MambaSpec) as Megatron-Core's MambaMixer runs it under tensor
// parallelism: heads (and B/C groups) split over the TP ranks, in_proj column-parallel, the
// depthwise conv1d, the SSD chunked scan and the gated RMSNorm on the rank's heads, out_proj
// row-parallel.
#pragma once

#include "models/layers/op_builder.h"

namespace cs::model::layers {

// Appends the mixer's ops; parameters under prefix + "mixer.".
void mamba_mixer(const LayerContext& c, BlockOps& ops, const std::string& prefix);

// Bytes one token's mixer saves for backward on one TP rank, besides its input norm's input
// (mamba_ssm's fused MambaSplitConv1dScanCombinedFn): the in_proj input (h, SP-sharded), the
// in_proj output zxbcdt and the scan output before the gate (d_inner) at `ab` bytes, and the
// gated norm's fp32 1/rms per group.
int64_t mamba_saved_bytes_per_token(const ModelSpec& m, const WorkShape& w, int64_t ab);

// What one sequence's recurrence carries, per layer: the SSM state (heads x head_dim x state,
// fp32) and the conv1d's last conv_kernel - 1 inputs (conv_dim channels at `ab` bytes). A
// generation cache holds this instead of a KV cache; training passes it between chunks.
int64_t mamba_state_bytes(const MambaSpec& s, int64_t ab);

// The SSD scan's chunk states over a sequence of `seq` tokens: one fp32 state per chunk
// (ceil(seq / chunk) x heads x head_dim x state), written by the forward's chunk-state kernel and
// recomputed by the backward rather than saved: transient, per sequence and layer.
int64_t mamba_chunk_states_bytes(const MambaSpec& s, int64_t seq);

}  // namespace cs::model::layers
