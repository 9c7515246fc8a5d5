#include "models/model_spec.h"

#include "common/error.h"

namespace cs::model {

const std::vector<ModelSpec>& model_presets() {
  // GPT-2: Radford et al. 2019 / HF configs (vocab 50257, context 1024, dropout 0.1).
  // GPT-3 175B: Brown et al. 2020 Table 2.1. Llama 2: Touvron et al. 2023 (70B uses GQA with 8
  // KV heads); Llama 3: Meta model cards / Dubey et al. 2024 (all sizes GQA with 8 KV heads,
  // vocab 128256). The MLP is a 4-layer 256-wide perceptron for tests.
  static const std::vector<ModelSpec> kPresets = {
      {"gpt2-small", Family::gpt, 12, 768, 12, 12, 3072, 50257, 1024, 0.1},
      {"gpt2-medium", Family::gpt, 24, 1024, 16, 16, 4096, 50257, 1024, 0.1},
      {"gpt2-large", Family::gpt, 36, 1280, 20, 20, 5120, 50257, 1024, 0.1},
      {"gpt2-xl", Family::gpt, 48, 1600, 25, 25, 6400, 50257, 1024, 0.1},
      {"gpt3-175b", Family::gpt, 96, 12288, 96, 96, 49152, 50257, 2048, 0.1},
      {"llama2-7b", Family::llama, 32, 4096, 32, 32, 11008, 32000, 4096, 0.0},
      {"llama2-13b", Family::llama, 40, 5120, 40, 40, 13824, 32000, 4096, 0.0},
      {"llama2-70b", Family::llama, 80, 8192, 64, 8, 28672, 32000, 4096, 0.0},
      {"llama3-8b", Family::llama, 32, 4096, 32, 8, 14336, 128256, 8192, 0.0},
      {"llama3-70b", Family::llama, 80, 8192, 64, 8, 28672, 128256, 8192, 0.0},
      {"llama3-405b", Family::llama, 126, 16384, 128, 8, 53248, 128256, 8192, 0.0},
      {"mlp-small", Family::mlp, 4, 256, 1, 1, 256, 0, 1, 0.0},
  };
  return kPresets;
}

const ModelSpec& find_model_preset(const std::string& name) {
  for (const auto& m : model_presets()) {
    if (m.name == name) return m;
  }
  std::string list;
  for (const auto& m : model_presets()) list += (list.empty() ? "" : ", ") + m.name;
  throw UserError("unknown model preset '" + name + "'; valid presets: " + list);
}

void validate(const ModelSpec& m) {
  auto fail = [&](const std::string& what) { throw UserError("model '" + m.name + "': " + what); };
  if (m.layers < 1) fail("layers must be at least 1");
  if (m.hidden < 1) fail("hidden must be positive");
  if (m.family == Family::mlp) return;
  if (m.heads < 1 || m.hidden % m.heads != 0) fail("heads (" + std::to_string(m.heads) + ") must divide hidden (" + std::to_string(m.hidden) + ")");
  if (m.kv_heads < 1 || m.heads % m.kv_heads != 0) fail("kv_heads (" + std::to_string(m.kv_heads) + ") must divide heads (" + std::to_string(m.heads) + ")");
  if (m.ffn_hidden < 1) fail("ffn_hidden must be positive");
  if (m.vocab < 1) fail("vocab must be positive");
  if (m.max_seq < 1) fail("max_seq must be positive");
  if (m.dropout < 0 || m.dropout >= 1) fail("dropout must be in [0, 1)");
}

std::vector<ParameterTensor> parameter_list(const ModelSpec& m) {
  std::vector<ParameterTensor> p;
  const int64_t h = m.hidden;
  if (m.family == Family::mlp) {
    for (int l = 0; l < m.layers; ++l) {
      const std::string n = "fc" + std::to_string(l);
      p.push_back({n + ".weight", l, h * h});
      p.push_back({n + ".bias", l, h});
    }
    return p;
  }
  // Block 0 is the embedding, blocks 1..L the layers, block L+1 the head (final norm, LM head).
  p.push_back({"wte", 0, m.vocab * h, true});
  if (m.learned_positions()) p.push_back({"wpe", 0, m.max_seq * h});
  const bool bias = m.has_bias();
  for (int l = 0; l < m.layers; ++l) {
    const int b = l + 1;
    const std::string n = "h." + std::to_string(l) + ".";
    const int64_t qkv = h + 2 * m.kv_hidden();
    p.push_back({n + "ln_1.weight", b, h});
    if (bias) p.push_back({n + "ln_1.bias", b, h});
    p.push_back({n + "attn.qkv.weight", b, h * qkv, true});
    if (bias) p.push_back({n + "attn.qkv.bias", b, qkv, true});
    p.push_back({n + "attn.proj.weight", b, h * h, true});
    if (bias) p.push_back({n + "attn.proj.bias", b, h});
    p.push_back({n + "ln_2.weight", b, h});
    if (bias) p.push_back({n + "ln_2.bias", b, h});
    const int64_t fc1 = m.gated_mlp() ? 2 * m.ffn_hidden : m.ffn_hidden;
    p.push_back({n + "mlp.fc1.weight", b, h * fc1, true});
    if (bias) p.push_back({n + "mlp.fc1.bias", b, fc1, true});
    p.push_back({n + "mlp.fc2.weight", b, m.ffn_hidden * h, true});
    if (bias) p.push_back({n + "mlp.fc2.bias", b, h});
  }
  const int head = m.layers + 1;
  p.push_back({"ln_f.weight", head, h});
  if (bias) p.push_back({"ln_f.bias", head, h});
  if (!m.tied_embeddings()) p.push_back({"lm_head.weight", head, m.vocab * h, true});
  return p;
}

int64_t parameter_count(const ModelSpec& m) {
  int64_t n = 0;
  for (const auto& t : parameter_list(m)) n += t.numel;
  return n;
}

}  // namespace cs::model
