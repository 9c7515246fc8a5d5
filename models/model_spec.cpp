#include "models/model_spec.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <tuple>

#include "common/error.h"

namespace cs::model {

const std::vector<std::pair<std::string, Activation>>& activation_names() {
  static const std::vector<std::pair<std::string, Activation>> names = {
      {"gelu_new", Activation::gelu_new},
      {"gelu_pytorch_tanh", Activation::gelu_pytorch_tanh},
      {"gelu", Activation::gelu}};
  return names;
}

std::string_view to_string(Activation a) {
  for (const auto& [name, value] : activation_names()) {
    if (value == a) return name;
  }
  return "?";
}

const std::vector<std::pair<std::string, Projections>>& projection_names() {
  static const std::vector<std::pair<std::string, Projections>> names = {
      {"fused", Projections::fused},
      {"separate", Projections::separate},
      {"fused_sliced", Projections::fused_sliced}};
  return names;
}

std::string_view to_string(Projections p) {
  for (const auto& [name, value] : projection_names()) {
    if (value == p) return name;
  }
  return "?";
}

std::string_view to_string(Family f) {
  switch (f) {
    case Family::gpt:
      return "gpt";
    case Family::llama:
      return "llama";
    case Family::mlp:
      return "mlp";
    case Family::gpt_neox:
      return "gpt_neox";
  }
  return "?";
}

bool ModelSpec::is_moe_layer(int l) const {
  // A hybrid stack names its MoE layers; its MTP module's layer (l >= layers) has an MoE MLP.
  if (hybrid() && moe.enabled()) return l >= layers || hybrid_layer(l) == 'E';
  if (!moe.enabled() || l < moe.first_dense_layers || moe.layer_step < 1 ||
      (l + 1) % moe.layer_step != 0)
    return false;
  return std::find(moe.dense_layers.begin(), moe.dense_layers.end(), l) == moe.dense_layers.end();
}

int64_t ModelSpec::attention_window(int l) const {
  if (!window.enabled() || (window.full_every > 0 && (l + 1) % window.full_every == 0)) return 0;
  return window.window;
}

char ModelSpec::hybrid_layer(int l) const {
  return l >= 0 && l < static_cast<int>(layer_pattern.size()) ? layer_pattern[l] : '\0';
}

int ModelSpec::moe_layer_count() const {
  int n = 0;
  for (int l = 0; l < layers; ++l) n += is_moe_layer(l) ? 1 : 0;
  return n;
}

namespace {

// A decoder or MLP preset with every option stated.
ModelSpec preset(std::string name, Family f, int layers, int64_t hidden, int heads, int kv_heads,
                 int64_t ffn, int64_t vocab, int64_t max_seq, bool tied) {
  ModelSpec m;
  m.name = std::move(name);
  m.family = f;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.max_seq = max_seq;
  m.dropout = f == Family::gpt ? 0.1 : 0.0;
  m.tie_embeddings = tied;
  m.qkv_bias = f == Family::gpt || f == Family::gpt_neox;
  return m;
}

ModelSpec moe_preset(ModelSpec m, int experts, int top_k, int64_t expert_ffn) {
  m.moe.experts = experts;
  m.moe.top_k = top_k;
  m.moe.expert_ffn_hidden = expert_ffn;
  return m;
}

}  // namespace

const std::vector<ModelSpec>& model_presets() {
  static const std::vector<ModelSpec> kPresets = [] {
    std::vector<ModelSpec> v;
    // GPT-2: Radford et al. 2019 / HF configs (vocab 50257, context 1024, dropout 0.1).
    // GPT-3 175B: Brown et al. 2020 Table 2.1.
    v.push_back(preset("gpt2-small", Family::gpt, 12, 768, 12, 12, 3072, 50257, 1024, true));
    v.push_back(preset("gpt2-medium", Family::gpt, 24, 1024, 16, 16, 4096, 50257, 1024, true));
    v.push_back(preset("gpt2-large", Family::gpt, 36, 1280, 20, 20, 5120, 50257, 1024, true));
    v.push_back(preset("gpt2-xl", Family::gpt, 48, 1600, 25, 25, 6400, 50257, 1024, true));
    v.push_back(preset("gpt3-175b", Family::gpt, 96, 12288, 96, 96, 49152, 50257, 2048, true));
    // Llama 2: Touvron et al. 2023 (70B uses GQA with 8 KV heads); Llama 3: Meta model cards /
    // Dubey et al. 2024 (all sizes GQA with 8 KV heads, vocab 128256).
    v.push_back(preset("llama2-7b", Family::llama, 32, 4096, 32, 32, 11008, 32000, 4096, false));
    v.push_back(preset("llama2-13b", Family::llama, 40, 5120, 40, 40, 13824, 32000, 4096, false));
    v.push_back(preset("llama2-70b", Family::llama, 80, 8192, 64, 8, 28672, 32000, 4096, false));
    v.push_back(preset("llama3-8b", Family::llama, 32, 4096, 32, 8, 14336, 128256, 8192, false));
    v.push_back(preset("llama3-70b", Family::llama, 80, 8192, 64, 8, 28672, 128256, 8192, false));
    v.push_back(
        preset("llama3-405b", Family::llama, 126, 16384, 128, 8, 53248, 128256, 8192, false));
    // Llama 3.1: the Llama 3 dimensions with a 131,072-token context (HF meta-llama/Llama-3.1-8B,
    // -70B, -405B config.json: max_position_embeddings 131072).
    v.push_back(
        preset("llama3.1-8b", Family::llama, 32, 4096, 32, 8, 14336, 128256, 131072, false));
    v.push_back(
        preset("llama3.1-70b", Family::llama, 80, 8192, 64, 8, 28672, 128256, 131072, false));
    v.push_back(
        preset("llama3.1-405b", Family::llama, 126, 16384, 128, 8, 53248, 128256, 131072, false));
    // Llama 3.2 1B and 3B tie the output head to the embedding (HF meta-llama/Llama-3.2-1B, -3B:
    // tie_word_embeddings true).
    v.push_back(preset("llama3.2-1b", Family::llama, 16, 2048, 32, 8, 8192, 128256, 131072, true));
    v.push_back(preset("llama3.2-3b", Family::llama, 28, 3072, 24, 8, 8192, 128256, 131072, true));
    // HF mistralai/Mistral-7B-v0.1.
    v.push_back(preset("mistral-7b", Family::llama, 32, 4096, 32, 8, 14336, 32000, 32768, false));
    // HF mistralai/Mixtral-8x7B-v0.1 and Mixtral-8x22B-v0.1: 8 experts, top 2, every layer MoE,
    // experts as wide as intermediate_size.
    v.push_back(moe_preset(
        preset("mixtral-8x7b", Family::llama, 32, 4096, 32, 8, 14336, 32000, 32768, false), 8, 2,
        14336));
    v.push_back(moe_preset(
        preset("mixtral-8x22b", Family::llama, 56, 6144, 48, 8, 16384, 32000, 65536, false), 8, 2,
        16384));
    // HF Qwen/Qwen2.5-7B: q/k/v biases.
    {
      ModelSpec m =
          preset("qwen2.5-7b", Family::llama, 28, 3584, 28, 4, 18944, 152064, 131072, false);
      m.qkv_bias = true;
      v.push_back(m);
    }
    // HF Qwen/Qwen2.5-32B: 64 layers, hidden 5120, 40 heads, 8 KV heads, intermediate 27648, vocab
    // 152064, q/k/v biases.
    {
      ModelSpec m =
          preset("qwen2.5-32b", Family::llama, 64, 5120, 40, 8, 27648, 152064, 131072, false);
      m.qkv_bias = true;
      v.push_back(m);
    }
    // HF Qwen/Qwen3-8B, Qwen3-30B-A3B, Qwen3-235B-A22B: head_dim 128, q/k RMSNorm; the MoE
    // models have 128 experts, top 8, decoder_sparse_step 1, mlp_only_layers [].
    {
      ModelSpec m = preset("qwen3-8b", Family::llama, 36, 4096, 32, 8, 12288, 151936, 40960, false);
      m.head_dim_explicit = 128;
      m.qk_norm = true;
      v.push_back(m);
      m = moe_preset(
          preset("qwen3-30b-a3b", Family::llama, 48, 2048, 32, 4, 6144, 151936, 40960, false), 128,
          8, 768);
      m.head_dim_explicit = 128;
      m.qk_norm = true;
      v.push_back(m);
      m = moe_preset(
          preset("qwen3-235b-a22b", Family::llama, 94, 4096, 64, 4, 12288, 151936, 40960, false),
          128, 8, 1536);
      m.head_dim_explicit = 128;
      m.qk_norm = true;
      v.push_back(m);
    }
    // HF deepseek-ai/DeepSeek-V3 config.json: 61 layers, the first 3 dense (intermediate 18432),
    // 256 routed experts of 2048, top 8, 1 shared expert, MLA (q_lora_rank 1536, kv_lora_rank
    // 512, qk_nope 128, qk_rope 64, v 128), 128 heads, vocab 129280, untied, 1 MTP module.
    // DeepSeek-V3 technical report (arXiv 2412.19437): 671B total, 37B activated; the HF
    // checkpoint's 685B adds the 14B MTP module. Its README_WEIGHTS.md counts the 37B without the
    // input embedding ("36.6B, including 0.9B for the output Head").
    {
      ModelSpec m = moe_preset(
          preset("deepseek-v3", Family::llama, 61, 7168, 128, 128, 18432, 129280, 163840, false),
          256, 8, 2048);
      m.moe.shared_experts = 1;
      m.moe.shared_ffn_hidden = 2048;
      m.moe.first_dense_layers = 3;
      m.moe.expert_score_bias = true;
      m.mla = {1536, 512, 128, 64, 128};
      m.mtp_depth = 1;
      m.active_count = ActiveCount::without_input_embedding;
      v.push_back(m);
    }
    // HF moonshotai/Kimi-K2-Instruct config.json (DeepseekV3ForCausalLM): DeepSeek-V3's MLA and
    // MoE with 64 heads, 384 routed experts of 2048 (top 8, noaux_tc: the score-correction bias),
    // 1 shared expert, only the first layer dense, vocab 163840, 128K context, no MTP module
    // (num_nextn_predict_layers 0); Megatron-Bridge's kimi_provider.py has the same shape. Moonshot
    // counts "32B activated" as DeepSeek does.
    {
      ModelSpec m = moe_preset(
          preset("kimi-k2", Family::llama, 61, 7168, 64, 64, 18432, 163840, 131072, false), 384, 8,
          2048);
      m.moe.shared_experts = 1;
      m.moe.shared_ffn_hidden = 2048;
      m.moe.first_dense_layers = 1;
      m.moe.expert_score_bias = true;
      m.mla = {1536, 512, 128, 64, 128};
      m.active_count = ActiveCount::without_input_embedding;
      v.push_back(m);
    }
    // HF openai/gpt-oss-120b and gpt-oss-20b config.json (tests/data/hf; what `import hf` reads
    // from them, interop/hf_config.cpp read_gpt_oss): 36 and 24 layers, hidden 2880, 64 heads of
    // 64, 8 KV heads, every layer MoE (128 and 32 experts of 2880, top 4) with biased router and
    // experts, q/k/v and o_proj biases, a sink logit per head, the clamped SwiGLU, layers windowed
    // (128 keys) and full alternating from a windowed first, vocab 201088, 131072 positions.
    // OpenAI counts active parameters without the input embedding (model card, arXiv 2508.10925).
    for (const auto& [name, layers, experts] :
         {std::tuple{"gpt-oss-120b", 36, 128}, std::tuple{"gpt-oss-20b", 24, 32}}) {
      ModelSpec m =
          moe_preset(preset(name, Family::llama, layers, 2880, 64, 8, 2880, 201088, 131072, false),
                     experts, 4, 2880);
      m.head_dim_explicit = 64;
      m.qkv_bias = true;
      m.out_proj_bias = true;
      m.attention_sinks = true;
      m.ffn_activation = FfnActivation::clamped_swiglu;
      m.moe.biases = true;
      m.window = {128, 2};
      m.active_count = ActiveCount::without_input_embedding;
      v.push_back(m);
    }
    // Nemotron 3 (NVIDIA, arXiv 2512.20848): hybrid Mamba-2 / attention / MoE stacks, every MoE
    // layer squared-ReLU experts (not gated) with one shared expert and a sigmoid router with a
    // score-correction bias; GQA attention without rotary positions; untied, vocab 131072.
    // Nano (HF nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json): 52 layers (23 Mamba-2,
    // 23 MoE, 6 attention), hidden 2688, 32 heads of 128, 2 KV heads, Mamba 64 heads of 64, state
    // 128, 8 groups, 128 experts of 1856 (top 6), a shared expert of 3712. 3.5 Lightning (HF
    // NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16; Megatron-Bridge's model verification card: the
    // same signature plus num_nextn_predict_layers 1) adds one MTP module. Super (HF
    // NVIDIA-Nemotron-3-Super-120B-A12B-BF16 config.json): 88 layers (40 Mamba-2, 40 MoE, 8
    // attention), hidden 4096, Mamba 128 heads, 512 LatentMoE experts of 2688 at latent width
    // 1024 (top 22), a shared expert of 5376, one MTP module ("*E").
    {
      ModelSpec nano =
          preset("nemotron-3-nano", Family::llama, 52, 2688, 32, 2, 1856, 131072, 262144, false);
      nano.head_dim_explicit = 128;
      nano.qkv_bias = false;
      nano.ffn_activation = FfnActivation::relu2;
      nano.layer_pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
      nano.mamba = {64, 64, 128, 8, 4, 128};
      nano = moe_preset(nano, 128, 6, 1856);
      nano.moe.shared_experts = 1;
      nano.moe.shared_ffn_hidden = 3712;
      nano.moe.expert_score_bias = true;
      v.push_back(nano);
      ModelSpec lightning = nano;
      lightning.name = "nemotron-3.5-lightning";
      lightning.mtp_depth = 1;
      v.push_back(lightning);
      ModelSpec super =
          preset("nemotron-3-super", Family::llama, 88, 4096, 32, 2, 2688, 131072, 262144, false);
      super.qkv_bias = false;
      super.ffn_activation = FfnActivation::relu2;
      super.layer_pattern =
          "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*"
          "EMEMEMEME";
      super.mamba = {128, 64, 128, 8, 4, 128};
      super = moe_preset(super, 512, 22, 2688);
      super.moe.latent = 1024;
      super.moe.shared_experts = 1;
      super.moe.shared_ffn_hidden = 5376;
      super.moe.expert_score_bias = true;
      super.mtp_depth = 1;
      v.push_back(super);
    }
    // HF EleutherAI/gpt-neox-20b: 44 layers, hidden 6144, 64 heads, vocab 50432, MLP 4 x hidden.
    v.push_back(
        preset("gpt-neox-20b", Family::gpt_neox, 44, 6144, 64, 64, 24576, 50432, 2048, false));
    // The MLP is a 4-layer 256-wide perceptron for tests.
    {
      ModelSpec m = preset("mlp-small", Family::mlp, 4, 256, 1, 1, 256, 0, 1, false);
      m.tie_embeddings.reset();
      m.qkv_bias.reset();
      v.push_back(m);
    }
    return v;
  }();
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

namespace {

// The options of sliding windows, sinks, Gemma's norms, the RMSNorm MLP activations and hybrid
// Mamba-2 stacks.
template <typename Fail, typename Range>
void validate_layer_options(const ModelSpec& m, const Fail& fail, const Range& range) {
  const bool llama = m.family == Family::llama;
  range("window.window", m.window.window, 0, limits::max_seq);
  range("window.full_every", m.window.full_every, 0, m.layers);
  if (m.window.full_every > 0 && !m.window.enabled())
    fail("window.full_every needs window.window >= 1");
  if (!llama && (m.window.enabled() || m.attention_sinks || m.sandwich_norms ||
                 m.ffn_activation != FfnActivation::swiglu || m.hybrid())) {
    fail(
        "sliding windows, attention sinks, sandwich norms, ffn_activation and layer_pattern "
        "need family llama, not " +
        std::string(to_string(m.family)));
  }
  if (m.mla.enabled() && (m.window.enabled() || m.attention_sinks))
    fail("sliding windows and attention sinks apply to q/k/v attention, not to MLA");
  // NaN fails both comparisons.
  if (!(m.rotary_fraction > 0 && m.rotary_fraction <= 1))
    fail("rotary_fraction is " + std::to_string(m.rotary_fraction) +
         "; valid range above 0 to 1 (the share of a head's dimensions that rotary positions "
         "rotate)");
  if (m.rotary_fraction < 1 && !m.rotary())
    fail("rotary_fraction applies to rotary positions (families llama and gpt_neox), not " +
         std::string(to_string(m.family)));
  if (m.moe.biases && !m.moe.enabled()) fail("moe.biases needs moe.experts >= 1");
  if (!m.hybrid()) {
    if (m.mamba.enabled()) fail("mamba needs a layer_pattern with Mamba layers (M)");
    return;
  }
  if (static_cast<int64_t>(m.layer_pattern.size()) != m.layers)
    fail("layer_pattern has " + std::to_string(m.layer_pattern.size()) +
         " characters; it needs one per layer (" + std::to_string(m.layers) + ")");
  for (char k : m.layer_pattern) {
    if (k != 'M' && k != '*' && k != '-' && k != 'E')
      fail(std::string("layer_pattern character '") + k +
           "' is not modelled; valid: M (Mamba-2), * (attention), - (MLP), E (mixture of experts)");
  }
  if (m.mla.enabled() || m.sandwich_norms)
    fail("a hybrid layer_pattern has no MLA or sandwich norms");
  const bool has_moe = m.layer_pattern.find('E') != std::string::npos;
  if (has_moe != m.moe.enabled())
    fail(has_moe ? "layer_pattern has mixture-of-experts layers (E): moe.experts must be >= 1"
                 : "moe.experts is set but layer_pattern has no mixture-of-experts layer (E)");
  if (m.moe.first_dense_layers != 0 || m.moe.layer_step != 1 || !m.moe.dense_layers.empty())
    fail(
        "a hybrid layer_pattern names its MoE layers (E): moe.first_dense_layers, layer_step "
        "and dense_layers do not apply");
  if (m.mtp_depth > 0 && !has_moe)
    fail(
        "a hybrid stack's MTP module is an attention and an MoE layer (Nemotron 3's \"*E\"): "
        "mtp_depth needs mixture-of-experts layers (E)");
  const bool has_mamba = m.layer_pattern.find('M') != std::string::npos;
  if (has_mamba != m.mamba.enabled())
    fail(has_mamba ? "layer_pattern has Mamba layers (M): mamba.heads must be >= 1"
                   : "mamba.heads is set but layer_pattern has no Mamba layer (M)");
  if (!has_mamba) return;
  const MambaSpec& s = m.mamba;
  range("mamba.heads", s.heads, 1, limits::max_heads);
  range("mamba.head_dim", s.head_dim, 1, limits::max_head_dim);
  range("mamba.state", s.state, 1, limits::max_state);
  range("mamba.groups", s.groups, 1, s.heads);
  if (s.heads % s.groups != 0)
    fail("mamba.groups (" + std::to_string(s.groups) + ") must divide mamba.heads (" +
         std::to_string(s.heads) + ")");
  range("mamba.conv_kernel", s.conv_kernel, 1, limits::max_conv_kernel);
  range("mamba.chunk", s.chunk, 1, limits::max_seq);
  range("mamba d_inner (heads x head_dim)", s.d_inner(), 1, limits::max_ffn);
}

}  // namespace

void validate(const ModelSpec& m) {
  auto fail = [&](const std::string& what) { throw UserError("model '" + m.name + "': " + what); };
  auto range = [&](const std::string& field, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi)
      fail(field + " is " + std::to_string(v) + "; valid range " + std::to_string(lo) + " to " +
           std::to_string(hi));
  };
  range("layers", m.layers, 1, limits::max_layers);
  range("hidden", m.hidden, 1, limits::max_hidden);
  if (m.family == Family::mlp) {
    if (m.moe.enabled() || m.mla.enabled() || m.mtp_depth > 0 || m.qk_norm)
      fail("an MLP has no experts, attention or MTP modules");
    return;
  }
  range("heads", m.heads, 1, limits::max_heads);
  range("head_dim", m.head_dim_explicit, 0, limits::max_head_dim);
  if (m.head_dim_explicit == 0 && m.hidden % m.heads != 0) {
    fail("heads (" + std::to_string(m.heads) + ") must divide hidden (" + std::to_string(m.hidden) +
         ") unless head_dim is given");
  }
  if (m.kv_heads < 1 || m.heads % m.kv_heads != 0)
    fail("kv_heads (" + std::to_string(m.kv_heads) + ") must divide heads (" +
         std::to_string(m.heads) + ")");
  range("ffn_hidden", m.ffn_hidden, 1, limits::max_ffn);
  range("vocab", m.vocab, 1, limits::max_vocab);
  range("max_seq", m.max_seq, 1, limits::max_seq);
  if (!(m.dropout >= 0 && m.dropout < 1))
    fail("dropout is " + std::to_string(m.dropout) + "; valid range [0, 1)");
  const bool llama = m.family == Family::llama;
  if (m.qk_norm && m.mla.enabled()) fail("qk_norm applies to q/k/v attention, not to MLA");

  const MoeSpec& e = m.moe;
  range("moe.experts", e.experts, 0, limits::max_experts);
  if (e.enabled()) {
    if (!llama)
      fail("mixture-of-experts layers need family llama (SwiGLU experts), not " +
           std::string(to_string(m.family)));
    range("moe.top_k", e.top_k, 1, e.experts);
    range("moe.expert_ffn_hidden", e.expert_ffn_hidden, 1, limits::max_ffn);
    range("moe.shared_experts", e.shared_experts, 0, limits::max_shared_experts);
    if (e.shared_experts > 0)
      range("moe.shared_ffn_hidden", e.shared_ffn_hidden, 1, limits::max_ffn);
    range("moe.first_dense_layers", e.first_dense_layers, 0, m.layers - 1);
    range("moe.layer_step", e.layer_step, 1, m.layers);
    range("moe.latent", e.latent, 0, limits::max_hidden);
    for (int l : e.dense_layers) range("moe.dense_layers entry", l, 0, m.layers - 1);
    if (m.moe_layer_count() == 0)
      fail("moe.experts is " + std::to_string(e.experts) +
           " but no layer is an MoE layer (first_dense_layers, layer_step and dense_layers leave "
           "none)");
    const int64_t instances = static_cast<int64_t>(e.experts) * (m.moe_layer_count() + m.mtp_depth);
    if (instances > limits::max_expert_instances) {
      fail("experts x MoE layers is " + std::to_string(instances) + " (" +
           std::to_string(e.experts) + " experts x " + std::to_string(instances / e.experts) +
           " MoE and MTP layers); at most " + std::to_string(limits::max_expert_instances) +
           ", a work budget: each expert of each layer is parameter tensors that every simulated "
           "layout sets up (the largest published model has 23040: Kimi K2, 384 x 60)");
    }
  } else if (e.top_k != 0 || e.shared_experts != 0 || !e.dense_layers.empty() ||
             e.first_dense_layers != 0 || e.expert_score_bias || e.latent != 0) {
    fail(
        "moe.top_k, shared_experts, first_dense_layers, dense_layers, expert_score_bias and "
        "latent need moe.experts >= 1");
  }

  const MlaSpec& a = m.mla;
  range("mla.kv_lora_rank", a.kv_lora_rank, 0, limits::max_rank);
  if (a.enabled()) {
    if (!llama) fail("MLA attention needs family llama, not " + std::string(to_string(m.family)));
    range("mla.q_lora_rank", a.q_lora_rank, 0, limits::max_rank);
    range("mla.qk_nope_head_dim", a.qk_nope_head_dim, 1, limits::max_head_dim);
    range("mla.qk_rope_head_dim", a.qk_rope_head_dim, 0, limits::max_head_dim);
    range("mla.v_head_dim", a.v_head_dim, 1, limits::max_head_dim);
  } else if (a.q_lora_rank != 0 || a.qk_nope_head_dim != 0 || a.qk_rope_head_dim != 0 ||
             a.v_head_dim != 0) {
    fail(
        "mla.q_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim need mla.kv_lora_rank "
        ">= 1");
  }
  validate_layer_options(m, fail, range);
  range("mtp_depth", m.mtp_depth, 0, limits::max_mtp);
  if (m.mtp_depth > 0 && !llama)
    fail("multi-token prediction modules need family llama, not " +
         std::string(to_string(m.family)));
}

namespace {

// Appends parameter tensors in order; those added while `in_mtp` belong to an MTP module.
// Receives every parameter tensor, named `prefix` + `leaf`: listed (parameter_list), or only
// summed (parameter_count, which `list` asks of every preset: no name is built then, where
// DeepSeek-V3's 45,000 expert tensors made building names most of `list`'s time).
struct ParameterAdder {
  std::vector<ParameterTensor>* list = nullptr;  // null: sum only
  int64_t* sums = nullptr;                       // [outside MTP modules, inside them]
  bool in_mtp = false;
  bool names() const { return list != nullptr; }
  void operator()(const std::string& prefix, std::string_view leaf, int block, int64_t numel,
                  bool tp, int layer, ParamRole role = ParamRole::dense, int expert = -1) const {
    if (!list) {
      sums[in_mtp ? 1 : 0] += numel;
      return;
    }
    std::string name = prefix;
    name += leaf;
    list->push_back({std::move(name), block, numel, tp, layer, expert, role, in_mtp});
  }
};

// A decoder layer's attention: names under `n`, ModelWork block `b`, layer index `l`.
void add_attention(const ModelSpec& m, const ParameterAdder& add, const std::string& n, int b,
                   int l) {
  const int64_t h = m.hidden;
  if (m.mla.enabled()) {
    // DeepSeek-V3 (HF DeepseekV3Attention): q_a_proj, q_a_layernorm, q_b_proj,
    // kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; the down-projections are
    // replicated under tensor parallelism (Megatron-Core's MLA), the up-projections split.
    const MlaSpec& a = m.mla;
    const int64_t heads = m.heads;
    if (a.q_lora_rank > 0) {
      add(n, "attn.q_a.weight", b, h * a.q_lora_rank, false, l);
      add(n, "attn.q_a_norm.weight", b, a.q_lora_rank, false, l);
      add(n, "attn.q_b.weight", b, a.q_lora_rank * heads * a.qk_head_dim(), true, l);
    } else {
      add(n, "attn.q.weight", b, h * heads * a.qk_head_dim(), true, l);
    }
    add(n, "attn.kv_a.weight", b, h * (a.kv_lora_rank + a.qk_rope_head_dim), false, l);
    add(n, "attn.kv_a_norm.weight", b, a.kv_lora_rank, false, l);
    add(n, "attn.kv_b.weight", b, a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim),
        true, l);
    add(n, "attn.proj.weight", b, heads * a.v_head_dim * h, true, l);
    return;
  }
  const int64_t qkv = m.q_hidden() + 2 * m.kv_hidden();
  add(n, "attn.qkv.weight", b, h * qkv, true, l);
  if (m.has_qkv_bias()) add(n, "attn.qkv.bias", b, qkv, true, l);
  if (m.qk_norm) {
    add(n, "attn.q_norm.weight", b, m.head_dim(), false, l);
    add(n, "attn.k_norm.weight", b, m.head_dim(), false, l);
  }
  // gpt-oss: one sink logit per head (GptOssAttention.sinks), split with the heads under TP.
  if (m.attention_sinks) add(n, "attn.sinks", b, m.heads, true, l);
  add(n, "attn.proj.weight", b, m.q_hidden() * h, true, l);
  if (m.has_out_proj_bias()) add(n, "attn.proj.bias", b, h, false, l);
}

// An MoE layer's MLP: the router, each routed expert (fc1 = gate and up fused, fc2 = down), then
// the shared experts.
// LatentMoE adds the replicated latent projections last (Megatron-Core's fc1_latent_proj and
// fc2_latent_proj: parallel_mode "duplicated"), every EP rank holding them.
void add_moe_mlp(const ModelSpec& m, const ParameterAdder& add, const std::string& n, int b,
                 int l) {
  const int64_t h = m.hidden;
  const MoeSpec& e = m.moe;
  const int64_t width = e.routed_width(h), gates = m.gated_mlp() ? 2 : 1;
  add(n, "mlp.router.weight", b, static_cast<int64_t>(e.experts) * h, false, l, ParamRole::router);
  if (e.biases) add(n, "mlp.router.bias", b, e.experts, false, l, ParamRole::router);
  if (e.expert_score_bias)
    add(n, "mlp.router.expert_bias", b, e.experts, false, l, ParamRole::router);
  for (int x = 0; x < e.experts; ++x) {
    const std::string en = add.names() ? n + "mlp.experts." + std::to_string(x) + "." : n;
    add(en, "fc1.weight", b, width * gates * e.expert_ffn_hidden, true, l, ParamRole::routed_expert,
        x);
    if (e.biases)
      add(en, "fc1.bias", b, gates * e.expert_ffn_hidden, true, l, ParamRole::routed_expert, x);
    add(en, "fc2.weight", b, e.expert_ffn_hidden * width, true, l, ParamRole::routed_expert, x);
    // fc2's bias is added once per token copy, after the partial sums: not split by expert TP.
    if (e.biases) add(en, "fc2.bias", b, width, false, l, ParamRole::routed_expert, x);
  }
  for (int x = 0; x < e.shared_experts; ++x) {
    const std::string sn = add.names() ? n + "mlp.shared_experts." + std::to_string(x) + "." : n;
    add(sn, "fc1.weight", b, h * gates * e.shared_ffn_hidden, true, l, ParamRole::shared_expert, x);
    add(sn, "fc2.weight", b, e.shared_ffn_hidden * h, true, l, ParamRole::shared_expert, x);
  }
  if (e.latent > 0) {
    add(n, "mlp.fc1_latent_proj.weight", b, h * e.latent, false, l);
    add(n, "mlp.fc2_latent_proj.weight", b, e.latent * h, false, l);
  }
}

void add_dense_mlp(const ModelSpec& m, const ParameterAdder& add, const std::string& n, int b,
                   int l) {
  const int64_t h = m.hidden;
  const int64_t fc1 = m.gated_mlp() ? 2 * m.ffn_hidden : m.ffn_hidden;
  add(n, "mlp.fc1.weight", b, h * fc1, true, l);
  if (m.has_bias()) add(n, "mlp.fc1.bias", b, fc1, true, l);
  add(n, "mlp.fc2.weight", b, m.ffn_hidden * h, true, l);
  if (m.has_bias()) add(n, "mlp.fc2.bias", b, h, false, l);
}

// A Mamba-2 mixer (MambaSpec), every tensor split by heads under TP (Megatron's MambaMixer).
void add_mamba(const ModelSpec& m, const ParameterAdder& add, const std::string& n, int b, int l) {
  const MambaSpec& s = m.mamba;
  const std::string x = n + "mixer.";
  add(x, "in_proj.weight", b, m.hidden * s.in_proj_width(), true, l);
  add(x, "conv1d.weight", b, s.conv_dim() * s.conv_kernel, true, l);
  add(x, "conv1d.bias", b, s.conv_dim(), true, l);
  add(x, "dt_bias", b, s.heads, true, l);
  add(x, "A_log", b, s.heads, true, l);
  add(x, "D", b, s.heads, true, l);
  add(x, "norm.weight", b, s.d_inner(), true, l);
  add(x, "out_proj.weight", b, s.d_inner() * m.hidden, true, l);
}

// A hybrid stack's layer: its norm and its one mixer (ModelSpec::layer_pattern).
void add_hybrid_layer(const ModelSpec& m, const ParameterAdder& add, const std::string& n, int b,
                      int l) {
  add(n, "ln_1.weight", b, m.hidden, false, l);
  switch (m.hybrid_layer(l)) {
    case 'M':
      add_mamba(m, add, n, b, l);
      break;
    case '*':
      add_attention(m, add, n, b, l);
      break;
    case 'E':
      add_moe_mlp(m, add, n, b, l);
      break;
    default:
      add_dense_mlp(m, add, n, b, l);
      break;
  }
}

// One decoder layer: names under `n`, ModelWork block `b`, layer index `l`. Gemma's sandwich
// norms add post_attention_layernorm (ln_attn_out) and post_feedforward_layernorm (ln_mlp_out).
void add_layer(const ModelSpec& m, const ParameterAdder& add, const std::string& n, int b, int l) {
  if (m.hybrid_layer(l) != '\0') {
    add_hybrid_layer(m, add, n, b, l);
    return;
  }
  const int64_t h = m.hidden;
  const bool bias = m.has_bias();
  add(n, "ln_1.weight", b, h, false, l);
  if (bias) add(n, "ln_1.bias", b, h, false, l);
  add_attention(m, add, n, b, l);
  if (m.sandwich_norms) add(n, "ln_attn_out.weight", b, h, false, l);
  add(n, "ln_2.weight", b, h, false, l);
  if (bias) add(n, "ln_2.bias", b, h, false, l);
  if (m.is_moe_layer(l)) {
    add_moe_mlp(m, add, n, b, l);
  } else {
    add_dense_mlp(m, add, n, b, l);
  }
  if (m.sandwich_norms) add(n, "ln_mlp_out.weight", b, h, false, l);
}

// Every parameter tensor of `m`, in order, to `add`. Block 0 is the embedding, blocks 1..L the
// layers, block L+1 the head (final norm, LM head).
void add_parameters(const ModelSpec& m, ParameterAdder& add) {
  const int64_t h = m.hidden;
  const std::string none;
  if (m.family == Family::mlp) {
    for (int l = 0; l < m.layers; ++l) {
      const std::string n = add.names() ? "fc" + std::to_string(l) : none;
      add(n, ".weight", l, h * h, false, l);
      add(n, ".bias", l, h, false, l);
    }
    return;
  }
  const bool bias = m.has_bias();
  add(none, "wte", 0, m.vocab * h, true, -1);
  if (m.learned_positions()) add(none, "wpe", 0, m.max_seq * h, false, -1);
  for (int l = 0; l < m.layers; ++l)
    add_layer(m, add, add.names() ? "h." + std::to_string(l) + "." : none, l + 1, l);
  const int head = m.layers + 1;
  add(none, "ln_f.weight", head, h, false, -1);
  if (bias) add(none, "ln_f.bias", head, h, false, -1);
  if (!m.tied_embeddings()) add(none, "lm_head.weight", head, m.vocab * h, true, -1);
  // DeepSeek-V3 MTP module k (HF layer 61 + k): enorm, hnorm, eh_proj, a decoder layer,
  // shared_head.norm; embed_tokens and shared_head.head are the main model's.
  add.in_mtp = true;
  for (int k = 0; k < m.mtp_depth; ++k) {
    const std::string n = add.names() ? "mtp." + std::to_string(k) + "." : none;
    const int l = m.layers + k;
    add(n, "enorm.weight", head, h, false, l);
    add(n, "hnorm.weight", head, h, false, l);
    add(n, "eh_proj.weight", head, 2 * h * h, true, l);
    add_layer(m, add, n, head, l);
    add(n, "norm.weight", head, h, false, l);
  }
}

// [outside the MTP modules, inside them]
std::array<int64_t, 2> parameter_sums(const ModelSpec& m) {
  std::array<int64_t, 2> sums{};
  ParameterAdder add{.sums = sums.data()};
  add_parameters(m, add);
  return sums;
}

}  // namespace

std::vector<ParameterTensor> parameter_list(const ModelSpec& m) {
  std::vector<ParameterTensor> p;
  ParameterAdder add{.list = &p};
  add_parameters(m, add);
  return p;
}

int64_t parameter_count(const ModelSpec& m) { return parameter_sums(m)[0]; }

int64_t mtp_parameter_count(const ModelSpec& m) { return parameter_sums(m)[1]; }

void check_sequence_fits(const ModelSpec& m, int64_t seq, const std::string& what) {
  if (m.learned_positions() && seq > m.max_seq) {
    throw UserError(what + " " + std::to_string(seq) + " exceeds " + m.name + "'s context of " +
                    std::to_string(m.max_seq) + " (its learned positions end there)");
  }
}

int64_t active_parameter_count(const ModelSpec& m) {
  // Every routed expert of a layer has the same size, so a token's share of a layer's routed
  // weights is top_k / experts of them, exactly.
  // Block 0 holds the input embedding (and GPT's learned positions); a tied embedding is also
  // the output head and stays.
  const bool drop_lookup = m.active_count == ActiveCount::without_input_embedding;
  int64_t n = 0, routed = 0;
  for (const auto& t : parameter_list(m)) {
    if (t.mtp) continue;
    if (drop_lookup && t.block == 0 && t.layer == -1 && !(m.tied_embeddings() && t.name == "wte"))
      continue;
    if (t.role == ParamRole::routed_expert)
      routed += t.numel;
    else
      n += t.numel;
  }
  if (m.moe.enabled()) n += routed / m.moe.experts * m.moe.top_k;
  return n;
}

}  // namespace cs::model
