// Megatron-Core's explicit pipeline layout (--pipeline-model-parallel-layout,
// PipelineParallelLayerLayout): which layers each model chunk builds, written as a string of
// layer letters with '|' between chunks, in global chunk order (chunk g runs on stage g % pp):
//   E the embedding, t a decoder layer, m an MTP layer, L the output head and loss;
//   "X*n" repeats a letter, "(...)*n" a group (unrolled first), commas are ignored.
// DeepSeek-V3's Megatron-Bridge recipe on pp 4 x vp 4: "Et*4|(t*4|)*14tmL" is 16 chunks holding
// 4, 4 (x 14) and 1 of its 61 decoder layers, the embedding on the first and MTP and the loss on
// the last. clustersim keeps the decoder layers per chunk (Layout::chunk_layers); the embedding
// sits on the first chunk and the head (with any MTP module) on the last, as stage_plan places
// them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cs::strategy {

struct PipelineLayerLayout {
  std::vector<int> decoder_layers;  // per model chunk, global chunk order
  int mtp_layers = 0;               // MTP layers (all on the last chunk)
};

// Parses a layout string; a UserError names the text, the position and what is wrong. Accepts
// what Megatron-Core accepts except what clustersim cannot place: the embedding anywhere but the
// start of the first chunk, the loss anywhere but the end of the last, MTP off the last chunk,
// more than one loss (Megatron's mtp_loss_split).
PipelineLayerLayout parse_pipeline_layout(std::string_view text);

// The layout string of `decoder_layers` per chunk with `mtp_layers` MTP layers on the last chunk,
// runs of equal middle chunks folded: {4, 4, 4, 1} with 1 MTP layer is "Et*4|(t*4|)*2tmL".
std::string format_pipeline_layout(const std::vector<int>& decoder_layers, int mtp_layers);

}  // namespace cs::strategy
