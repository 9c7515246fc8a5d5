#include "interop/hf_config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/limits.h"
#include "common/text_file.h"
#include "interop/json_file.h"

namespace cs::interop {
namespace {

using nlohmann::json;
namespace lim = model::limits;
constexpr auto dim = limits::model_dimension;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Typed, range-checked reads of one config object; every error names the file and the key.
class ConfigReader {
 public:
  ConfigReader(const json& j, std::string file) : j_(j), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    throw UserError(file_ + ": " + key + ": " + msg);
  }
  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  int64_t integer(const std::string& key, const limits::IntegerBound& b) const {
    if (!has(key)) fail(key, "missing; expected an integer from " + range(b));
    return checked(key, j_.at(key), b);
  }
  int64_t integer_or(const std::string& key, int64_t fallback,
                     const limits::IntegerBound& b) const {
    return has(key) ? checked(key, j_.at(key), b) : fallback;
  }
  std::string text_or(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_string()) fail(key, "expected a string, got " + j_.at(key).dump());
    return j_.at(key).get<std::string>();
  }
  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_boolean()) fail(key, "expected true or false, got " + j_.at(key).dump());
    return j_.at(key).get<bool>();
  }
  double fraction_or(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1)
      fail(key, std::string("expected a number in [0, 1) (") + limits::kDropoutWhy + "), got " +
                    v.dump());
    return v.get<double>();
  }
  // A share of a head's dimensions (rotary_pct, partial_rotary_factor): above 0, at most 1.
  double head_share_or(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1)
      fail(key,
           "expected a number above 0 and at most 1 (a share of each head's dimensions), got " +
               v.dump());
    return v.get<double>();
  }
  std::vector<int64_t> integer_list_or_empty(const std::string& key,
                                             const limits::IntegerBound& b) const {
    std::vector<int64_t> out;
    if (!has(key)) return out;
    const json& v = j_.at(key);
    if (!v.is_array())
      fail(key, "expected a list of integers from " + range(b) + ", got " + v.dump());
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(checked(key + "[" + std::to_string(i) + "]", v[i], b));
    return out;
  }
  const json& raw() const { return j_; }

 private:
  static std::string range(const limits::IntegerBound& b) {
    return std::to_string(b.lo) + " to " + std::to_string(b.hi);
  }
  // The value, the range and why (common/limits.h): "0 is out of range: from 1 to 65536 (...)".
  int64_t checked(const std::string& key, const json& v, const limits::IntegerBound& b) const {
    const double d = v.is_number() ? v.get<double>() : 0.5;
    if (!v.is_number_integer() && !(v.is_number_float() && std::isfinite(d) && d == std::floor(d)))
      fail(key, "expected an integer from " + range(b) + ", got " + v.dump());
    // 4096.0 is 4096; a whole float past 2^53 (1e300) is out of range, not converted.
    const bool exact = v.is_number_integer() || std::fabs(d) < 9e15;
    const int64_t x = v.is_number_integer() ? v.get<int64_t>()
                      : exact               ? static_cast<int64_t>(d)
                                            : 0;
    if (!exact || !limits::within(b, x)) fail(key, limits::out_of_range(b, v.dump()));
    return x;
  }
  const json& j_;
  std::string file_;
};

// The name a model gets: the config's _name_or_path tail, else the file's folder or stem.
std::string model_name(const json& j, const std::string& file) {
  std::string s;
  if (j.contains("_name_or_path") && j["_name_or_path"].is_string())
    s = j["_name_or_path"].get<std::string>();
  if (s.empty()) {
    std::string f = file;
    const auto slash = f.rfind('/');
    std::string stem = slash == std::string::npos ? f : f.substr(slash + 1);
    if (stem == "config.json" && slash != std::string::npos) {
      f = f.substr(0, slash);
      const auto s2 = f.rfind('/');
      stem = s2 == std::string::npos ? f : f.substr(s2 + 1);
    }
    const auto dot = stem.rfind(".json");
    s = dot == std::string::npos ? stem : stem.substr(0, dot);
  }
  const auto slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

struct Arch {
  std::string name;
  std::string model_type;
  bool modelled = true;  // false: recognised, to be refused with the reason (read_family_2025)
};
const std::vector<Arch>& arch_table() {
  static const std::vector<Arch> kArchs = {
      {"LlamaForCausalLM", "llama"},
      {"MistralForCausalLM", "mistral"},
      {"MixtralForCausalLM", "mixtral"},
      {"Qwen2ForCausalLM", "qwen2"},
      {"Qwen3ForCausalLM", "qwen3"},
      {"Qwen3MoeForCausalLM", "qwen3_moe"},
      {"DeepseekV3ForCausalLM", "deepseek_v3"},
      {"GPT2LMHeadModel", "gpt2"},
      {"GPTNeoXForCausalLM", "gpt_neox"},
      {"Phi3ForCausalLM", "phi3"},
      {"Phi3SmallForCausalLM", "phi3small", false},
      {"GptOssForCausalLM", "gpt_oss"},
      {"Gemma3ForCausalLM", "gemma3_text"},
      {"NemotronHForCausalLM", "nemotron_h"},
  };
  return kArchs;
}

std::string architecture_of(const ConfigReader& rd) {
  const json& j = rd.raw();
  const std::string valid = "supported architectures: " + join(hf_architectures());
  if (j.contains("architectures") && !j["architectures"].is_null()) {
    const json& a = j["architectures"];
    if (!a.is_array() || a.empty() || !a[0].is_string())
      rd.fail("architectures", "expected a list of architecture names; " + valid);
    const std::string name = a[0].get<std::string>();
    for (const auto& x : arch_table()) {
      if (x.name == name) return name;
    }
    rd.fail("architectures", "unsupported architecture '" + name + "'; " + valid);
  }
  if (j.contains("model_type") && j["model_type"].is_string()) {
    const std::string t = j["model_type"].get<std::string>();
    for (const auto& x : arch_table()) {
      if (x.model_type == t) return x.name;
    }
    rd.fail("model_type",
            "unsupported model_type '" + t + "' (and no 'architectures' list); " + valid);
  }
  rd.fail("architectures", "missing (and no 'model_type'); " + valid);
}

// sliding_window: every layer's window (Mistral 7B v0.1, Phi-3 mini); Qwen2/3 window only with
// use_sliding_window, and then only the layers from max_window_layers on, which is not modelled.
void read_window(const ConfigReader& rd, model::ModelSpec& m, HfModel& out) {
  if (!rd.has("sliding_window")) return;
  if (rd.raw().contains("use_sliding_window")) {
    if (rd.boolean_or("use_sliding_window", false))
      out.notes.push_back(
          "use_sliding_window true: Qwen's windowed layers (from max_window_layers "
          "on) are modelled over the whole sequence");
    return;
  }
  m.window.window = rd.integer("sliding_window", dim(1, lim::max_seq));
}

// Llama, Mistral, Mixtral, Qwen2/3, Qwen3-MoE and DeepSeek-V3 share these keys.
void read_llama_like(const ConfigReader& rd, model::ModelSpec& m, HfModel& out, bool qwen3) {
  m.family = model::Family::llama;
  m.layers = static_cast<int>(rd.integer("num_hidden_layers", dim(1, lim::max_layers)));
  m.hidden = rd.integer("hidden_size", dim(1, lim::max_hidden));
  m.heads = static_cast<int>(rd.integer("num_attention_heads", dim(1, lim::max_heads)));
  m.kv_heads = static_cast<int>(
      rd.integer_or("num_key_value_heads", m.heads, limits::query_groups(m.heads)));
  if (m.heads % m.kv_heads != 0)
    rd.fail("num_key_value_heads", "is " + std::to_string(m.kv_heads) +
                                       "; must divide num_attention_heads (" +
                                       std::to_string(m.heads) + ")");
  m.ffn_hidden = rd.integer("intermediate_size", dim(1, lim::max_ffn));
  m.vocab = rd.integer("vocab_size", dim(1, lim::max_vocab));
  m.max_seq = rd.integer_or("max_position_embeddings", 4096, dim(1, lim::max_seq));
  m.dropout = rd.fraction_or("attention_dropout", 0.0);
  m.tie_embeddings = rd.boolean_or("tie_word_embeddings", false);
  // head_dim: Llama/Mistral default hidden / heads; Qwen3 defaults to 128.
  const int64_t natural = m.hidden % m.heads == 0 ? m.hidden / m.heads : 0;
  const int64_t head_dim =
      rd.integer_or("head_dim", qwen3 ? 128 : natural, dim(1, lim::max_head_dim));
  if (head_dim == 0)
    rd.fail("num_attention_heads", "does not divide hidden_size and no head_dim is given");
  if (head_dim != natural) m.head_dim_explicit = head_dim;
  if (rd.boolean_or("mlp_bias", false))
    rd.fail(
        "mlp_bias",
        "true is not supported (MLP biases are not modelled for this architecture); valid: false");
  read_window(rd, m, out);
  if (rd.has("rope_scaling"))
    out.notes.push_back("rope_scaling changes no parameter and is not modelled");
}

// The model block of the scenario's dimension keys that describes `m` as a dense transformer:
// what a refusal offers instead of the part it cannot model.
std::string dimensions_block(const model::ModelSpec& m) {
  auto n = [](int64_t x) { return std::to_string(x); };
  return "model: {family: llama, layers: " + n(m.layers) + ", hidden: " + n(m.hidden) +
         ", heads: " + n(m.heads) + ", kv_heads: " + n(m.kv_heads) +
         ", ffn_hidden: " + n(m.ffn_hidden) + ", vocab: " + n(m.vocab) +
         ", max_seq: " + n(m.max_seq) + "}";
}

[[noreturn]] void refuse(const ConfigReader& rd, const std::string& key, const std::string& why,
                         const model::ModelSpec& m) {
  rd.fail(key, why + " is not modelled; the dimensions alone, as a dense transformer, are " +
                   dimensions_block(m));
}

// layer_types (gpt-oss, newer Gemma 3 configs): "sliding_attention" or "full_attention" per
// layer, modelled where the full layers are every n-th (ModelSpec::window.full_every).
void read_layer_types(const ConfigReader& rd, model::ModelSpec& m) {
  const json& v = rd.raw().at("layer_types");
  if (!v.is_array() || static_cast<int64_t>(v.size()) != m.layers)
    rd.fail("layer_types", "expected one of \"sliding_attention\", \"full_attention\" per layer (" +
                               std::to_string(m.layers) + ")");
  int first_full = 0;
  for (int l = 0; l < m.layers; ++l) {
    if (!v[l].is_string() || (v[l] != "sliding_attention" && v[l] != "full_attention"))
      rd.fail("layer_types[" + std::to_string(l) + "]",
              "expected \"sliding_attention\" or \"full_attention\", got " + v[l].dump());
    if (v[l] == "full_attention" && first_full == 0) first_full = l + 1;
  }
  m.window.full_every = first_full;
  for (int l = 0; l < m.layers; ++l) {
    if ((v[l] == "full_attention") != (m.attention_window(l) == 0))
      refuse(rd, "layer_types",
             "this order of windowed and full layers (modelled: every n-th layer full)", m);
  }
}

// Phi-3 and Phi-4 (Phi3ForCausalLM): Llama's dimensions with q/k/v fused into qkv_proj and gate
// and up into gate_up_proj (the same parameters), and Phi-3 mini's 2047-token window.
void read_phi3(const ConfigReader& rd, model::ModelSpec& m, HfModel& out) {
  read_llama_like(rd, m, out, false);
  if (rd.boolean_or("attention_bias", false))
    rd.fail("attention_bias", "true is not supported for Phi3ForCausalLM; valid: false");
  m.qkv_bias = false;
  m.projections = model::Projections::fused_sliced;  // qkv_proj sliced; gate_up_proj chunked
  m.rotary_fraction = rd.head_share_or("partial_rotary_factor", 1.0);
  if (m.rotary_fraction < 1)
    out.notes.push_back("partial_rotary_factor: rotary positions priced over the whole head");
}

// Phi-3 small (Phi3SmallForCausalLM): blocksparse attention in all but every
// dense_attention_every_n_layers-th layer, which clustersim does not model.
[[noreturn]] void refuse_phi3_small(const ConfigReader& rd, model::ModelSpec& m) {
  m.layers = static_cast<int>(rd.integer("num_hidden_layers", dim(1, lim::max_layers)));
  m.hidden = rd.integer("hidden_size", dim(1, lim::max_hidden));
  m.heads = static_cast<int>(rd.integer("num_attention_heads", dim(1, lim::max_heads)));
  m.kv_heads = static_cast<int>(
      rd.integer_or("num_key_value_heads", m.heads, limits::query_groups(m.heads)));
  m.ffn_hidden = rd.integer("ff_intermediate_size", dim(1, lim::max_ffn));
  m.vocab = rd.integer("vocab_size", dim(1, lim::max_vocab));
  m.max_seq = rd.integer_or("max_position_embeddings", 8192, dim(1, lim::max_seq));
  refuse(rd, "dense_attention_every_n_layers", "blocksparse attention (Phi-3 small)", m);
}

// gpt-oss (GptOssForCausalLM; transformers' modeling_gpt_oss.py): every layer MoE with biased
// router and experts, q/k/v and o_proj biases, a sink logit per head, windowed (sliding_window)
// and full layers alternating (layer_types), the clamped SwiGLU. OpenAI counts active parameters
// without the input embedding (gpt-oss-20b: 3.61B of 20.91B; gpt-oss model card, arXiv
// 2508.10925, Table 1).
void read_gpt_oss(const ConfigReader& rd, model::ModelSpec& m, HfModel& out) {
  read_llama_like(rd, m, out, false);
  const bool bias = rd.boolean_or("attention_bias", true);
  m.qkv_bias = bias;
  m.out_proj_bias = bias;
  m.attention_sinks = true;
  m.ffn_activation = model::FfnActivation::clamped_swiglu;
  m.moe.experts = static_cast<int>(rd.integer("num_local_experts", dim(1, lim::max_experts)));
  m.moe.top_k = static_cast<int>(
      rd.integer(rd.has("num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token",
                 limits::routed_experts(m.moe.experts)));
  m.moe.expert_ffn_hidden = m.ffn_hidden;
  m.moe.biases = true;
  m.active_count = model::ActiveCount::without_input_embedding;
  if (rd.has("layer_types")) read_layer_types(rd, m);
}

// Gemma 3 text (Gemma3ForCausalLM; transformers' Gemma3TextConfig defaults): q/k RMSNorm, GeGLU
// (hidden_activation gelu_pytorch_tanh), four norms per layer, tied embeddings, five windowed
// layers to one full (sliding_window_pattern, or layer_types). The embedding's scaling by
// sqrt(hidden) is one multiply per element, not priced.
void read_gemma3(const ConfigReader& rd, model::ModelSpec& m, HfModel& out) {
  read_llama_like(rd, m, out, false);
  m.tie_embeddings = rd.boolean_or("tie_word_embeddings", true);
  if (rd.boolean_or("attention_bias", false))
    rd.fail("attention_bias", "true is not supported for Gemma3ForCausalLM; valid: false");
  m.qkv_bias = false;
  m.qk_norm = true;
  m.sandwich_norms = true;
  const std::string act = rd.text_or("hidden_activation", "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh")
    rd.fail("hidden_activation", "'" + act + "' is not modelled; valid: gelu_pytorch_tanh");
  m.ffn_activation = model::FfnActivation::geglu;
  if (!m.window.enabled()) m.window.window = 4096;  // Gemma3TextConfig's default
  if (rd.has("layer_types")) {
    read_layer_types(rd, m);
  } else {
    m.window.full_every = static_cast<int>(
        rd.integer_or("sliding_window_pattern", 6, limits::layers_of(1, m.layers)));
  }
  if (rd.has("attn_logit_softcapping") || rd.has("final_logit_softcapping"))
    out.notes.push_back("logit soft-capping: a few elementwise FLOPs per score, not priced");
}

// Nemotron 3's mixture-of-experts layers (hybrid_override_pattern's E): routed and shared
// squared-ReLU experts, a sigmoid router with its score-correction bias (the FP32
// e_score_correction_bias of each MoE layer), LatentMoE's width (Super, Ultra), and MTP modules
// of an attention and an MoE layer (mtp_hybrid_override_pattern "*E").
void read_nemotron_h_moe(const ConfigReader& rd, model::ModelSpec& m) {
  model::MoeSpec& e = m.moe;
  e.experts = static_cast<int>(rd.integer("n_routed_experts", dim(1, lim::max_experts)));
  e.top_k = static_cast<int>(rd.integer("num_experts_per_tok", limits::routed_experts(e.experts)));
  e.expert_ffn_hidden = rd.integer("moe_intermediate_size", dim(1, lim::max_ffn));
  e.shared_experts =
      static_cast<int>(rd.integer_or("n_shared_experts", 0, dim(0, lim::max_shared_experts)));
  if (e.shared_experts > 0)
    e.shared_ffn_hidden = rd.integer("moe_shared_expert_intermediate_size", dim(1, lim::max_ffn));
  e.latent = rd.has("moe_latent_size") && !rd.raw().at("moe_latent_size").is_null()
                 ? rd.integer("moe_latent_size", dim(1, lim::max_hidden))
                 : 0;
  e.expert_score_bias = true;
  m.mtp_depth =
      static_cast<int>(rd.integer_or("num_nextn_predict_layers", 0, dim(0, lim::max_mtp)));
  const std::string mtp = rd.text_or("mtp_hybrid_override_pattern", "*E");
  if (m.mtp_depth > 0 && mtp != "*E")
    rd.fail("mtp_hybrid_override_pattern",
            "'" + mtp + "' is not modelled; valid: \"*E\" (an attention and an MoE layer)");
}

// Nemotron-H and Nemotron 3 (NemotronHForCausalLM; transformers' NemotronHConfig):
// hybrid_override_pattern's Mamba-2 (M), attention (*), squared-ReLU MLP (-) and mixture-of-experts
// (E) layers, each one mixer; no rotary positions.
void read_nemotron_h(const ConfigReader& rd, model::ModelSpec& m, HfModel& out) {
  read_llama_like(rd, m, out, false);
  if (rd.has("attention_head_dim")) {
    const int64_t d = rd.integer("attention_head_dim", dim(1, lim::max_head_dim));
    m.head_dim_explicit = d == m.hidden / m.heads && m.hidden % m.heads == 0 ? 0 : d;
  }
  for (const char* key : {"attention_bias", "mlp_bias", "use_bias"}) {
    if (rd.boolean_or(key, false))
      rd.fail(key, "true is not supported for NemotronHForCausalLM; valid: false");
  }
  if (!rd.boolean_or("use_conv_bias", true))
    rd.fail("use_conv_bias", "false is not supported (the conv1d bias is counted); valid: true");
  m.qkv_bias = false;
  const std::string act = rd.text_or("mlp_hidden_act", "relu2");
  if (act != "relu2") rd.fail("mlp_hidden_act", "'" + act + "' is not modelled; valid: relu2");
  m.ffn_activation = model::FfnActivation::relu2;
  const std::string pattern = rd.text_or("hybrid_override_pattern", "");
  if (pattern.find('E') != std::string::npos) read_nemotron_h_moe(rd, m);
  if (static_cast<int64_t>(pattern.size()) != m.layers)
    rd.fail("hybrid_override_pattern", "expected one character per layer (" +
                                           std::to_string(m.layers) + "), got " +
                                           std::to_string(pattern.size()));
  m.layer_pattern = pattern;
  model::MambaSpec& s = m.mamba;
  s.heads = static_cast<int>(rd.integer("mamba_num_heads", dim(1, lim::max_heads)));
  s.head_dim = rd.integer("mamba_head_dim", dim(1, lim::max_head_dim));
  s.state = rd.integer("ssm_state_size", dim(1, lim::max_state));
  s.groups = static_cast<int>(
      rd.integer_or("n_groups", 1, {1, s.heads, "each group holds one Mamba head or more"}));
  s.conv_kernel = rd.integer_or("conv_kernel", 4, dim(1, lim::max_conv_kernel));
  s.chunk = rd.integer_or("chunk_size", 128, dim(1, lim::max_seq));
  if (pattern.find('M') == std::string::npos) s = {};
}

// What the scenario's dimension keys cannot say (their block, as `import hf` prints it, leaves it
// out): noted, so that the hf_config route is the one taken.
void note_options_without_scenario_keys(const model::ModelSpec& m, HfModel& out) {
  std::vector<std::string> left_out;
  if (m.window.enabled()) left_out.push_back("sliding windows");
  if (m.attention_sinks) left_out.push_back("attention sinks");
  if (m.out_proj_bias.value_or(false) || m.moe.biases) left_out.push_back("o_proj and MoE biases");
  if (m.ffn_activation != model::FfnActivation::swiglu) left_out.push_back("the MLP activation");
  if (m.sandwich_norms) left_out.push_back("the norms after attention and MLP");
  if (m.hybrid()) left_out.push_back("the Mamba-2 / attention / MLP / MoE layer pattern");
  if (m.moe.latent > 0) left_out.push_back("the LatentMoE width");
  if (!left_out.empty())
    out.notes.push_back(
        "model.hf_config describes this model whole; scenario dimension keys leave "
        "out " +
        join(left_out));
}

// The 2025-2026 families; false for another architecture.
bool read_family_2025(const ConfigReader& rd, const std::string& a, HfModel& out) {
  if (a == "Phi3ForCausalLM") {
    read_phi3(rd, out.spec, out);
  } else if (a == "Phi3SmallForCausalLM") {
    refuse_phi3_small(rd, out.spec);
  } else if (a == "GptOssForCausalLM") {
    read_gpt_oss(rd, out.spec, out);
  } else if (a == "Gemma3ForCausalLM") {
    read_gemma3(rd, out.spec, out);
  } else if (a == "NemotronHForCausalLM") {
    read_nemotron_h(rd, out.spec, out);
  } else {
    return false;
  }
  return true;
}

}  // namespace

const std::vector<std::string>& hf_architectures() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> v;
    for (const auto& a : arch_table()) {
      if (a.modelled) v.push_back(a.name);
    }
    return v;
  }();
  return kNames;
}

// A GELU model's activation_function / hidden_act (transformers' ACT2FN names) as
// model::Activation; another activation is refused with the ones the model prices.
model::Activation gelu_activation(const ConfigReader& rd, const std::string& key,
                                  const std::string& fallback) {
  const std::string v = rd.text_or(key, fallback);
  std::string valid;
  for (const auto& [name, value] : model::activation_names()) {
    if (name == v) return value;
    valid += (valid.empty() ? "" : ", ") + name;
  }
  rd.fail(key, "'" + v + "' is not modelled; valid: " + valid);
}

namespace {

// GPT-2 (GPT2LMHeadModel).
void read_gpt2(const ConfigReader& rd, model::ModelSpec& m) {
  // transformers GPT2Config: n_inner None means 4 x n_embd; tied unless told otherwise.
  m.family = model::Family::gpt;
  m.layers = static_cast<int>(rd.integer("n_layer", dim(1, lim::max_layers)));
  m.hidden = rd.integer("n_embd", dim(1, lim::max_hidden));
  m.heads = static_cast<int>(rd.integer("n_head", dim(1, lim::max_heads)));
  if (m.hidden % m.heads != 0)
    rd.fail("n_head", "is " + std::to_string(m.heads) + "; must divide n_embd (" +
                          std::to_string(m.hidden) + ")");
  m.kv_heads = m.heads;
  m.ffn_hidden = rd.integer_or("n_inner", 4 * m.hidden, dim(1, lim::max_ffn));
  m.vocab = rd.integer("vocab_size", dim(1, lim::max_vocab));
  m.max_seq = rd.integer_or("n_positions", 1024, dim(1, lim::max_seq));
  m.dropout = rd.fraction_or("resid_pdrop", 0.1);
  m.tie_embeddings = rd.boolean_or("tie_word_embeddings", true);
  m.qkv_bias = true;
  m.activation = gelu_activation(rd, "activation_function", "gelu_new");
}

// GPT-NeoX / Pythia (GPTNeoXForCausalLM).
void read_gpt_neox(const ConfigReader& rd, model::ModelSpec& m, HfModel& out) {
  m.family = model::Family::gpt_neox;
  m.layers = static_cast<int>(rd.integer("num_hidden_layers", dim(1, lim::max_layers)));
  m.hidden = rd.integer("hidden_size", dim(1, lim::max_hidden));
  m.heads = static_cast<int>(rd.integer("num_attention_heads", dim(1, lim::max_heads)));
  if (m.hidden % m.heads != 0)
    rd.fail("num_attention_heads", "is " + std::to_string(m.heads) + "; must divide hidden_size (" +
                                       std::to_string(m.hidden) + ")");
  m.kv_heads = m.heads;
  m.ffn_hidden = rd.integer("intermediate_size", dim(1, lim::max_ffn));
  m.vocab = rd.integer("vocab_size", dim(1, lim::max_vocab));
  m.max_seq = rd.integer_or("max_position_embeddings", 2048, dim(1, lim::max_seq));
  m.dropout = rd.fraction_or("hidden_dropout", 0.0);
  m.tie_embeddings = rd.boolean_or("tie_word_embeddings", false);
  m.qkv_bias = true;
  m.activation = gelu_activation(rd, "hidden_act", "gelu");  // GPTNeoXConfig's default
  m.rotary_fraction = rd.head_share_or("rotary_pct", 0.25);  // GPTNeoXConfig's default
  if (!rd.boolean_or("attention_bias", true))
    rd.fail("attention_bias",
            "false is not supported (GPT-NeoX is modelled with biases on every linear layer); "
            "valid: true");
  if (!rd.boolean_or("use_parallel_residual", true))
    out.notes.push_back(
        "use_parallel_residual false: modelled as parallel (the parameter count is the same)");
}

// Llama, Mistral, Mixtral, Qwen2/3, Qwen3-MoE and DeepSeek-V3 (architecture `a`).
void read_llama_family(const ConfigReader& rd, const std::string& a, model::ModelSpec& m,
                       HfModel& out) {
  const json& j = rd.raw();
  const bool qwen3 = a == "Qwen3ForCausalLM" || a == "Qwen3MoeForCausalLM";
  read_llama_like(rd, m, out, qwen3);
  const bool attention_bias = rd.boolean_or("attention_bias", false);
  if (a == "Qwen2ForCausalLM") {
    m.qkv_bias = true;  // Qwen2Attention: q_proj, k_proj, v_proj with bias, o_proj without
  } else {
    if (attention_bias)
      rd.fail("attention_bias", "true is not supported for " + a +
                                    " (the o_proj bias is not modelled); valid: false");
    m.qkv_bias = false;
  }
  m.qk_norm = qwen3;
  if (a == "MixtralForCausalLM") {
    m.moe.experts = static_cast<int>(rd.integer("num_local_experts", dim(1, lim::max_experts)));
    m.moe.top_k =
        static_cast<int>(rd.integer("num_experts_per_tok", limits::routed_experts(m.moe.experts)));
    m.moe.expert_ffn_hidden = m.ffn_hidden;
  } else if (a == "Qwen3MoeForCausalLM") {
    m.moe.experts = static_cast<int>(rd.integer("num_experts", dim(1, lim::max_experts)));
    m.moe.top_k =
        static_cast<int>(rd.integer("num_experts_per_tok", limits::routed_experts(m.moe.experts)));
    m.moe.expert_ffn_hidden = rd.integer("moe_intermediate_size", dim(1, lim::max_ffn));
    m.moe.layer_step =
        static_cast<int>(rd.integer_or("decoder_sparse_step", 1, limits::layers_of(1, m.layers)));
    for (int64_t l : rd.integer_list_or_empty("mlp_only_layers", limits::layer_index(m.layers)))
      m.moe.dense_layers.push_back(static_cast<int>(l));
  } else if (a == "DeepseekV3ForCausalLM") {
    m.moe.experts = static_cast<int>(rd.integer("n_routed_experts", dim(1, lim::max_experts)));
    m.moe.top_k =
        static_cast<int>(rd.integer("num_experts_per_tok", limits::routed_experts(m.moe.experts)));
    m.moe.expert_ffn_hidden = rd.integer("moe_intermediate_size", dim(1, lim::max_ffn));
    m.moe.shared_experts =
        static_cast<int>(rd.integer_or("n_shared_experts", 0, dim(0, lim::max_shared_experts)));
    m.moe.shared_ffn_hidden = m.moe.shared_experts > 0 ? m.moe.expert_ffn_hidden : 0;
    m.moe.first_dense_layers = static_cast<int>(rd.integer_or(
        "first_k_dense_replace", 0, {0, m.layers - 1, "one layer or more stays MoE"}));
    // DeepSeek: layer l is MoE when l >= first_k_dense_replace and l % moe_layer_freq == 0.
    const int freq =
        static_cast<int>(rd.integer_or("moe_layer_freq", 1, limits::layers_of(1, m.layers)));
    for (int l = 0; l < m.layers; ++l) {
      if (l % freq != 0) m.moe.dense_layers.push_back(l);
    }
    // transformers' DeepseekV3TopkRouter holds e_score_correction_bias (noaux_tc routing).
    m.moe.expert_score_bias = true;
    // DeepSeek counts active parameters without the input embedding (36.6B; model_spec.h).
    m.active_count = model::ActiveCount::without_input_embedding;
    m.mla.q_lora_rank = rd.integer_or("q_lora_rank", 0, dim(0, lim::max_rank));
    m.mla.kv_lora_rank = rd.integer("kv_lora_rank", dim(1, lim::max_rank));
    m.mla.qk_nope_head_dim = rd.integer("qk_nope_head_dim", dim(1, lim::max_head_dim));
    m.mla.qk_rope_head_dim = rd.integer("qk_rope_head_dim", dim(0, lim::max_head_dim));
    m.mla.v_head_dim = rd.integer("v_head_dim", dim(1, lim::max_head_dim));
    m.head_dim_explicit = 0;  // MLA's own head sizes apply
    m.mtp_depth =
        static_cast<int>(rd.integer_or("num_nextn_predict_layers", 0, dim(0, lim::max_mtp)));
    if (rd.has("n_group") && rd.integer_or("n_group", 1, dim(1, lim::max_experts)) > 1) {
      out.notes.push_back("node-limited routing (n_group " + j["n_group"].dump() + ", topk_group " +
                          (rd.has("topk_group") ? j["topk_group"].dump() : std::string("?")) +
                          ") is not modelled: tokens are routed uniformly");
    }
  }
}

}  // namespace

HfModel parse_hf_config(const std::string& text, const std::string& file) {
  const json j = parse_json(text, file);
  if (!j.is_object())
    throw UserError(file + ": expected a JSON object (a Hugging Face config.json)");
  const ConfigReader rd(j, file);
  HfModel out;
  out.architecture = architecture_of(rd);
  const std::string& a = out.architecture;
  model::ModelSpec& m = out.spec;
  m.name = model_name(j, file);
  if (a == "GPT2LMHeadModel") {
    read_gpt2(rd, m);
  } else if (a == "GPTNeoXForCausalLM") {
    read_gpt_neox(rd, m, out);
  } else if (!read_family_2025(rd, a, out)) {  // Phi-3/4, gpt-oss, Gemma 3, Nemotron-H
    read_llama_family(rd, a, m, out);
  }
  note_options_without_scenario_keys(m, out);
  if (rd.has("quantization_config"))
    out.notes.push_back(
        "quantization_config: weights are counted, and trained, at the scenario's precision");
  try {
    model::validate(m);
  } catch (const UserError& e) {
    throw UserError(file + ": " + e.what());
  }
  return out;
}

HfModel load_hf_config(const std::string& path) {
  // Bounded (common/text_file.h): /dev/zero was read until std::bad_alloc.
  return parse_hf_config(read_text_file(path, "Hugging Face config file"), path);
}

}  // namespace cs::interop
