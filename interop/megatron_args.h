// Megatron-LM launch arguments and DeepSpeed configs -> scenario drafts.
//
// Megatron: the model (--num-layers, --hidden-size, --num-attention-heads, --num-query-groups,
// --ffn-hidden-size, --vocab-size or --padded-vocab-size, --swiglu, --normalization, biases,
// positions, --untie-embeddings-and-output-weights, MoE and MLA flags), the layout (TP, PP, CP,
// EP, sequence parallel, distributed optimizer, virtual stages, first/last stage layers) and
// the training set-up (micro/global batch, sequence, bf16/fp16/fp8, recompute, overlap flags).
// Defaults are Megatron's (ffn 4h, or int(8h/3 / 64) * 64 with SwiGLU; embeddings tied unless
// untied; vocab padded to a multiple of 128 x TP). The world size comes from torchrun's --nnodes
// x --nproc-per-node in the same argument list, or from ImportOptions::gpus. Without
// --vocab-size, the vocabulary is that of the tokenizer named (--tokenizer-type,
// --tokenizer-model; the table is in megatron_args.cpp), else an error names the flag to add.
// Flags that do not change the step (learning rate, data, logging) are listed in one note;
// unknown flags in a warning. A launch script is read as bash would expand its words, nothing
// executed (interop/launch_script.h, with its bounds).
//
// DeepSpeed: ZeRO stage, micro-batch, accumulation, train batch, fp16/bf16, overlap_comm and
// reduce_bucket_size; offload is reported as not modelled; the model comes from a preset or a
// Hugging Face config since a DeepSpeed config does not describe it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "interop/launch_script.h"
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
  // Megatron only: the first `script_words` arguments are launch script `script`'s words; a
  // refusal of a value given there names the script.
  std::string script;
  size_t script_words = 0;
};

// The argument words of a launch script (`file` names it in errors): read_launch_script's words.
std::vector<std::string> launch_script_arguments(const std::string& text, const std::string& file);

// Throws UserError naming the flag and what is valid.
ScenarioDraft import_megatron(const std::vector<std::string>& args, const ImportOptions& options);
// A launch script's words followed by `inline_args` (which win, coming last); the script's notes
// (what it has that was read but not evaluated) lead the draft's.
ScenarioDraft import_megatron(const LaunchScript& script,
                              const std::vector<std::string>& inline_args,
                              const ImportOptions& options);

ScenarioDraft import_deepspeed(const std::string& json_text, const std::string& file,
                               const ImportOptions& options);

}  // namespace cs::interop
