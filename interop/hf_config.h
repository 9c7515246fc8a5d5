// Hugging Face config.json -> ModelSpec. Reads the keys transformers' own config classes read for
// LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
// Qwen3MoeForCausalLM, DeepseekV3ForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM,
// Phi3ForCausalLM (Phi-3, Phi-4), GptOssForCausalLM, Gemma3ForCausalLM and NemotronHForCausalLM
// (the architecture comes from `architectures`, else from `model_type`), with transformers'
// defaults where a key is absent. Every number is range-checked (the bounds of model::limits); an
// error names the file, the key and what is valid. A model part clustersim cannot model (Phi-3
// small's blocksparse attention, Nemotron 3's MoE layers) is refused naming its key and the
// dimensions block that describes the rest as a dense transformer. Keys that change the step but
// not the parameter count and that clustersim does not model (Qwen's partial windows, rope
// scaling, node-limited routing, quantization) come back as notes. Validation:
// tests/interop_test.cpp and tests/model_families_test.cpp derive the parameter counts of the
// configs under tests/data/hf/ by hand.
#pragma once

#include <string>
#include <vector>

#include "models/model_spec.h"

namespace cs::interop {

struct HfModel {
  model::ModelSpec spec;
  std::string architecture;        // e.g. "LlamaForCausalLM"
  std::vector<std::string> notes;  // what was read but is not modelled
};

// The architectures read, in the order errors list them.
const std::vector<std::string>& hf_architectures();

// `text` is the config's JSON; `file` names it in errors. Throws UserError.
HfModel parse_hf_config(const std::string& text, const std::string& file);
HfModel load_hf_config(const std::string& path);

}  // namespace cs::interop
