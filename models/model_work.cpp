#include "models/model_work.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "models/layers/embedding.h"
#include "models/layers/lora.h"
#include "models/layers/mamba.h"
#include "models/layers/mlp.h"
#include "models/layers/multi_token_prediction.h"
#include "models/layers/norm.h"
#include "models/layers/op_builder.h"
#include "models/layers/transformer_layer.h"

namespace cs::model {

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::amp_fp16:
      return "amp_fp16";
    case Precision::amp_bf16:
      return "amp_bf16";
    case Precision::mixed_fp16:
      return "mixed_fp16";
    case Precision::mixed_bf16:
      return "mixed_bf16";
    case Precision::tf32:
      return "tf32";
    case Precision::fp8:
      return "fp8";
    case Precision::fp8_rowwise:
      return "fp8_rowwise";
    case Precision::mxfp8:
      return "mxfp8";
    case Precision::nvfp4:
      return "nvfp4";
  }
  return "?";
}
std::string_view to_string(MoeDispatcher d) {
  return d == MoeDispatcher::alltoall ? "alltoall" : "allgather";
}
std::string_view to_string(CpComm c) {
  switch (c) {
    case CpComm::p2p:
      return "p2p";
    case CpComm::a2a:
      return "a2a";
    case CpComm::a2a_p2p:
      return "a2a+p2p";
  }
  return "p2p";
}
std::string_view to_string(AttentionImpl a) {
  return a == AttentionImpl::fused ? "fused" : "eager";
}
std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
    case Recompute::op_selective:
      return "op_selective";
  }
  return "?";
}

namespace {

// mixed_bf16 with its linear layers' GEMMs in `gemm` under a low-precision recipe.
PrecisionInfo low_precision_gemms(ir::DType gemm, Scaling s) {
  PrecisionInfo p{ir::DType::bf16, gemm, 2, 2, 12, 2, false};
  p.fp8_weight_bytes = static_cast<int64_t>(weight_copy_bytes_per_param(s));
  p.scaling = s;
  return p;
}

}  // namespace

PrecisionInfo precision_info(Precision p) {
  switch (p) {
    case Precision::fp32:
      return {ir::DType::fp32, ir::DType::fp32, 4, 4, 8, 4, false};
    case Precision::amp_fp16:
      return {ir::DType::fp16, ir::DType::fp16, 4, 4, 8, 2, true};
    case Precision::amp_bf16:
      return {ir::DType::bf16, ir::DType::bf16, 4, 4, 8, 2, true};
    case Precision::mixed_fp16:
      return {ir::DType::fp16, ir::DType::fp16, 2, 2, 12, 2, false};
    case Precision::mixed_bf16:
      return {ir::DType::bf16, ir::DType::bf16, 2, 2, 12, 2, false};
    case Precision::tf32:
      return {ir::DType::tf32, ir::DType::tf32, 4, 4, 8, 4, false};
    case Precision::fp8:
      return low_precision_gemms(ir::DType::fp8, Scaling::per_tensor);
    case Precision::fp8_rowwise:
      return low_precision_gemms(ir::DType::fp8, Scaling::rowwise);
    case Precision::mxfp8:
      return low_precision_gemms(ir::DType::fp8, Scaling::mxfp8);
    case Precision::nvfp4:
      return low_precision_gemms(ir::DType::fp4, Scaling::nvfp4);
  }
  return {ir::DType::fp32, ir::DType::fp32, 4, 4, 8, 4, false};
}

int64_t PrecisionInfo::weight_copy_bytes(int64_t numel) const {
  return static_cast<int64_t>(
      std::ceil(static_cast<double>(numel) * weight_copy_bytes_per_param(scaling)));
}

int64_t LinearQuantization::cast_bytes(int64_t elements) const {
  return std::llround(static_cast<double>(elements) * bytes_per_element);
}

// Each recipe's casts per linear layer (T tokens, k in, n out), reading the 16-bit tensor (2 B
// per element):
//   per_tensor (Transformer Engine's DelayedScaling): the forward casts the input [T, k] and the
//     weight [k, n], the backward the output gradient [T, n]; dgrad and wgrad reuse the forward's
//     FP8 input and weight. 3 B per element (read 2, write 1; the amax rides along).
//   rowwise (torchao): every operand is scaled along the axis its GEMM reduces over, so the
//     backward casts the output gradient twice (per row for dgrad, per column for wgrad), the
//     input again per column for wgrad and the weight again along its other axis for dgrad.
//     The backward GEMMs accumulate in full precision (use_fast_accum off), where PyTorch's
//     rowwise CUTLASS kernel is slow, so torchao runs them as cuBLAS tensorwise GEMMs with unit
//     scales and multiplies the output by the row and column scales afterwards
//     (torchao/float8/float8_ops.py, addmm_float8_unwrapped; under torch.compile one more
//     kernel per GEMM, pytorch/ao#2184).
//   mxfp8 (TE MXFP8BlockScaling): a tensor used as is takes 1x32 blocks, used transposed 32x1;
//     the columnwise copy cannot be derived from the rowwise one, both are quantized from the
//     16-bit tensor (TE docs, features/low_precision_training/mxfp8, "Handling transposes"), in
//     one kernel writing both. The forward casts input and weight (rowwise for fprop, columnwise
//     for wgrad and dgrad), the backward the output gradient (rowwise for dgrad, columnwise for
//     wgrad). Per element: read 2, write 2 x (1 B of E4M3 + 1/32 B of E8M0 scale) = 4.0625 B.
//   nvfp4 (TE NVFP4BlockScaling): the same two copies, each E2M1 (1/2 B) with an E4M3 scale per
//     16 elements (1/16 B): weights in 16x16 blocks, activations and gradients in 1x16, the wgrad
//     operands through a 16-point random Hadamard transform inside the cast (TE docs,
//     features/low_precision_training/nvfp4). The fp32 scale per tensor needs its amax before any
//     block is scaled: one more read. Per element: 2 + 2 + 2 x (1/2 + 1/16) = 5.125 B.
// Every linear of a decoder layer runs all three GEMMs (fprop, dgrad, wgrad) in the recipe's
// format: the TE recipes quantize each te.Linear under the autocast. NVIDIA's NVFP4 pretraining
// (arXiv 2509.25149, appendix A.1) also left the linears of its 12B model's first two and last
// eight blocks in BF16 (16% of them), a per-layer choice of the training run: not modelled.
LinearQuantization linear_quantization(Scaling s, int64_t tokens, int64_t n, int64_t k) {
  const int64_t input = tokens * k, weight = k * n, output_grad = tokens * n;
  switch (s) {
    case Scaling::none:
      return {};
    case Scaling::per_tensor:
      return {input + weight, output_grad, 3.0};
    case Scaling::rowwise:
      return {input + weight, 2 * output_grad + input + weight, 3.0, "fp8_cast", true};
    case Scaling::mxfp8:
      return {input + weight, output_grad, 2.0 + 2 * (1.0 + 1.0 / 32), "mxfp8_cast"};
    case Scaling::nvfp4:
      return {input + weight, output_grad, 2.0 + 2.0 + 2 * (0.5 + 1.0 / 16), "nvfp4_cast"};
  }
  return {};
}

// Weight copies kept for the step, per parameter: fp8 and fp8_rowwise 1 B (see PrecisionInfo);
// mxfp8 a rowwise and a columnwise copy of 1 B + 1/32 B of scale each (2.0625 B); nvfp4 the same
// two copies (its 16x16 weight blocks exist to make them numerically equal, TE docs "2D weight
// scaling") of 1/2 B + 1/16 B each (1.125 B; the fp32 scale per tensor, 4 B, left out).
double weight_copy_bytes_per_param(Scaling s) {
  switch (s) {
    case Scaling::none:
      return 0;
    case Scaling::per_tensor:
    case Scaling::rowwise:
      return 1;
    case Scaling::mxfp8:
      return 2 * (1.0 + 1.0 / 32);
    case Scaling::nvfp4:
      return 2 * (0.5 + 1.0 / 16);
  }
  return 0;
}

// PyTorch eager's saved tensors in the chains a fusing stack runs as one kernel. Autograd keeps,
// per op, the inputs its derivative formula reads (tools/autograd/derivatives.yaml): mul(a, b)
// keeps both operands (each is the other's gradient factor), tanh and rsqrt their result, pow(x,
// n) its input, silu its input; an add, a scalar mul or add and a dtype cast keep nothing. Per
// element of the tensor the chain runs over, c bytes for an element of the chain's dtype:
// fp32 (c = 4) under autocast, where the chain holds an op on autocast's fp32 list (pow) or
// starts from fp32 (the residual stream), and under fp32/tf32; otherwise the 16-bit ab.
//
//   GPT-2's tanh GELU (gelu_new: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3))))),
//   over the [T, ffn] fc1 output x. Kept: pow's input (c: autocast casts x to fp32 for pow, and
//   that copy is what pow keeps), tanh's output (c), the final mul's operands 0.5 * x (ab: a
//   scalar mul keeps x's dtype) and 1 + tanh(...) (c), and fc2's input, GELU's output (ab after
//   fc2's cast). Not kept: x itself (no op of the chain saves the 16-bit x under autocast; under
//   fp32 pow's input is x). The one-kernel GELU keeps x and its output, the 2 ab the layer
//   figure counts; eager keeps c + c + ab + c + ab: 3c bytes more. Under autocast fp16 that is
//   12 B per element, which is what the H100 runs measure: HF GPT-2 Large eager with gelu_new
//   against the same model with the one-kernel GELU (validate/data/h100_torch_steps_202611.csv),
//   47,865.3 - 30,587.1 MiB at batch 8 and 29,263.9 - 20,624.0 MiB at batch 4, over
//   batch x 1024 tokens x 36 layers x 5120: 12.00 and 12.00 B per element.
//   RMSNorm as Llama's reference code writes it (x.to(fp32); x * rsqrt(x.pow(2).mean(-1) + eps);
//   .to(dtype); weight * that), over [T, h], two per layer. Kept: the fp32 x (pow and the first
//   mul), the per-token rsqrt, and the normalised tensor weight * (...) reads (c = 4 under
//   autocast and fp32, where .to(dtype) is fp32; ab under bf16 weights). The fused norm keeps
//   its input (ab); eager keeps 4 + the normalised tensor, so 4 - ab + c more: 4 B per element
//   under every precision (autocast: the input is the fp32 residual, counted below, and the
//   normalised fp32 tensor is the 4 more).
//   SwiGLU, silu(gate) * up, over [T, ffn]: silu keeps gate, the mul keeps silu's output and up,
//   fc2 keeps the product. The fused kernel keeps gate, up and the product (the 3 ab counted);
//   eager also keeps silu's output: ab more.
//   LayerNorm (one native kernel) and dropout + add (dropout keeps its 1-byte mask, counted;
//   the add nothing) keep nothing more.
// Autocast (amp_*) with fp32 weights: the embeddings are fp32 and every residual add (16-bit
// block output + fp32 residual) promotes to fp32, so the residual stream is fp32 and each of the
// two norms of a layer keeps a 4-byte input where the layer figure counts ab (type promotion:
// fp16 + fp32 is fp32; layer_norm keeps its input). Not counted: Hugging Face Llama's separate
// q/k/v and gate/up projections each cast the fp32 norm output to 16 bits under autocast (three
// and two saved copies where the figure counts one), a model-code detail rather than a chain's.
// With these terms the H100 suite's eager rows (validate/suites/h100_torch_steps_202611.yaml)
// go from a -42% to a -3% peak at GPT-2 Large batch 8; what remains is in its memory line.
int64_t unfused_chain_saved_bytes_per_token(const ModelSpec& m, const WorkShape& w) {
  if (!w.unfused_chains || m.family == Family::mlp) return 0;
  if (w.recompute == Recompute::full || w.recompute == Recompute::op_selective)
    return 0;  // recomputed
  const PrecisionInfo p = precision_info(w.precision);
  const int64_t ab = p.activation_bytes, t = w.tp;
  const int64_t h = m.hidden, h_sp = w.sequence_parallel ? h / t : h, f_local = m.ffn_hidden / t;
  const bool autocast = p.autocast_copies;
  const int64_t c = autocast || ab == 4 ? 4 : ab;  // bytes of an element of an fp32-promoted chain
  int64_t extra = 0;
  if (autocast) extra += 2 * (4 - ab) * h_sp;  // the two norms' fp32 residual inputs
  if (m.rms_norm()) {
    extra += 2 * 4 * h_sp;                     // two unfused RMSNorms
    if (m.gated_mlp()) extra += ab * f_local;  // SwiGLU: silu's output
  } else if (m.gelu_as_tensor_ops()) {
    extra += 3 * c * f_local;  // tanh GELU: pow's fp32 input, tanh's output, the (1 + tanh) operand
  }
  return extra;
}

namespace {

// An MoE MLP's saved activations on this rank: the router's fp32 probabilities, the dispatched
// token copies (the experts' fc1 input, at the routed width) and the experts' inner activations
// (SwiGLU's gate, up and product, or squared ReLU's input and output, per inner element), the
// shared experts' as a dense MLP split by TP, and LatentMoE's fc2_latent_proj input (the
// combined latent tokens). Under TP (always with SP) the router scores the rank's s / t tokens,
// and the routed copies are those the busiest rank's experts process after the expert-TP
// all-gather: etp x moe_routed_tokens, each with expert_ffn_hidden / etp inner elements.
int64_t moe_mlp_activation_bytes(const ModelSpec& m, const WorkShape& w, int64_t ab) {
  const MoeSpec& e = m.moe;
  const int64_t s = w.seq / w.cp, b = w.micro_batch, t = w.tp;
  const int64_t local_tokens = s * b / (w.sequence_parallel ? t : 1);
  const int64_t routed = w.etp * moe_routed_tokens(m, w, local_tokens);
  const int64_t inner = m.gated_mlp() ? 3 : 2;
  return local_tokens * e.experts * 4 +
         routed * ab * (e.routed_width(m.hidden) + inner * e.expert_ffn_hidden / w.etp) +
         s * b * ab * inner * e.shared_ffn_hidden * e.shared_experts / t +
         local_tokens * ab * e.latent;
}

// What an MoE MLP's weight gradients read on this rank: the router's and shared experts' input
// (h, SP-sharded; also fc1_latent_proj's), the shared fc2's input, the routed copies' fc1 and fc2
// inputs, and fc2_latent_proj's input.
int64_t moe_weight_grad_input_bytes(const ModelSpec& m, const WorkShape& w, int64_t ab) {
  const MoeSpec& e = m.moe;
  const int64_t T = w.seq / w.cp * w.micro_batch, t = w.tp;
  const int64_t h_in = w.sequence_parallel ? m.hidden / t : m.hidden;
  const int64_t local_tokens = w.sequence_parallel ? T / t : T;
  const int64_t routed = w.etp * moe_routed_tokens(m, w, local_tokens);
  return ab * (T * (h_in + e.shared_ffn_hidden * e.shared_experts / t) +
               routed * (e.routed_width(m.hidden) + e.expert_ffn_hidden / w.etp) +
               local_tokens * e.latent);
}

// A hybrid stack's layer (ModelSpec::layer_pattern) saves its norm's input (h, SP-sharded) and
// its mixer's: Mamba's (layers::mamba_saved_bytes_per_token); attention's qkv input, Q, K, V and
// the projection input, and the fused core's fp32 log-sum-exp per row (eager: its scores, as a
// transformer layer's); the MLP's fc1 input and inner activations. Full recomputation is a
// transformer layer's (its input); PyTorch eager's unfused chains and op_selective's policy are
// not modelled for these layers: they save what they would without them.
Bytes hybrid_layer_activation_bytes(const ModelSpec& m, const WorkShape& w, int layer) {
  const int64_t ab = precision_info(w.precision).activation_bytes;
  const int64_t tokens = w.seq / w.cp * w.micro_batch, t = w.tp;
  const int64_t h_in = w.sequence_parallel ? m.hidden / t : m.hidden;
  int64_t per_token = ab * h_in;  // the norm's input
  int64_t core = 0;
  switch (m.hybrid_layer(layer)) {
    case 'E':  // the router's (and shared experts') input, then the MoE MLP's own
      per_token += ab * h_in;
      core = moe_mlp_activation_bytes(m, w, ab);
      break;
    case 'M':
      per_token += layers::mamba_saved_bytes_per_token(m, w, ab);
      break;
    case '*': {
      per_token += ab * (h_in + (2 * m.q_hidden() + 2 * m.kv_hidden()) / t);
      const int64_t s = w.seq / w.cp, b = w.micro_batch, heads_local = m.heads / t;
      if (w.recompute == Recompute::none)
        core = w.attention == AttentionImpl::eager
                   ? b * heads_local * s * s * (ab + (m.dropout > 0 ? 1 + ab : 0))
                   : b * heads_local * s * 4;
      break;
    }
    default:
      per_token += ab * (h_in + m.ffn_hidden * (m.gated_mlp() ? 3 : 2) / t);
      break;
  }
  return {tokens * per_token + core};
}

// What a hybrid layer's weight gradients read per token: its first linear's input (h,
// SP-sharded) and its last's (d_inner, q_hidden or ffn, split by TP). An MoE layer's are not per
// token (moe_weight_grad_input_bytes).
int64_t hybrid_weight_grad_inputs_per_token(const ModelSpec& m, const WorkShape& w, int layer) {
  const int64_t t = w.tp, h_in = w.sequence_parallel ? m.hidden / t : m.hidden;
  switch (m.hybrid_layer(layer)) {
    case 'M':
      return h_in + m.mamba.d_inner() / t;
    case '*':
      return h_in + m.q_hidden() / t;
    default:
      return h_in + m.ffn_hidden / t;
  }
}

}  // namespace

// A hybrid stack's layers differ: its figure is the smallest of them (the planner's lower bound
// stays a bound).
Bytes activation_bytes_per_layer(const ModelSpec& m, const WorkShape& w) {
  if (m.hybrid()) {
    int64_t least = activation_bytes_of_layer(m, w, 0).count;
    for (int l = 1; l < m.layers; ++l)
      least = std::min(least, activation_bytes_of_layer(m, w, l).count);
    return {least};
  }
  return activation_bytes_of_layer(m, w, m.family == Family::mlp ? 0 : -1);
}

Bytes activation_bytes_of_layer(const ModelSpec& m, const WorkShape& w, int layer) {
  const PrecisionInfo p = precision_info(w.precision);
  const int64_t ab = p.activation_bytes;
  const int64_t s = w.seq / w.cp, b = w.micro_batch, h = m.hidden, t = w.tp;
  const int64_t sbh = s * b * h;
  if (m.family == Family::mlp) return {b * h * ab * 2};  // linear input + ReLU output
  if (w.recompute == Recompute::full)
    return {sbh * ab / (w.sequence_parallel ? t : 1)};  // layer input only
  if (m.hybrid_layer(std::max(layer, 0)) != '\0')
    return hybrid_layer_activation_bytes(m, w, std::max(layer, 0));
  if (w.recompute == Recompute::op_selective && !m.mla.enabled() &&
      !(layer >= 0 && m.is_moe_layer(layer))) {
    // TorchTitan's per-op policy keeps the layer's input and the outputs of the matmuls it does
    // not recompute (16-bit: the first and third of qkv, proj, fc1, fc2: Q/K/V, fc1's; low
    // precision: all four or none, ScaledMmSaving) and of flash attention (its output and fp32
    // log-sum-exp); the rest is recomputed from them.
    const int64_t input = sbh * ab / (w.sequence_parallel ? t : 1);
    const int64_t qkv = m.q_hidden() + 2 * m.kv_hidden();
    const int64_t fc1 = m.ffn_hidden * (m.gated_mlp() ? 2 : 1);
    int64_t gemm_outputs = qkv + fc1;
    if (p.gemm == ir::DType::fp8 || p.gemm == ir::DType::fp4)
      gemm_outputs = w.scaled_mm == ScaledMmSaving::saved ? qkv + h + fc1 + h : 0;
    const int64_t kept = s * b * ab * (gemm_outputs + m.q_hidden()) / t;
    return {input + kept + b * (m.heads / t) * s * 4 +
            s * b * layers::lora_saved_bytes_per_token(m, w)};
  }
  const int64_t masks = m.dropout > 0 ? 2 : 0;  // 1-byte dropout masks after attention and MLP
  // Not split by TP (split by SP): two norm inputs, the QKV input, the fc1 input, dropout masks;
  // Gemma's sandwich norms keep two more norm inputs.
  int64_t replicated = sbh * ((m.sandwich_norms ? 6 : 4) * ab + masks);
  if (w.sequence_parallel) replicated /= t;
  // Attention inputs. Multi-head / grouped-query: Q, K, V (GQA shrinks K, V) and the projection
  // input, split by TP. MLA: the q and kv latents (and the shared rotary key) feeding the
  // up-projections, then per head q and k (qk_head_dim) and v and the projection input
  // (v_head_dim).
  int64_t attention = 0;
  if (m.mla.enabled()) {
    // The latents come from replicated down-projections over the rank's tokens (its sequence
    // shard under SP); the up-projections, core and o_proj are split by heads.
    const MlaSpec& a = m.mla;
    attention = s * b * ab * (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) /
                    (w.sequence_parallel ? t : 1) +
                s * b * ab * m.heads * (2 * a.qk_head_dim() + 2 * a.v_head_dim) / t;
  } else {
    attention = s * b * ab * (2 * m.q_hidden() + 2 * m.kv_hidden()) / t;
  }
  // MLP inner activations. Dense: GELU's fc1 output and fc2 input, or SwiGLU's gate, up and
  // their product. MoE (layer >= 0 and an MoE layer): moe_mlp_activation_bytes.
  int64_t mlp = 0;
  if (layer >= 0 && m.is_moe_layer(layer)) {
    mlp = moe_mlp_activation_bytes(m, w, ab);
  } else {
    mlp = s * b * m.ffn_hidden * ab * (m.gated_mlp() ? 3 : 2) / t;
  }
  // Attention core: eager keeps softmax output, dropout mask and dropout output per score
  // (5 bytes at 16-bit: Korthikanti's 5as^2b); fused keeps only the fp32 log-sum-exp per row.
  const int64_t heads_local = m.heads / t;
  int64_t core = 0;
  if (w.recompute == Recompute::none) {
    if (w.attention == AttentionImpl::eager) {
      core = b * heads_local * s * s * (ab + (m.dropout > 0 ? 1 + ab : 0));
    } else {
      core = b * heads_local * s * 4;
    }
  }
  // PyTorch eager's chain intermediates (dense layers; an MoE layer's experts are not counted).
  const bool moe = layer >= 0 && m.is_moe_layer(layer);
  const int64_t unfused = moe ? 0 : s * b * unfused_chain_saved_bytes_per_token(m, w);
  const int64_t adapters = s * b * layers::lora_saved_bytes_per_token(m, w);  // LoRA's
  return {replicated + attention + mlp + core + unfused + adapters};
}

Bytes weight_grad_input_bytes_of_layer(const ModelSpec& m, const WorkShape& w, int layer) {
  WorkShape keep_all = w;  // what the forward produces, saved or re-materialised by recomputation
  keep_all.recompute = Recompute::none;
  const Bytes saved = activation_bytes_of_layer(m, keep_all, layer);
  const int64_t ab = precision_info(w.precision).activation_bytes;
  if (m.family == Family::mlp)
    return {std::min(w.micro_batch * m.hidden * ab, saved.count)};  // the linear's input
  const int64_t T = w.seq / w.cp * w.micro_batch, h = m.hidden, t = w.tp;
  const int64_t h_in = w.sequence_parallel ? h / t : h;
  const char kind = m.hybrid_layer(std::max(layer, 0));
  if (kind == 'E') return {std::min(moe_weight_grad_input_bytes(m, w, ab), saved.count)};
  if (kind != '\0')
    return {std::min(T * ab * hybrid_weight_grad_inputs_per_token(m, w, std::max(layer, 0)),
                     saved.count)};
  int64_t per_token = 0;
  if (m.mla.enabled()) {
    per_token += h_in + (m.mla.q_lora_rank + m.mla.kv_lora_rank) / (w.sequence_parallel ? t : 1) +
                 m.heads * m.mla.v_head_dim / t;
  } else {
    per_token += h_in + m.q_hidden() / t;
  }
  int64_t bytes = 0;
  if (layer >= 0 && m.is_moe_layer(layer)) {
    bytes = ab * T * per_token + moe_weight_grad_input_bytes(m, w, ab);
  } else {
    bytes = T * ab * (per_token + h_in + m.ffn_hidden / t);
  }
  return {std::min(bytes, saved.count)};
}

int64_t moe_routed_tokens(const ModelSpec& m, const WorkShape& w, int64_t tokens) {
  const MoeSpec& e = m.moe;
  const int64_t balanced = tokens * e.top_k;
  const auto busiest =
      static_cast<int64_t>(std::ceil(static_cast<double>(balanced) * w.moe_imbalance));
  if (w.moe_capacity_factor <= 0) return busiest;
  const auto per_expert = static_cast<int64_t>(
      std::ceil(w.moe_capacity_factor * static_cast<double>(balanced) / e.experts));
  const int64_t cap = per_expert * e.experts;
  return w.moe_pad_to_capacity ? cap : std::min(busiest, cap);
}

ir::ComputeOp OpFactory::gemm(int64_t m, int64_t n, int64_t k, int64_t batch) const {
  ir::ComputeOp op;
  op.op = ir::OpClass::gemm;
  op.dtype = gemm_dt.value_or(dt);
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.flops = {2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
              static_cast<double>(batch)};
  op.bytes = {(m * k + k * n + m * n) * batch * ab};
  return op;
}

ir::ComputeOp OpFactory::memory_bound(ir::OpClass cls, int64_t bytes, double flops) const {
  ir::ComputeOp op;
  op.op = cls;
  op.dtype = dt;
  op.bytes = {bytes};
  op.flops = {flops};
  return op;
}

ir::ComputeOp OpFactory::attention(int64_t batch_heads, int64_t s, int64_t d, double factor) const {
  ir::ComputeOp op;
  op.op = ir::OpClass::attention;
  op.dtype = dt;
  op.causal = true;
  op.attention_kernel = attention_kernel;
  op.batch = batch_heads;
  op.m = s;
  op.n = s;
  op.k = d;
  op.flops = {factor * 4.0 * static_cast<double>(batch_heads) * static_cast<double>(s) *
              static_cast<double>(s) * static_cast<double>(d) * 0.5};
  op.bytes = {static_cast<int64_t>(factor * 4.0) * batch_heads * s * d * ab};
  return op;
}

ir::ComputeOp optimizer_op(int64_t params, const PrecisionInfo& p) {
  // AdamW reads the fp32 master weight, the gradient (in its own precision) and m, v and writes
  // weight, m and v (m and v fp32, or bf16 under a precision-aware optimizer: moment_bytes);
  // mixed precision also writes the 16-bit working copy. ~12 FLOPs per param.
  ir::ComputeOp op;
  op.op = ir::OpClass::optimizer;
  op.dtype = ir::DType::fp32;
  const int64_t per_param = 4 + p.grad_bytes + 2 * p.moment_bytes + 4 + 2 * p.moment_bytes +
                            (p.weight_bytes == 2 ? 2 : 0);
  op.bytes = {params * per_param};
  op.flops = {12.0 * static_cast<double>(params)};
  op.m = params;
  return op;
}

namespace {

void check_moe_shape(const ModelSpec& m, const WorkShape& w) {
  if (w.ep < 1 || (m.moe.enabled() && m.moe.experts % w.ep != 0))
    throw UserError("expert parallel size must divide the expert count");
  if (w.etp != 1 && w.etp != w.tp)
    throw UserError("expert tensor parallel size must be 1 or the tensor parallel size");
  if (m.moe.enabled() && m.moe.expert_ffn_hidden % w.etp != 0)
    throw UserError("expert tensor parallel size must divide expert_ffn_hidden");
  if (m.moe.enabled() && w.tp > 1 && !w.sequence_parallel)
    throw UserError(m.name + ": MoE layers with tensor parallelism need sequence parallelism");
  if (!(w.moe_imbalance >= 1.0 && w.moe_imbalance <= std::max(1, w.ep)))
    throw UserError("moe_imbalance must be in [1, ep] (1: balanced routing)");
  if (!(w.moe_capacity_factor == 0 || (w.moe_capacity_factor > 0 && w.moe_capacity_factor <= 16))) {
    throw UserError("moe_capacity_factor must be in (0, 16] (0: dropless)");
  }
}

// Ulysses' all-to-all splits each rank's heads over the cp_a2a ranks of its level: Transformer
// Engine asserts that the query heads and the KV heads divide (AttnFuncWithCPAndQKVOA2A).
void check_all_to_all_shape(const ModelSpec& m, const WorkShape& w) {
  const int a = w.cp_a2a;
  if (a == 1) return;
  if (a < 1 || w.cp % a != 0)
    throw UserError("the context-parallel all-to-all level (" + std::to_string(a) +
                    " ranks) must divide cp (" + std::to_string(w.cp) + ")");
  if (w.cp_ring != CpRing::p2p)
    throw UserError(
        "context-parallel all-to-all (cp_comm a2a, a2a+p2p) is Transformer Engine's "
        "(Megatron-Core); PyTorch's context_parallel runs the ring only: use cp_comm: p2p");
  const int t = w.tp;
  // MLA's keys and values have a head per query head.
  const int64_t heads = m.heads / t,
                kv_heads = m.mla.enabled() ? heads : std::max(1, m.kv_heads / t);
  if (heads % a != 0 || kv_heads % a != 0) {
    throw UserError("the context-parallel all-to-all over " + std::to_string(a) +
                    " ranks splits each rank's attention heads: it must divide the " +
                    std::to_string(heads) + " query heads and " + std::to_string(kv_heads) +
                    " KV heads per tensor-parallel rank of " + m.name +
                    " (use a smaller all-to-all level, cp_comm: a2a+p2p with cp_a2a, or p2p)");
  }
}

// Sliding windows and Mamba-2 layers: what their ops model.
void check_layer_options_shape(const ModelSpec& m, const WorkShape& w) {
  if (w.cp > 1 && m.window.enabled() && m.window.window < w.seq / w.cp)
    throw UserError(m.name +
                    ": context parallelism with sliding-window attention is not modelled (the "
                    "ring's steps assume every key of the causal prefix)");
  if (w.cp > 1 && m.mamba.enabled())
    throw UserError(m.name + ": context parallelism over Mamba-2 layers is not modelled");
  const int t = w.tp;
  if (m.mamba.enabled() && (m.mamba.heads % t != 0 || m.mamba.groups % t != 0)) {
    throw UserError("tensor parallel size " + std::to_string(t) + " must divide the Mamba heads (" +
                    std::to_string(m.mamba.heads) + ") and groups (" +
                    std::to_string(m.mamba.groups) + ") of " + m.name);
  }
}

void check_transformer_shape(const ModelSpec& m, const WorkShape& w) {
  const int t = w.tp;
  if (m.heads % t != 0 || (m.kv_heads >= t && m.kv_heads % t != 0)) {
    throw UserError("tensor parallel size " + std::to_string(t) +
                    " must divide the attention heads (" + std::to_string(m.heads) +
                    ") and KV heads (" + std::to_string(m.kv_heads) + ") of " + m.name);
  }
  if (m.ffn_hidden % t != 0)
    throw UserError("tensor parallel size " + std::to_string(t) + " must divide ffn_hidden of " +
                    m.name);
  check_sequence_fits(m, w.seq, "sequence length");
  if (w.cp < 1 || w.seq % w.cp != 0)
    throw UserError("context parallel size must divide the sequence length");
  if (w.cp > 1 && w.attention != AttentionImpl::fused)
    throw UserError(
        "context parallelism needs fused attention (ring attention is a flash-attention kernel)");
  check_all_to_all_shape(m, w);
  check_layer_options_shape(m, w);
}

void check_shape(const ModelSpec& m, const WorkShape& w) {
  if (w.tp < 1) throw UserError("tensor parallel size must be at least 1");
  check_moe_shape(m, w);
  if (m.family != Family::mlp) check_transformer_shape(m, w);
  layers::check_lora_shape(m, w);
}

// An embedding lookup (F.embedding) is not on autocast's cast lists: its table stays fp32 and is
// read as it is. A tied table is cast by the head's linear layer, which reads it.
bool autocast_reads_cast(const ModelSpec& m, const ParameterTensor& p, int block) {
  if (m.family == Family::mlp || block != 0) return true;  // block 0: the embedding
  return m.tied_embeddings() && p.name == "wte";
}

// Closes block `index`: its backward in execution order, its parameters, and autocast's weight
// copies.
void finish_block(const layers::LayerContext& c, const std::vector<ParameterTensor>& params,
                  Block& b, layers::BlockOps ops, int index) {
  const int cast_tensors = std::max(ops.linear_tensors, 1);
  b.forward = std::move(ops.forward);
  b.backward = std::move(ops).backward_in_execution_order();
  int64_t weights = 0;  // elements of the block's weights autocast copies, on this rank
  for (int i = 0; i < static_cast<int>(params.size()); ++i) {
    if (params[i].block != index) continue;
    b.params.push_back(i);
    // Experts that run in fp32 (WorkShape::fp32_experts) use their fp32 weights uncast.
    if (c.w.fp32_experts && params[i].role == ParamRole::routed_expert) continue;
    if (!autocast_reads_cast(c.m, params[i], index)) continue;
    weights += params[i].numel_per_rank(c.t, c.w.etp);
  }
  if (!c.p.autocast_copies) return;
  b.autocast_weights = {weights * c.ab};
  if (weights == 0) return;
  // amp casts each fp32 weight to 16 bits once per forward: read 4, write 2 bytes per element,
  // one kernel per tensor where a stack launches them one by one (the linear layers' weights and
  // biases: norms' weights are not on autocast's lists).
  auto cast = [&](const std::string& name) {
    Op op = layers::named(name, c.f.memory_bound(ir::OpClass::elementwise, weights * 6));
    op.unfused_kernels = static_cast<uint16_t>(std::min(cast_tensors, int{UINT16_MAX}));
    op.unfused_traffic = 1;  // the tensors together move the bytes above
    return op;
  };
  b.forward.insert(b.forward.begin(), cast("weights.cast"));
  // ... and PyTorch's autograd casts each 16-bit weight gradient back to the fp32 parameter's
  // dtype (ToCopyBackward0): read 2, write 4 bytes per element, after the block's backward. On
  // the GPT-2 Large batch-8 trace these casts take 5.2 ms.
  if (c.w.pytorch_autograd) b.backward.push_back(cast("weights.cast.bwd"));
}

// The mlp family's layer `l`: y = ReLU(x W + b), the squared-error loss on the last.
// Tokens = micro-batch rows.
Block mlp_block(const layers::LayerContext& c, const std::vector<ParameterTensor>& params, int l) {
  Block b;
  b.name = "L" + std::to_string(l);
  layers::BlockOps ops;
  layers::relu_layer(c, ops, l);
  if (l == c.m.layers - 1) layers::squared_error_loss(c, ops);
  b.saved_activations = activation_bytes_per_layer(c.m, c.w);
  b.weight_grad_inputs = weight_grad_input_bytes_of_layer(c.m, c.w, l);
  finish_block(c, params, b, std::move(ops), l);
  return b;
}

Block embedding_block(const layers::LayerContext& c, const std::vector<ParameterTensor>& params) {
  Block b;
  b.name = "embed";
  layers::BlockOps ops;
  layers::embedding(c, ops);
  finish_block(c, params, b, std::move(ops), 0);
  return b;
}

Block decoder_block(const layers::LayerContext& c, const std::vector<ParameterTensor>& params,
                    int l) {
  const ModelSpec& m = c.m;
  Block b;
  b.name = "L" + std::to_string(l);
  layers::BlockOps ops;
  layers::transformer_layer(c, ops, layers::layer_spec(m, l), "h." + std::to_string(l) + ".");
  b.saved_activations = activation_bytes_of_layer(m, c.w, l);
  // Checkpointing's transient: what the layer would have saved without recomputation, less what
  // it kept.
  WorkShape keep_all = c.w;
  keep_all.recompute = Recompute::none;
  b.recompute_transient =
      Bytes{activation_bytes_of_layer(m, keep_all, l).count - b.saved_activations.count};
  b.weight_grad_inputs = weight_grad_input_bytes_of_layer(m, c.w, l);
  finish_block(c, params, b, std::move(ops), l + 1);
  b.recompute = layers::recomputed_ops(c.w.recompute, b.forward, c.w.scaled_mm);
  return b;
}

// Head: final norm, LM head (vocab-parallel under TP), cross-entropy with fp32 log-softmax; then
// DeepSeek's multi-token prediction modules.
Block head_block(const layers::LayerContext& c, const std::vector<ParameterTensor>& params) {
  const ModelSpec& m = c.m;
  Block b;
  b.name = "head";
  layers::BlockOps ops;
  layers::norm(c, ops, layers::norm_kind(m), "ln_f", c.T_sp * c.h,
               c.ids({"ln_f.weight", "ln_f.bias"}));
  layers::lm_head(c, ops, "lm_head",
                  m.tied_embeddings() ? std::vector<int>{} : c.ids({"lm_head.weight"}));
  layers::cross_entropy(c, ops, "loss");
  for (int k = 0; k < m.mtp_depth; ++k)
    b.saved_activations += layers::multi_token_prediction(c, ops, k);
  b.logits = {(1 + m.mtp_depth) * c.T * (m.vocab / c.t) * layers::logit_bytes(c.w, c.ab)};
  finish_block(c, params, b, std::move(ops), m.layers + 1);
  return b;
}

// Model FLOPs: GEMM and attention FLOPs of forward and backward over all TP ranks. The routed
// experts count the balanced, dropless copies (T_sp top_k per rank): what imbalance or padding
// adds on the busiest rank is time, not model work.
Flops transformer_model_flops(const layers::LayerContext& c, const std::vector<Block>& blocks) {
  const ModelSpec& m = c.m;
  const double useful = m.moe.enabled() ? static_cast<double>(c.T_sp * m.moe.top_k) /
                                              static_cast<double>(moe_routed_tokens(m, c.w, c.T_sp))
                                        : 1.0;
  Flops per_rank;
  for (const auto& b : blocks) {
    for (const auto* list : {&b.forward, &b.backward}) {
      for (const auto& op : *list) {
        if (op.op.op != ir::OpClass::gemm && op.op.op != ir::OpClass::attention) continue;
        per_rank +=
            op.name.rfind("mlp.experts.", 0) == 0 ? Flops{op.op.flops.value * useful} : op.op.flops;
      }
    }
  }
  return {per_rank.value * c.t};
}

// The mlp family's: its GEMMs' FLOPs, forward and backward (no tensor parallelism).
Flops gemm_flops(const std::vector<Block>& blocks) {
  Flops total;
  for (const auto& b : blocks) {
    for (const auto* list : {&b.forward, &b.backward}) {
      for (const auto& op : *list) total += op.op.op == ir::OpClass::gemm ? op.op.flops : Flops{};
    }
  }
  return total;
}

}  // namespace

// Blocks: the embedding, one per decoder layer (its submodules by layer_spec), and the head; or
// the mlp family's layers.
ModelWork build_model_work(const ModelSpec& m, const WorkShape& w) {
  validate(m);
  check_shape(m, w);
  ModelWork work;
  work.params = parameter_list(m);
  if (w.lora.enabled()) layers::add_lora_adapters(m, w.lora, work.params);
  const layers::LayerContext c(m, w, work.params);
  if (m.family == Family::mlp) {
    for (int l = 0; l < m.layers; ++l) work.blocks.push_back(mlp_block(c, work.params, l));
    work.model_flops = gemm_flops(work.blocks);
    return work;
  }
  work.blocks.push_back(embedding_block(c, work.params));
  for (int l = 0; l < m.layers; ++l) work.blocks.push_back(decoder_block(c, work.params, l));
  work.blocks.push_back(head_block(c, work.params));
  work.model_flops = transformer_model_flops(c, work.blocks);
  return work;
}

}  // namespace cs::model
