// Megatron-LM launch arguments and DeepSpeed configs -> scenario drafts.
//
// Megatron: the model (--num-layers, --hidden-size, --num-attention-heads, --num-query-groups,
// --ffn-hidden-size, --vocab-size or --padded-vocab-size, --swiglu, --normalization, biases,
// positions, --untie-embeddings-and-output-weights, MoE and MLA flags), the layout (TP, PP, CP,
// EP, sequence parallel, distributed optimizer, virtual stages, first/last stage layers) and
// the training set-up (micro/global batch, sequence, bf16/fp16/fp8, recompute, overlap flags).
// Defaults are Megatron's (ffn 4h, or int(8h/3 / 64) * 64 with SwiGLU; embeddings tied unless
// untied; vocab padded to a multiple of 128 x TP). The world size comes from torchrun's --nnodes
// x --nproc-per-node in the same argument list, or from ImportOptions::gpus. Flags that do not
// change the step (learning rate, data, logging) are ignored silently; unknown flags are listed
// in a warning. A launch script is read as its tokens, with simple VAR=value assignments (and
// ${VAR:-default}) substituted; nothing is executed.
//
// DeepSpeed: ZeRO stage, micro-batch, accumulation, train batch, fp16/bf16, overlap_comm and
// reduce_bucket_size; offload is reported as not modelled; the model comes from a preset or a
// Hugging Face config since a DeepSpeed config does not describe it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "interop/scenario_draft.h"

namespace cs::interop {

struct ImportOptions {
  std::optional<int> gpus;           // world size, when the arguments do not say
  std::string cluster = "dgx_h100";  // cluster preset written into the scenario
  int gpus_per_node = 8;             // of that preset, to count nodes
  std::string name;                  // scenario name
  // DeepSpeed only: the model, and the sequence length (a DeepSpeed config has neither).
  std::string model_preset;
  std::string hf_config;
  std::optional<int64_t> seq_len;
};

// The argument tokens of a launch script (`file` names it in errors).
std::vector<std::string> launch_script_arguments(const std::string& text, const std::string& file);

// Throws UserError naming the flag and what is valid.
ScenarioDraft import_megatron(const std::vector<std::string>& args, const ImportOptions& options);

ScenarioDraft import_deepspeed(const std::string& json_text, const std::string& file,
                               const ImportOptions& options);

}  // namespace cs::interop
