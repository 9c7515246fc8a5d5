// Models described by their dimensions: transformer decoders and a small MLP for tests.
//   gpt:      GPT-2/GPT-3: LayerNorm and biases everywhere, GELU MLP, learned positions, tied
//             embeddings.
//   llama:    Llama 2/3.x, Mistral, Mixtral, Qwen2/2.5/3 (dense and MoE), DeepSeek-V3: RMSNorm,
//             SwiGLU, rotary positions, grouped-query attention, no biases, untied embeddings;
//             options: tied embeddings (Llama 3.2 1B/3B), q/k/v biases (Qwen2), per-head q/k
//             RMSNorm (Qwen3), an explicit head size (Qwen3), mixture-of-experts MLPs, MLA
//             attention and multi-token prediction (DeepSeek-V3).
//   gpt_neox: GPT-NeoX/Pythia: LayerNorm and biases everywhere, GELU MLP, rotary positions,
//             parallel residual (attention and MLP read the same input), untied embeddings.
//   mlp:      a stack of square linear layers with biases.
//             Also, by options (the Hugging Face importer sets them): sliding-window attention
//             (Mistral, Phi-3, Gemma 3, gpt-oss), attention sinks and biases (gpt-oss), GeGLU and
//             Gemma's sandwich norms, and hybrid Mamba-2 / attention / MLP stacks (Nemotron-H).
// Parameter counts equal the Hugging Face checkpoints' (tests/model_test.cpp,
// tests/interop_test.cpp and tests/model_families_test.cpp derive them by hand). Limits: one
// attention kind and one expert size per model; DeepSeek's node-limited routing (n_group,
// topk_group) changes no parameter and is not described. validate() range-checks every field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "taskgraph/task_graph.h"

namespace cs::model {

enum class Family : uint8_t { gpt, llama, mlp, gpt_neox };
std::string_view to_string(Family f);

// How a GELU MLP (the gpt and gpt_neox families) computes its activation (`model.activation`,
// Hugging Face's activation_function / hidden_act names). It matters where a stack does not fuse
// elementwise chains (PyTorch eager): gelu_new, the tanh approximation written as eight tensor
// ops (GPT-2's own code), runs as eight kernels forward and ten backward in fp32 under autocast;
// gelu_pytorch_tanh (PyTorch's tanh GELU) and gelu (exact, erf) are one kernel each way.
enum class Activation : uint8_t { gelu_new, gelu_pytorch_tanh, gelu };
// Every activation with its name: the scenario reader's and the Hugging Face importer's choices.
const std::vector<std::pair<std::string, Activation>>& activation_names();
std::string_view to_string(Activation a);

// Mixture-of-experts MLP (Mixtral, Qwen3-MoE, DeepSeek-V3, Nemotron 3). In an MoE layer the MLP
// is a router (a [experts x hidden] linear, no bias; DeepSeek-V3 and Nemotron 3 add a per-expert
// score-correction bias), `experts` routed experts of inner size `expert_ffn_hidden` of which
// each token uses `top_k`, and `shared_experts` experts of inner size `shared_ffn_hidden` that
// every token uses. Experts have the model's MLP activation: gated SwiGLU (fc1 2 x inner wide),
// or Nemotron 3's squared ReLU, not gated. Dense layers keep ModelSpec::ffn_hidden.
struct MoeSpec {
  int experts = 0;                // routed experts per MoE layer; 0: a dense model
  int top_k = 0;                  // routed experts per token (num_experts_per_tok)
  int64_t expert_ffn_hidden = 0;  // one routed expert's inner size (moe_intermediate_size)
  int shared_experts = 0;         // DeepSeek n_shared_experts
  int64_t shared_ffn_hidden =
      0;                       // one shared expert's inner size (DeepSeek: moe_intermediate_size)
  int first_dense_layers = 0;  // layers [0, n) are dense (DeepSeek first_k_dense_replace)
  int layer_step = 1;  // layer l is MoE only when (l + 1) % step == 0 (Qwen decoder_sparse_step)
  std::vector<int> dense_layers;  // further dense layers, 0-based (Qwen mlp_only_layers)
  bool expert_score_bias =
      false;            // DeepSeek-V3 e_score_correction_bias: `experts` floats per MoE layer
  bool biases = false;  // gpt-oss: biases on the router and on every expert's fc1 and fc2
  // LatentMoE (Nemotron 3 Super and Ultra; Megatron-Core MoELayer's moe_latent_size): a
  // replicated fc1_latent_proj [h -> latent] after the router, the routed experts working at
  // width `latent` (dispatch and combine move latent-wide tokens), a replicated fc2_latent_proj
  // [latent -> h] after the combine; shared experts stay at width h. 0: experts work at h.
  int64_t latent = 0;
  bool enabled() const { return experts > 0; }
  // The width the routed experts read and write, and the dispatched tokens have.
  int64_t routed_width(int64_t hidden) const { return latent > 0 ? latent : hidden; }
};

// Multi-head latent attention (DeepSeek-V2/V3): queries through a rank-q_lora_rank bottleneck
// (q_a_proj, RMSNorm, q_b_proj to heads x (nope + rope)), keys and values through a shared
// rank-kv_lora_rank latent (kv_a_proj_with_mqa to kv_lora_rank + rope, RMSNorm, kv_b_proj to
// heads x (nope + v)), o_proj from heads x v_head_dim. Replaces q/k/v/o; kv_heads is unused.
struct MlaSpec {
  int64_t q_lora_rank = 0;       // 0: queries projected at full rank (DeepSeek-V2-Lite)
  int64_t kv_lora_rank = 0;      // 0: MLA off
  int64_t qk_nope_head_dim = 0;  // per-head query/key size without rotary positions
  int64_t qk_rope_head_dim = 0;  // per-head rotary part (the key's is shared by all heads)
  int64_t v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

// The MLP activation of the RMSNorm models (family llama; the GELU families use Activation):
//   swiglu          silu(gate) * up (Llama and most others)
//   geglu           gelu_pytorch_tanh(gate) * up (Gemma 2/3: hidden_activation)
//   clamped_swiglu  gpt-oss: gate clamped above at swiglu_limit, up clamped to +-limit,
//                   (up + 1) * gate * sigmoid(1.702 gate)
//   relu2           not gated: relu(x)^2 on fc1's output (Nemotron-H's mlp_hidden_act)
enum class FfnActivation : uint8_t { swiglu, geglu, clamped_swiglu, relu2 };

// How the model's code computes q, k and v (and a gated MLP's gate and up): it matters where each
// tensor op is its own kernel launch (PyTorch eager), not to the FLOPs or the parameters.
//   fused         one linear, split by views (GPT-2's c_attn.split, GPT-NeoX's qkv.chunk,
//   Megatron's
//                 linear_qkv and linear_fc1): backward concatenates the parts' gradients (a cat).
//   separate      one linear per tensor (Hugging Face's Llama family: q_proj, k_proj, v_proj,
//                 gate_proj, up_proj; TorchTitan's wq, wk, wv, w1, w3): three GEMMs where fused
//                 runs one, each casting the norm's fp32 output under autocast.
//   fused_sliced  one linear, q, k and v cut out by slicing (Phi-3's qkv_proj): backward runs one
//                 slice_backward per part (a zero-filled full-width tensor and a copy) and adds
//                 them.
enum class Projections : uint8_t { fused, separate, fused_sliced };
const std::vector<std::pair<std::string, Projections>>& projection_names();
std::string_view to_string(Projections p);

// Which keys a query attends. A windowed layer's query at position i attends the
// min(i + 1, window) latest keys (itself included): Mistral 7B v0.1 every layer at 4096, Phi-3
// mini at 2047, Gemma 3 five windowed layers (1024; 512 for 1B) to one full, gpt-oss alternating
// windowed (128) and full, starting windowed.
struct WindowSpec {
  int64_t window = 0;  // keys a windowed layer's query attends at most; 0: every layer full
  int full_every = 0;  // 0: every layer windowed; n: layer l is full when (l + 1) % n == 0
  bool enabled() const { return window > 0; }
};

// A Mamba-2 mixer (Dao and Gu 2024, "Transformers are SSMs", arXiv 2405.21060; state-spaces/mamba
// mamba_ssm/modules/mamba2.py, Megatron-LM megatron/core/ssm/mamba_mixer.py, transformers'
// NemotronHMamba2Mixer): in_proj [h -> 2 d_inner + 2 groups state + heads] (z, x, B, C, dt),
// a depthwise causal conv1d of conv_kernel taps (with bias) over x, B and C, the SSD chunked scan
// (heads of head_dim channels, a state of `state` per channel, B and C shared by the heads of a
// group), dt_bias, A_log and D per head, a gated RMSNorm over d_inner (grouped by `groups`) and
// out_proj [d_inner -> h], no linear biases (Nemotron-H's use_bias false).
struct MambaSpec {
  int heads = 0;            // mamba_num_heads; 0: no Mamba layers
  int64_t head_dim = 0;     // mamba_head_dim (P)
  int64_t state = 0;        // ssm_state_size (N)
  int groups = 1;           // n_groups (G)
  int64_t conv_kernel = 4;  // conv_kernel (K)
  int64_t chunk = 128;      // chunk_size (Q) of the SSD scan
  bool enabled() const { return heads > 0; }
  int64_t d_inner() const { return heads * head_dim; }
  int64_t conv_dim() const { return d_inner() + 2 * groups * state; }       // x, B, C
  int64_t in_proj_width() const { return d_inner() + conv_dim() + heads; }  // z, xBC, dt
};

// Valid ranges, shared with the importers so that their errors quote the same bounds. Each is far
// above any published model (largest today: hidden 18432, 384 experts, vocab 262144, 126
// layers) and keeps every tensor and total inside int64 and the parameter list to a few million
// entries.
namespace limits {
inline constexpr int64_t max_layers = 4096;
inline constexpr int64_t max_hidden = 65536;
inline constexpr int64_t max_heads = 4096;
inline constexpr int64_t max_head_dim = 4096;
inline constexpr int64_t max_ffn = 524288;
inline constexpr int64_t max_vocab = int64_t{1} << 23;  // 8,388,608
inline constexpr int64_t max_seq = int64_t{1} << 24;    // 16,777,216 tokens
inline constexpr int64_t max_experts = 4096;
// Routed experts x (MoE layers + MTP layers): a work budget. Each is its own parameter tensors, set
// up anew for every layout simulated: 2^20 of them (4,096 experts x 256 layers) took 45 CPU-s per
// simulate and plan ran past 5 minutes ("hangs", issue 34); 2^16 take 0.4 CPU-s and 10 for plan.
// The largest published model has 23,040 (Kimi K2: 384 experts x 60 MoE layers).
inline constexpr int64_t max_expert_instances = int64_t{1} << 16;
inline constexpr int64_t max_shared_experts = 64;
inline constexpr int64_t max_rank = 65536;  // MLA low ranks
inline constexpr int64_t max_mtp = 16;
inline constexpr int64_t max_state = 4096;  // Mamba-2 ssm_state_size
inline constexpr int64_t max_conv_kernel = 64;
}  // namespace limits

// Which weights a model's publisher counts as "activated" per token (active_parameter_count).
// Vendors differ, and each published figure is reproduced only under its own convention:
enum class ActiveCount : uint8_t {
  // Every weight a token's forward pass reads, the embedding table whole: Mistral (Mixtral 8x7B
  // "12.9B") and Qwen (Qwen3-30B-A3B "3.3B") count this way; the default.
  every_weight_used,
  // The same less the input embedding (and learned positions): a row lookup, no arithmetic. A
  // tied embedding stays, as it is also the output head. DeepSeek counts this way: V3's
  // README_WEIGHTS.md, "Activation parameters: 36.6B (including 0.9B for the output Head)".
  without_input_embedding,
};

struct ModelSpec {
  std::string name;
  Family family = Family::gpt;
  int layers = 0;
  int64_t hidden = 0;
  int heads = 1;
  int kv_heads = 1;        // == heads without grouped-query attention
  int64_t ffn_hidden = 0;  // MLP inner size (dense layers; MoE layers use moe)
  int64_t vocab = 0;       // 0 for the MLP
  int64_t max_seq = 0;
  double dropout = 0.0;  // GPT-2: 0.1, Llama: 0
  // Set explicitly by presets and importers; unset means the family's default (gpt: tied;
  // llama and gpt_neox: untied), which is what a scenario's custom model gets.
  std::optional<bool> tie_embeddings;
  std::optional<bool> qkv_bias;   // biases on q, k and v only (Qwen2); unset: has_bias()
  int64_t head_dim_explicit = 0;  // 0: hidden / heads; Qwen3 sets 128 (q is heads x 128 wide)
  bool qk_norm = false;           // Qwen3: RMSNorm over each head's q and k (head_dim weights each)
  // Unset: the family's code (llama: separate, as Hugging Face writes it; gpt, gpt_neox: fused).
  std::optional<Projections> projections;
  // Share of each head's dimensions that carries rotary positions (GPT-NeoX's rotary_pct, Phi's
  // partial_rotary_factor). Below 1 the eager code slices each head into a rotated and a passed
  // part and concatenates them again; the rotary pass itself is priced over the whole head.
  double rotary_fraction = 1.0;
  MoeSpec moe;
  MlaSpec mla;
  // Multi-token prediction modules (DeepSeek-V3 num_nextn_predict_layers). Module k: RMSNorms of
  // the hidden state and of the next token's embedding, a [hidden x 2 hidden] projection, one
  // decoder layer (index layers + k, MoE where is_moe_layer says so) and a final RMSNorm; the
  // embedding and the output head are shared with the main model and not counted again.
  int mtp_depth = 0;
  // GELU MLPs only; unset: gelu_new (GPT-2's), what the model was priced as before the key.
  std::optional<Activation> activation;
  ActiveCount active_count =
      ActiveCount::every_weight_used;  // how its publisher counts active parameters
  FfnActivation ffn_activation = FfnActivation::swiglu;  // family llama's MLP
  WindowSpec window;
  bool attention_sinks = false;       // gpt-oss: one learned logit per head in the softmax
  std::optional<bool> out_proj_bias;  // o_proj's bias (gpt-oss); unset: has_bias()
  bool sandwich_norms = false;        // Gemma 2/3: RMSNorm after attention and after the MLP too
  // Hybrid stacks (Nemotron-H's hybrid_override_pattern): one character per layer, M a Mamba-2
  // mixer, * attention, - an MLP, E a mixture-of-experts MLP (Nemotron 3), each a layer of its
  // own (norm, mixer, residual add); empty: every layer is attention then MLP. A hybrid model's
  // MTP module (Nemotron 3's mtp_hybrid_override_pattern "*E") is an attention layer and an MoE
  // layer: the same weights as one decoder layer with an MoE MLP, which is how it is built.
  std::string layer_pattern;
  MambaSpec mamba;

  bool gated_mlp() const {
    return family == Family::llama && ffn_activation != FfnActivation::relu2;
  }
  bool rms_norm() const { return family == Family::llama; }
  // The MLP's GELU is a chain of tensor ops (gelu_new) rather than one kernel.
  bool gelu_as_tensor_ops() const {
    return !rms_norm() && activation.value_or(Activation::gelu_new) == Activation::gelu_new;
  }
  bool has_bias() const { return family == Family::gpt || family == Family::gpt_neox; }
  bool has_qkv_bias() const { return qkv_bias.value_or(has_bias()); }
  bool has_out_proj_bias() const { return out_proj_bias.value_or(has_bias()); }
  bool tied_embeddings() const { return tie_embeddings.value_or(family == Family::gpt); }
  bool learned_positions() const { return family == Family::gpt; }
  bool rotary() const { return family == Family::llama || family == Family::gpt_neox; }
  bool parallel_residual() const { return family == Family::gpt_neox; }
  Projections projection_code() const {
    return projections.value_or(family == Family::llama ? Projections::separate
                                                        : Projections::fused);
  }
  int64_t head_dim() const { return head_dim_explicit > 0 ? head_dim_explicit : hidden / heads; }
  int64_t q_hidden() const { return head_dim() * heads; }  // width of q and of o_proj's input
  int64_t kv_hidden() const { return head_dim() * kv_heads; }
  // Decoder layer l (0-based; MTP layers are layers + k) has an MoE MLP.
  bool is_moe_layer(int l) const;
  // Keys a query of layer l attends at most (0: its whole causal prefix).
  int64_t attention_window(int l) const;
  bool hybrid() const { return !layer_pattern.empty(); }
  // Layer l's character in layer_pattern ('M', '*', '-', 'E'); 0 for a transformer layer (and
  // for an MTP module's layer, l >= layers).
  char hybrid_layer(int l) const;
  int moe_layer_count() const;  // among the main model's layers
};

// What a parameter tensor belongs to, for expert-parallel sharding.
enum class ParamRole : uint8_t {
  dense,          // attention, norms, dense MLPs, embeddings, MTP projections
  router,         // an MoE layer's gate (and DeepSeek's per-expert score bias)
  routed_expert,  // one routed expert's weights: sharded by EP
  shared_expert,  // a shared expert's weights: every EP rank holds them
  lora_adapter,   // a LoRA adapter's A or B (models/layers/lora.h): every EP rank holds them
};

struct ParameterTensor {
  std::string name;
  int block = 0;  // index into ModelWork::blocks (0 = embedding for transformers)
  int64_t numel = 0;
  // Megatron tensor parallelism splits this tensor across the TP ranks (column/row-parallel
  // weights, column-parallel biases, the vocab-parallel embedding and LM head, experts' and
  // shared experts' weights); norms, row-parallel biases, routers and learned positions are
  // replicated.
  bool tp_split = false;
  int64_t numel_per_tp_rank(int tp) const { return tp_split ? numel / tp : numel; }
  int layer = -1;   // decoder layer (MTP module k: layers + k); -1: embedding, final norm, head
  int expert = -1;  // routed_expert: 0..experts-1; shared_expert: 0..shared_experts-1; else -1
  ParamRole role = ParamRole::dense;
  bool mtp = false;  // belongs to a multi-token prediction module
  // LoRA fine-tuning freezes every weight of the base model (models/layers/lora.h): no gradient,
  // no optimizer state, no weight-gradient GEMM. Set by add_lora_adapters only.
  bool frozen = false;
  // The one answer to "does this weight train?" for the model's ops, the step's gradient
  // reduction and the memory accounting.
  bool trainable() const { return !frozen; }
  // Elements one rank holds: routed experts split over the expert-tensor-parallel group (etp),
  // other TP-split tensors over tp.
  int64_t numel_per_rank(int tp, int etp) const {
    return role == ParamRole::routed_expert && tp_split ? numel / etp : numel_per_tp_rank(tp);
  }
};

// Parameters in the order of PyTorch's model.parameters() (what DDP buckets in reverse) for the
// dense families; MoE layers list the router, then each routed expert (fc1 = gate and up fused,
// fc2 = down), then the shared experts. MTP modules come last, in block layers + 1 (the head's
// block: they run on the last pipeline stage, beside the output head they share).
std::vector<ParameterTensor> parameter_list(const ModelSpec& m);
// Every parameter except the MTP modules': the figure model cards quote (DeepSeek-V3: 671B).
int64_t parameter_count(const ModelSpec& m);
// The MTP modules' own parameters (DeepSeek-V3: 11.6B; its checkpoint's "14B" also stores copies
// of the shared embedding and head, 1.85B).
int64_t mtp_parameter_count(const ModelSpec& m);
// Parameters one token's forward pass uses, MTP excluded, as the model's publisher counts them
// (ModelSpec::active_count): parameter_count less the routed experts it is not sent to (each MoE
// layer counts top_k of its experts), less the input embedding under without_input_embedding.
// Mixtral 8x7B: 12.9B; Qwen3-30B-A3B: 3.3B; DeepSeek-V3: 36.6B (the report's "37B" rounded; with
// the input embedding it would be 37.6B).
int64_t active_parameter_count(const ModelSpec& m);

// Presets: gpt2-small/medium/large/xl, gpt3-175b, llama2-7b/13b/70b, llama3-8b/70b/405b,
// llama3.1-8b/70b/405b, llama3.2-1b/3b, mistral-7b, mixtral-8x7b/8x22b, qwen2.5-7b/32b, qwen3-8b,
// qwen3-30b-a3b, qwen3-235b-a22b, deepseek-v3, kimi-k2, gpt-oss-120b/20b, gpt-neox-20b,
// mlp-small.
const std::vector<ModelSpec>& model_presets();
const ModelSpec& find_model_preset(const std::string& name);  // UserError lists valid names
// Range-checks every field (naming the field and its valid range) and the relations between them
// (heads divide hidden unless head_dim is explicit, kv_heads divide heads, top_k <= experts, at
// least one MoE layer when experts > 0, ...); UserError otherwise.
void validate(const ModelSpec& m);
// A sequence of `seq` tokens needs a position for each: learned absolute positions end at the
// context (max_seq), rotary ones extrapolate (TorchTitan trains Llama 3.1 at 262,144 tokens, twice
// its 131,072-token context). UserError naming `what` ("seq_len", "--seq") otherwise.
void check_sequence_fits(const ModelSpec& m, int64_t seq, const std::string& what);

}  // namespace cs::model
