// Models described by their dimensions: transformer decoders (GPT-2/GPT-3 with LayerNorm, GELU,
// biases, learned positions, tied embeddings; Llama with RMSNorm, SwiGLU, grouped-query
// attention, no biases, untied embeddings) and a small MLP for tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "taskgraph/task_graph.h"

namespace cs::model {

enum class Family : uint8_t { gpt, llama, mlp };

struct ModelSpec {
  std::string name;
  Family family = Family::gpt;
  int layers = 0;
  int64_t hidden = 0;
  int heads = 1;
  int kv_heads = 1;          // == heads without grouped-query attention
  int64_t ffn_hidden = 0;    // MLP inner size
  int64_t vocab = 0;         // 0 for the MLP
  int64_t max_seq = 0;
  double dropout = 0.0;      // GPT-2: 0.1, Llama: 0

  bool gated_mlp() const { return family == Family::llama; }
  bool has_bias() const { return family == Family::gpt; }
  bool tied_embeddings() const { return family == Family::gpt; }
  bool learned_positions() const { return family == Family::gpt; }
  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_hidden() const { return head_dim() * kv_heads; }
};

struct ParameterTensor {
  std::string name;
  int block = 0;       // index into ModelWork::blocks (0 = embedding for transformers)
  int64_t numel = 0;
  // Megatron tensor parallelism splits this tensor across the TP ranks (column/row-parallel
  // weights, column-parallel biases, the vocab-parallel embedding and LM head); norms,
  // row-parallel biases and learned positions are replicated.
  bool tp_split = false;
  int64_t numel_per_tp_rank(int tp) const { return tp_split ? numel / tp : numel; }
};

// Parameters in the order of PyTorch's model.parameters() (what DDP buckets in reverse).
std::vector<ParameterTensor> parameter_list(const ModelSpec& m);
int64_t parameter_count(const ModelSpec& m);

// Presets: gpt2-small/medium/large/xl, gpt3-175b, llama2-7b/13b/70b, llama3-8b/70b/405b, mlp-small.
const std::vector<ModelSpec>& model_presets();
const ModelSpec& find_model_preset(const std::string& name);  // UserError lists valid names
// Checks dimensions (positive, heads divide hidden, kv_heads divide heads); UserError otherwise.
void validate(const ModelSpec& m);

}  // namespace cs::model
