// What a LoRA fine-tuning run adapts (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large
// Language Models", arXiv 2106.09685), in the terms of Megatron-Bridge's LoRA config
// (src/megatron/bridge/peft/lora.py, class LoRA): the rank of the adapters (`dim`), their scale
// alpha / rank, the dropout on their input and the linear layers they sit beside. What the
// adapters cost is models/layers/lora.h's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cs::model {

// The linear layers LoRA can adapt, by Megatron-Core's module names (LoRA.target_modules):
// attention's fused q/k/v and its output projection, the MLP's fc1 (gate and up fused under
// SwiGLU) and fc2.
enum class LoraTarget : uint8_t { linear_qkv, linear_proj, linear_fc1, linear_fc2 };

inline const std::vector<std::pair<std::string, LoraTarget>>& lora_target_names() {
  static const std::vector<std::pair<std::string, LoraTarget>> names = {
      {"linear_qkv", LoraTarget::linear_qkv},
      {"linear_proj", LoraTarget::linear_proj},
      {"linear_fc1", LoraTarget::linear_fc1},
      {"linear_fc2", LoraTarget::linear_fc2}};
  return names;
}

// Megatron-Bridge's defaults: dim 32, alpha 32, dropout 0 ('pre': on the adapter's input), all
// four targets. Its Llama 3 70B LoRA recipe sets dim 16 and alpha 32
// (recipes/llama/h100/llama3.py, llama3_70b_peft_8gpu_h100_bf16_config), and the performance
// recipes built on it adapt linear_qkv only (perf_recipes/llama/h100/llama3.py).
struct LoraSpec {
  int64_t rank = 0;  // LoRA.dim; 0: no LoRA (every weight trains)
  double alpha = 32;
  double dropout = 0;
  std::vector<LoraTarget> targets = {LoraTarget::linear_qkv, LoraTarget::linear_proj,
                                     LoraTarget::linear_fc1, LoraTarget::linear_fc2};
  bool enabled() const { return rank > 0; }
  bool adapts(LoraTarget t) const {
    return enabled() && std::find(targets.begin(), targets.end(), t) != targets.end();
  }
};

}  // namespace cs::model
