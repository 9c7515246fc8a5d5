#include "models/model_work.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "common/error.h"

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
  }
  return "?";
}
std::string_view to_string(MoeDispatcher d) {
  return d == MoeDispatcher::alltoall ? "alltoall" : "allgather";
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
      return {ir::DType::bf16, ir::DType::fp8, 2, 2, 12, 2, false, 1};
    case Precision::fp8_rowwise:
      return {ir::DType::bf16, ir::DType::fp8, 2, 2, 12, 2, false, 1, true};
  }
  return {ir::DType::fp32, ir::DType::fp32, 4, 4, 8, 4, false};
}

namespace {

// Kernels of an op's chain when a stack does not fuse it (PyTorch eager), forward and backward,
// counted from the eager code of the reference implementations:
//   dropout + residual add: dropout (one fused mask-and-scale kernel), add; backward the dropout's
//     mask multiply and autograd's sum of the residual's two gradient branches.
//   GPT-2's GELU ("gelu_new", the tanh approximation, written as tensor ops in GPT-2's and Hugging
//     Face's code: pow, mul, add, mul, tanh, add, mul, mul): 8; backward, autograd's derivative
//     ops and the accumulation of x's three gradient contributions: 10.
//   SwiGLU, silu(gate) * up: silu, mul; backward the mul's two products and silu's derivative.
//   LayerNorm: one native kernel; backward the input gradient and the weight/bias reduction.
//   RMSNorm as Llama's reference code writes it (cast to fp32, pow, mean, add eps, rsqrt, mul,
//     cast back, mul by the weight): 8; backward 10.
//   cross-entropy: log_softmax, nll_loss; backward their two gradients.
struct ChainKernels {
  uint16_t forward, backward;
  bool autocast_fp32 = false;  // holds an op autocast runs in fp32 (pow): the chain runs in fp32
};
constexpr ChainKernels kDropoutAddKernels{2, 2};
constexpr ChainKernels kTanhGeluKernels{8, 10, true};
constexpr ChainKernels kOneKernelGeluKernels{1, 1};  // gelu_pytorch_tanh, gelu: gelu, gelu_backward
// gelu_new's traffic counted op by op, in element accesses of the [T, ffn] tensor (a unary op
// reads and writes: 2; a binary op: 3), against the fused op's (forward: read x, write y = 2;
// backward, as priced: 4):
//   forward: pow(x, 3), 0.044715 * ., sqrt(2/pi) * ., tanh, 1 + . and 0.5 * x are unary (6 x 2),
//     the sum x + 0.044715 x^3 and the product (0.5 x)(1 + t) binary (2 x 3): 18, 9 times the
//     fused op's 2;
//   backward (autograd): the product's two gradients dy (1 + t) and dy (0.5 x), tanh_backward,
//     pow's dp * (3 x^2), and the two additions that accumulate x's three gradient contributions
//     are binary (6 x 3); the scalar products by sqrt(2/pi), 0.044715, 3 and 0.5 and pow(x, 2)
//     unary (5 x 2): 28 accesses, 7 times the fused op's 4.
// On the GPT-2 Large batch-8 Kineto trace (validate/measurements/torch_h100_202611/) the 11
// backward kernels and their casts between the two GEMMs take 60 ms; 10 kernels at the fused
// op's 4 accesses each priced them at 102 ms, these 28 at 71 ms.
constexpr double kTanhGeluForwardTraffic = 9.0;
constexpr double kTanhGeluBackwardTraffic = 7.0;
constexpr ChainKernels kSwigluKernels{2, 3};
constexpr ChainKernels kLayerNormKernels{1, 2, true};  // layer_norm is on autocast's fp32 list
constexpr ChainKernels kRmsNormKernels{8, 10};
constexpr ChainKernels kCrossEntropyKernels{2, 2};
//   rotary embedding, Hugging Face's apply_rotary_pos_emb on q and on k (x * cos +
//     rotate_half(x) * sin, rotate_half a neg and a cat): 5 per tensor; backward the two
//     products' gradients, rotate_half's (neg, and the two slices' zero-filled copies) and the
//     sum of the branches: 8 per tensor.
constexpr ChainKernels kRotaryKernels{5, 8};

// Tensor parallelism of one TP rank: which collectives the Megatron layers need and their size.
// `full` is one [s, b, h] activation at 16 bits (the unsplit hidden state all TP ranks exchange).
struct TpContext {
  int t = 1;
  bool sp = false;
  Bytes full;
  OpCollective make(ir::CollectiveType type) const {
    return t > 1 ? OpCollective{type, full, 1} : OpCollective{};
  }
  // Sequence parallelism replaces an all-reduce by a reduce-scatter (leaving the output sharded on
  // the sequence) and needs an all-gather before a column-parallel layer (its input is sharded).
  OpCollective reduce() const {
    return make(sp ? ir::CollectiveType::reduce_scatter : ir::CollectiveType::all_reduce);
  }
  OpCollective gather_if_sp() const {
    return sp ? make(ir::CollectiveType::all_gather) : OpCollective{};
  }
};

enum class Split : uint8_t { none, column, row };

// A linear layer y[T, n] = x[T, k] W[k, n]: forward GEMM; backward dgrad (dx = dy W^T) and wgrad
// (dW = x^T dy), each with the forward's 2*T*n*k FLOPs, so backward = 2x forward.
// Megatron: a column-parallel layer all-reduces its input gradient in backward (SP: all-gathers
// its input in forward and again for wgrad, reduce-scatters the input gradient); a row-parallel
// layer all-reduces its output in forward (SP: reduce-scatters it, all-gathers its gradient).
void linear(const OpFactory& f, Block& b, const std::string& name, int64_t tokens, int64_t n,
            int64_t k, std::vector<int> params, Split split, const TpContext& tp,
            std::vector<Op>& bwd_rev, bool bias = false) {
  // FP8 GEMMs (Transformer Engine): the forward casts its input [T, k] and the weight [k, n] to
  // FP8, the backward casts the output gradient [T, n] (read 2 B, write 1 B each).
  if (f.gemm_dt == ir::DType::fp8) {
    b.forward.push_back({name + ".fp8_cast",
                         f.memory_bound(ir::OpClass::elementwise, 3 * (tokens * k + k * n),
                                        double(tokens * k + k * n)),
                         {},
                         {},
                         {}});
  }
  Op fwd{name, f.gemm(tokens, n, k), {}, {}, {}};
  Op dgrad{name + ".dgrad", f.gemm(tokens, k, n), {}, {}, {}};
  Op wgrad{name + ".wgrad", f.gemm(k, n, tokens), std::move(params), {}, {}};
  if (split == Split::column) {
    fwd.tp_before = tp.gather_if_sp();
    wgrad.tp_before = tp.gather_if_sp();
    dgrad.tp_after = tp.reduce();
  } else if (split == Split::row) {
    fwd.tp_after = tp.reduce();
    wgrad.tp_before = tp.gather_if_sp();  // wgrad runs first in backward
  }
  b.forward.push_back(std::move(fwd));
  // bwd_rev is filled in forward order and reversed at the end: wgrad then dgrad in execution
  // order.
  bwd_rev.push_back(std::move(dgrad));
  bwd_rev.push_back(std::move(wgrad));
  // A bias's gradient PyTorch sums from the output gradient [T, n] in a kernel of its own
  // (addmm's backward: grad.sum(0)): it reads those elements. On the GPT-2 Large batch-8 trace
  // the 4 biased linears of 36 layers (and the head's none) take 3.9 ms of such sums.
  if (f.bias_grad_kernels && bias) {
    bwd_rev.push_back(
        {name + ".bias_grad",
         f.memory_bound(ir::OpClass::elementwise, tokens * n * f.ab, double(tokens * n)),
         {},
         {},
         {}});
  }
  if (f.gemm_dt == ir::DType::fp8) {
    // Elements cast in backward. Per tensor: the output gradient [T, n] once, dgrad and wgrad
    // reuse the forward's FP8 input and weight. Rowwise (torchao): every operand is scaled along
    // the axis its GEMM reduces over, so the output gradient is cast twice (per row for dgrad,
    // per column for wgrad), the input [T, k] again per column for wgrad and the weight [k, n]
    // again along its other axis for dgrad.
    const int64_t elements = f.fp8_rowwise ? 2 * tokens * n + tokens * k + k * n : tokens * n;
    bwd_rev.push_back({name + ".fp8_cast.bwd",
                       f.memory_bound(ir::OpClass::elementwise, 3 * elements, double(elements)),
                       {},
                       {},
                       {}});
  }
}

}  // namespace

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
  if (m.gated_mlp()) {
    extra += 2 * 4 * h_sp;  // two unfused RMSNorms
    extra += ab * f_local;  // SwiGLU: silu's output
  } else if (m.gelu_as_tensor_ops()) {
    extra += 3 * c * f_local;  // tanh GELU: pow's fp32 input, tanh's output, the (1 + tanh) operand
  }
  return extra;
}

Bytes activation_bytes_per_layer(const ModelSpec& m, const WorkShape& w) {
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
  if (w.recompute == Recompute::op_selective && !m.mla.enabled() &&
      !(layer >= 0 && m.is_moe_layer(layer))) {
    // TorchTitan's per-op policy keeps the layer's input and the outputs of the matmuls it does
    // not recompute (the first and third of qkv, proj, fc1, fc2: Q/K/V, fc1's) and of flash
    // attention (its output and fp32 log-sum-exp); the rest is recomputed from them.
    const int64_t input = sbh * ab / (w.sequence_parallel ? t : 1);
    const int64_t kept = s * b * ab *
                         ((m.q_hidden() + 2 * m.kv_hidden()) + m.q_hidden() +
                          m.ffn_hidden * (m.gated_mlp() ? 2 : 1)) /
                         t;
    return {input + kept + b * (m.heads / t) * s * 4};
  }
  const int64_t masks = m.dropout > 0 ? 2 : 0;  // 1-byte dropout masks after attention and MLP
  // Not split by TP (split by SP): two norm inputs, the QKV input, the fc1 input, dropout masks.
  int64_t replicated = sbh * (4 * ab + masks);
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
  // their product. MoE (layer >= 0 and an MoE layer): the router's fp32 probabilities, the
  // dispatched tokens (the experts' fc1 input) and SwiGLU's three per routed token, plus the
  // shared experts' as a dense SwiGLU split by TP. Under TP (always with SP) the router scores
  // the rank's s / t tokens, and the routed copies are those the busiest rank's experts process
  // after the expert-TP all-gather: etp x moe_routed_tokens, each with SwiGLU's three of
  // expert_ffn_hidden / etp.
  int64_t mlp = 0;
  if (layer >= 0 && m.is_moe_layer(layer)) {
    const MoeSpec& e = m.moe;
    const int64_t local_tokens = s * b / (w.sequence_parallel ? t : 1);
    const int64_t routed = w.etp * moe_routed_tokens(m, w, local_tokens);
    mlp = local_tokens * e.experts * 4 + routed * ab * (h + 3 * e.expert_ffn_hidden / w.etp) +
          s * b * ab * 3 * e.shared_ffn_hidden * e.shared_experts / t;
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
  return {replicated + attention + mlp + core + unfused};
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
  int64_t per_token = 0;
  if (m.mla.enabled()) {
    per_token += h_in + (m.mla.q_lora_rank + m.mla.kv_lora_rank) / (w.sequence_parallel ? t : 1) +
                 m.heads * m.mla.v_head_dim / t;
  } else {
    per_token += h_in + m.q_hidden() / t;
  }
  int64_t bytes = 0;
  if (layer >= 0 && m.is_moe_layer(layer)) {
    const MoeSpec& e = m.moe;
    const int64_t routed = w.etp * moe_routed_tokens(m, w, w.sequence_parallel ? T / t : T);
    bytes = ab * (T * (per_token + h_in + e.shared_ffn_hidden * e.shared_experts / t) +
                  routed * (h + e.expert_ffn_hidden / w.etp));
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
  // AdamW reads master weight, gradient, m, v and writes weight, m, v (fp32 each; the gradient in
  // its own precision); mixed precision also writes the 16-bit working copy. ~12 FLOPs per param.
  ir::ComputeOp op;
  op.op = ir::OpClass::optimizer;
  op.dtype = ir::DType::fp32;
  const int64_t per_param = 4 + p.grad_bytes + 8 + 12 + (p.weight_bytes == 2 ? 2 : 0);
  op.bytes = {params * per_param};
  op.flops = {12.0 * static_cast<double>(params)};
  op.m = params;
  return op;
}

namespace {

// PyTorch's ring attention (torch/distributed/tensor/experimental/_attention.py,
// _templated_ring_attention and _templated_ring_attention_backward, as of torch 1963fc8,
// 2024-12-23, the version TorchTitan's Dec-2024 benchmarks ran; unchanged in these respects
// since pytorch/pytorch#132820, Aug 2024), with TorchTitan 9dec370's settings
// (--experimental.context_parallel_rotate_method allgather, its default; load balancing and
// convert_to_f32 on, PyTorch's defaults). `bh` is batch x local query heads, `s` the rank's
// tokens (two head-tail chunks), E = bh s d the elements of the rank's attention output.
//   K, V: TorchTitan's Attention repeats the KV heads to the query heads before SDPA
//     (models/llama/model.py, repeat_kv), so the ring carries K and V at the query width: 2E.
//   Forward: K and V made contiguous and concatenated (`pack`, 2 E read and written), one
//     all-gather of that buffer over the CP group issued before step 0's kernel and waited for
//     before step 1's (_AllGatherRotater): later steps slice it, no further communication.
//     Step 0 is the causal kernel on (s, s); step j > 0 a non-causal kernel on (s, s / 2) or
//     (s / 2, s): the same FLOPs as a causal (s, s), priced at the causal kernel's rate for
//     that FLOP count. After each kernel _SDPAMerger upcasts the step's output to fp32 and
//     merges it: out - sigmoid(lse_j - lse) (out - out_j), fused: read out (4 B) and out_j (ab),
//     write out (4 B) per element; step 0 only the upcast (ab + 4), the last also casts back
//     (4 + ab). Eager runs the merge as its to(), sub, mul, sub kernels (4).
//   Backward: zero fp32 dQ, dK, dV (12 E bytes written) and the same pack and all-gather of K
//     and V; step j's kernel (2.5x the forward FLOPs), then its merge adds dQ_j into dQ and
//     dK_j, dV_j into the fp32 dK, dV chunk that arrived from the previous rank (three fp32
//     read-add-writes, 3 (8 + ab) E) and sends that chunk on (fp32 K and V gradients: 8 E
//     bytes, an all_to_all permutation, _AllToAllRotater); step j + 1's merge waits for it, and
//     the last one (the rank's own K, V gradient coming home) is waited for after the loop, by
//     the casts back to ab (3 (4 + ab) E).
// Eager PyTorch waits for a collective at its first use (AsyncCollectiveTensor), so the gather
// runs under step 0's kernel and each gradient pass under the next step's; a traced graph (the
// collectives of a torch.compile'd block, torch/distributed/_functional_collectives.py
// _maybe_wrap_tensor: "wait_tensor() op is immediately called") waits where it issues, and
// Inductor's reorder_for_compute_comm_overlap is off by default, so under torch_compile all of
// it is exposed.
void torch_ring_attention(const OpFactory& f, Block& b, std::vector<Op>& bwd_rev,
                          const WorkShape& w, int64_t bh, int64_t s, int64_t d) {
  const int64_t ab = f.ab, E = bh * s * d;
  const bool traced = w.cp_ring == CpRing::torch_traced;
  const Bytes gathered{w.cp * 2 * E * ab};  // nccl-tests size: the gathered output
  auto elementwise = [&](const std::string& name, int64_t bytes, uint16_t kernels) {
    Op op{name, f.memory_bound(ir::OpClass::elementwise, bytes, double(E)), {}, {}, {}};
    op.unfused_kernels = kernels;
    return op;
  };
  b.forward.push_back(elementwise("attn.core.cp.pack", 4 * E * ab, 2));
  std::vector<Op> bwd{elementwise("attn.core.cp.pack.bwd", 4 * E * ab + 12 * E, 1)};
  for (int64_t j = 0; j < w.cp; ++j) {
    const std::string step = "attn.core.cp" + std::to_string(j);
    const bool last = j == w.cp - 1;
    Op kernel{step, f.attention(bh, s, d, 1.0), {}, {}, {}};
    Op kernel_bwd{step + ".bwd", f.attention(bh, s, d, 2.5), {}, {}, {}};
    for (Op* k : {&kernel, &kernel_bwd}) {
      k->ring.gathers = j == 0 ? gathered : Bytes{};
      k->ring.waits = j == 1 && !traced;
      k->ring.blocking = traced;
    }
    const int64_t merge = j == 0 ? E * (ab + 4) : E * (8 + ab);
    b.forward.push_back(std::move(kernel));
    b.forward.push_back(
        elementwise(step + ".merge", merge + (last ? E * (4 + ab) : 0), j == 0 ? 1 : 4));
    bwd.push_back(std::move(kernel_bwd));
    Op merge_bwd = elementwise(step + ".bwd.merge", 3 * E * (8 + ab), 2);
    merge_bwd.ring.grad_passes = Bytes{8 * E};
    merge_bwd.ring.waits_grad = j > 0 && !traced;
    merge_bwd.ring.blocking = traced;
    bwd.push_back(std::move(merge_bwd));
  }
  Op out = elementwise("attn.core.cp.bwd.out", 3 * E * (4 + ab), 1);
  out.ring.waits_grad = !traced;
  bwd.push_back(std::move(out));
  // bwd_rev is reversed at the end; push the ops so that they run in the order above.
  for (auto it = bwd.rbegin(); it != bwd.rend(); ++it) bwd_rev.push_back(std::move(*it));
}

}  // namespace

ModelWork build_model_work(const ModelSpec& m, const WorkShape& w) {
  validate(m);
  const PrecisionInfo p = precision_info(w.precision);
  const OpFactory f{p.compute,
                    p.activation_bytes,
                    p.gemm != p.compute ? std::optional<ir::DType>(p.gemm) : std::nullopt,
                    w.attention_kernel,
                    p.fp8_rowwise,
                    w.unfused_chains};
  const int64_t ab = p.activation_bytes;
  const int t = w.tp;
  if (t < 1) throw UserError("tensor parallel size must be at least 1");
  if (w.ep < 1 || (m.moe.enabled() && m.moe.experts % w.ep != 0))
    throw UserError("expert parallel size must divide the expert count");
  if (w.etp != 1 && w.etp != t)
    throw UserError("expert tensor parallel size must be 1 or the tensor parallel size");
  if (m.moe.enabled() && m.moe.expert_ffn_hidden % w.etp != 0)
    throw UserError("expert tensor parallel size must divide expert_ffn_hidden");
  if (m.moe.enabled() && t > 1 && !w.sequence_parallel)
    throw UserError(m.name + ": MoE layers with tensor parallelism need sequence parallelism");
  if (!(w.moe_imbalance >= 1.0 && w.moe_imbalance <= std::max(1, w.ep)))
    throw UserError("moe_imbalance must be in [1, ep] (1: balanced routing)");
  if (!(w.moe_capacity_factor == 0 || (w.moe_capacity_factor > 0 && w.moe_capacity_factor <= 16))) {
    throw UserError("moe_capacity_factor must be in (0, 16] (0: dropless)");
  }
  if (m.family != Family::mlp) {
    if (m.heads % t != 0 || (m.kv_heads >= t && m.kv_heads % t != 0)) {
      throw UserError("tensor parallel size " + std::to_string(t) +
                      " must divide the attention heads (" + std::to_string(m.heads) +
                      ") and KV heads (" + std::to_string(m.kv_heads) + ") of " + m.name);
    }
    if (m.ffn_hidden % t != 0)
      throw UserError("tensor parallel size " + std::to_string(t) + " must divide ffn_hidden of " +
                      m.name);
    check_sequence_fits(m, w.seq, "sequence length");
  }

  ModelWork work;
  work.params = parameter_list(m);
  std::unordered_map<std::string, int> id;
  for (int i = 0; i < static_cast<int>(work.params.size()); ++i) id[work.params[i].name] = i;
  auto ids = [&](std::initializer_list<std::string> names) {
    std::vector<int> out;
    for (const auto& n : names) {
      if (auto it = id.find(n); it != id.end()) out.push_back(it->second);
    }
    return out;
  };
  auto has = [&](const std::string& name) { return id.count(name) > 0; };
  auto block_bytes = [&](int block) {
    int64_t n = 0;
    for (const auto& prm : work.params) {
      if (prm.block == block) n += prm.numel_per_rank(t, w.etp);
    }
    return n;
  };
  auto finish_block = [&](Block& b, std::vector<Op>& bwd_rev, int block_index) {
    for (auto it = bwd_rev.rbegin(); it != bwd_rev.rend(); ++it)
      b.backward.push_back(std::move(*it));
    for (int i = 0; i < static_cast<int>(work.params.size()); ++i) {
      if (work.params[i].block == block_index) b.params.push_back(i);
    }
    if (p.autocast_copies) b.autocast_weights = {block_bytes(block_index) * ab};
    // amp casts each fp32 weight to 16 bits once per forward: read 4, write 2 bytes per element.
    if (p.autocast_copies && block_bytes(block_index) > 0) {
      b.forward.insert(b.forward.begin(),
                       Op{"weights.cast",
                          f.memory_bound(ir::OpClass::elementwise, block_bytes(block_index) * 6),
                          {},
                          {},
                          {}});
    }
    // ... and PyTorch's autograd casts each 16-bit weight gradient back to the fp32 parameter's
    // dtype (ToCopyBackward0): read 2, write 4 bytes per element, after the block's backward. On
    // the GPT-2 Large batch-8 trace these casts take 5.2 ms.
    if (p.autocast_copies && w.pytorch_autograd && block_bytes(block_index) > 0) {
      b.backward.push_back(
          Op{"weights.cast.bwd",
             f.memory_bound(ir::OpClass::elementwise, block_bytes(block_index) * 6),
             {},
             {},
             {}});
    }
  };

  if (m.family == Family::mlp) {
    // y = ReLU(x W + b) per layer, squared-error loss on the last. Tokens = micro-batch rows.
    const int64_t rows = w.micro_batch, h = m.hidden;
    for (int l = 0; l < m.layers; ++l) {
      Block b;
      b.name = "L" + std::to_string(l);
      std::vector<Op> bwd_rev;
      const std::string n = "fc" + std::to_string(l);
      linear(f, b, n, rows, h, h, ids({n + ".weight", n + ".bias"}), Split::none, TpContext{},
             bwd_rev, has(n + ".bias"));
      b.forward.push_back(
          {n + ".relu",
           f.memory_bound(ir::OpClass::elementwise, rows * h * ab * 2, double(rows * h)),
           {},
           {},
           {}});
      bwd_rev.push_back(
          {n + ".relu.bwd",
           f.memory_bound(ir::OpClass::elementwise, rows * h * ab * 3, double(rows * h)),
           {},
           {},
           {}});
      if (l == m.layers - 1) {
        b.forward.push_back(
            {"loss",
             f.memory_bound(ir::OpClass::cross_entropy, rows * h * ab * 2, double(3 * rows * h)),
             {},
             {},
             {}});
        bwd_rev.push_back(
            {"loss.bwd",
             f.memory_bound(ir::OpClass::cross_entropy, rows * h * ab * 2, double(2 * rows * h)),
             {},
             {},
             {}});
      }
      b.saved_activations = activation_bytes_per_layer(m, w);
      b.weight_grad_inputs = weight_grad_input_bytes_of_layer(m, w, l);
      finish_block(b, bwd_rev, l);
      work.blocks.push_back(std::move(b));
    }
    for (const auto& b : work.blocks) {
      for (const auto& op : b.forward)
        work.model_flops += op.op.op == ir::OpClass::gemm ? op.op.flops : Flops{};
      for (const auto& op : b.backward)
        work.model_flops += op.op.op == ir::OpClass::gemm ? op.op.flops : Flops{};
    }
    return work;
  }

  if (w.cp < 1 || w.seq % w.cp != 0)
    throw UserError("context parallel size must divide the sequence length");
  if (w.cp > 1 && w.attention != AttentionImpl::fused)
    throw UserError(
        "context parallelism needs fused attention (ring attention is a flash-attention kernel)");
  const int64_t s = w.seq / w.cp, bsz = w.micro_batch, T = s * bsz, h = m.hidden;
  const int64_t T_sp =
      w.sequence_parallel ? T / t : T;  // tokens of the non-TP regions on this rank
  const int64_t heads_local = m.heads / t;
  const int64_t qkv_n = (m.q_hidden() + 2 * m.kv_hidden()) / t;
  const int64_t f_local = m.ffn_hidden / t;
  const int64_t fc1_n = (m.gated_mlp() ? 2 : 1) * f_local;
  const bool dropout = m.dropout > 0;
  const int64_t mask = dropout ? 1 : 0;
  const ir::OpClass norm = ir::OpClass::norm;
  const ChainKernels norm_kernels = m.gated_mlp() ? kRmsNormKernels : kLayerNormKernels;
  // Eager LayerNorm computes in fp32 under autocast (its fp32 list): its native kernels read and
  // write 4-byte elements, x and y forward (8 B) and dy, x, dx plus the weight gradient's dy, x
  // backward (20 B against 2 kernels x 3 x 4 = 24 priced). Llama's RMSNorm casts to fp32 and
  // back inside its chain, which its 8 + 10 kernels at the fused op's bytes already price: its
  // forward is 36 B per element op by op (the casts 6 + 6, pow 8, mean 4, the normalising mul 8,
  // the weight's mul 4; the [T, 1] ops are negligible) against 8 x 4 = 32.
  const bool norm_in_fp32 = norm_kernels.autocast_fp32 && p.autocast_copies;
  const ChainKernels act_kernels = m.gated_mlp()            ? kSwigluKernels
                                   : m.gelu_as_tensor_ops() ? kTanhGeluKernels
                                                            : kOneKernelGeluKernels;
  const ChainKernels dropout_add_kernels = dropout ? kDropoutAddKernels : ChainKernels{1, 1};
  const TpContext tp{t, w.sequence_parallel && t > 1, Bytes{T * h * ab}};

  // Embedding: gather rows (plus learned positions); backward scatters into a dense V x h gradient.
  {
    Block b;
    b.name = "embed";
    std::vector<Op> bwd_rev;
    const int64_t pos = m.learned_positions() ? 1 : 0;
    // Vocab-parallel embedding: each TP rank looks up its vocabulary slice, then the partial
    // results are summed (all-reduce; SP: reduce-scatter, whose backward is an all-gather).
    b.forward.push_back({"embed",
                         f.memory_bound(ir::OpClass::embedding, T_sp * h * ab * (2 + pos)),
                         {},
                         {},
                         tp.reduce()});
    const int64_t vocab_local = m.vocab / t;
    bwd_rev.push_back({"embed.bwd",
                       f.memory_bound(ir::OpClass::embedding, vocab_local * h * p.grad_bytes +
                                                                  T * h * (ab + 2 * p.grad_bytes)),
                       ids({"wte", "wpe"}),
                       tp.gather_if_sp(),
                       {}});
    finish_block(b, bwd_rev, 0);
    work.blocks.push_back(std::move(b));
  }

  // Checkpointing's transient: what a layer would have saved without recomputation, less what
  // it kept.
  WorkShape keep_all = w;
  keep_all.recompute = Recompute::none;
  auto recompute_transient = [&](int layer) {
    return Bytes{activation_bytes_of_layer(m, keep_all, layer).count -
                 activation_bytes_of_layer(m, w, layer).count};
  };
  auto norm_op = [&](Block& b, std::vector<Op>& bwd_rev, const std::string& name, int64_t elems,
                     std::vector<int> params) {
    b.forward.push_back(
        {name, f.memory_bound(norm, 2 * elems * ab, 5.0 * double(elems)), {}, {}, {}});
    b.forward.back().unfused_kernels = norm_kernels.forward;
    b.forward.back().unfused_in_fp32 = norm_in_fp32;
    bwd_rev.push_back({name + ".bwd",
                       f.memory_bound(norm, 3 * elems * ab, 8.0 * double(elems)),
                       std::move(params),
                       {},
                       {}});
    bwd_rev.back().unfused_kernels = norm_kernels.backward;
    bwd_rev.back().unfused_in_fp32 = norm_in_fp32;
  };
  auto all_ids = [&](const std::string& prefix, const std::string& suffix, int count) {
    std::vector<int> out;
    for (int x = 0; x < count; ++x) {
      if (auto it = id.find(prefix + std::to_string(x) + suffix); it != id.end())
        out.push_back(it->second);
    }
    return out;
  };

  // Attention core on the rank's s tokens per sequence: one fused kernel, ring attention's cp
  // steps, or eager's matmuls and softmax. `d` is the head size the FLOPs see (MLA: the mean of
  // the query/key and value sizes, 4 b h s^2 d / 2 = 2 b h s^2 (d_qk + d_v) / 2); `kv_width` the
  // K and V elements per token a ring step passes.
  auto attention_core = [&](Block& b, std::vector<Op>& bwd_rev, int64_t d, int64_t kv_width) {
    if (w.attention == AttentionImpl::fused && w.cp > 1 && w.cp_ring != CpRing::p2p) {
      torch_ring_attention(f, b, bwd_rev, w, bsz * heads_local, s, d);
    } else if (w.attention == AttentionImpl::fused && w.cp > 1) {
      // Ring attention over cp ranks, load-balanced for the causal mask (the sequence in 2 cp
      // chunks, rank i holding chunks i and 2cp - 1 - i): each of the cp steps does the causal
      // work of an s_local x s_local block (two half-size chunks against two, half masked), so
      // a step is the causal kernel at s_local and a rank does 1/cp of the whole attention.
      // While step j computes, the chunk it used travels on to the next rank (backward: K, V and
      // their gradients, twice the bytes); step j + 1 waits for it.
      const Bytes kv_chunk{bsz * s * kv_width * ab};
      auto p2p_step = [](Bytes passes, bool waits) {
        RingStep step;
        step.passes = passes;
        step.waits = waits;
        return step;
      };
      std::vector<Op> bwd_steps;
      for (int64_t j = 0; j < w.cp; ++j) {
        const std::string step = "attn.core.cp" + std::to_string(j);
        const bool last = j == w.cp - 1;
        b.forward.push_back({step,
                             f.attention(bsz * heads_local, s, d, 1.0),
                             {},
                             {},
                             {},
                             p2p_step(last ? Bytes{} : kv_chunk, j > 0)});
        bwd_steps.push_back({step + ".bwd",
                             f.attention(bsz * heads_local, s, d, 2.5),
                             {},
                             {},
                             {},
                             p2p_step(last ? Bytes{} : Bytes{2 * kv_chunk.count}, j > 0)});
      }
      // bwd_rev is reversed at the end; push the steps so that they run in ring order.
      for (auto it = bwd_steps.rbegin(); it != bwd_steps.rend(); ++it)
        bwd_rev.push_back(std::move(*it));
    } else if (w.attention == AttentionImpl::fused) {
      b.forward.push_back({"attn.core", f.attention(bsz * heads_local, s, d, 1.0), {}, {}, {}});
      bwd_rev.push_back({"attn.core.bwd", f.attention(bsz * heads_local, s, d, 2.5), {}, {}, {}});
    } else {
      // Eager: QK^T, scale + mask + softmax + dropout over the s x s scores, then scores x V.
      const int64_t scores = bsz * heads_local * s * s;
      b.forward.push_back({"attn.scores", f.gemm(s, s, d, bsz * heads_local), {}, {}, {}});
      b.forward.push_back(
          {"attn.softmax",
           f.memory_bound(ir::OpClass::softmax, scores * (8 * ab + mask), 5.0 * double(scores)),
           {},
           {},
           {}});
      b.forward.push_back({"attn.av", f.gemm(s, d, s, bsz * heads_local), {}, {}, {}});
      bwd_rev.push_back({"attn.scores.dgrad_k", f.gemm(s, d, s, bsz * heads_local), {}, {}, {}});
      bwd_rev.push_back({"attn.scores.dgrad_q", f.gemm(s, d, s, bsz * heads_local), {}, {}, {}});
      bwd_rev.push_back(
          {"attn.softmax.bwd",
           f.memory_bound(ir::OpClass::softmax, scores * (7 * ab + mask), 4.0 * double(scores)),
           {},
           {},
           {}});
      bwd_rev.push_back({"attn.av.dgrad_v", f.gemm(s, d, s, bsz * heads_local), {}, {}, {}});
      bwd_rev.push_back({"attn.av.dgrad_p", f.gemm(s, s, d, bsz * heads_local), {}, {}, {}});
    }
  };

  // MLA (DeepSeek-V2/V3): queries through the q latent, keys and values through the shared kv
  // latent (plus one rotary key for all heads), attention at qk_head_dim / v_head_dim, o_proj.
  // Under TP as Megatron-Core's MLASelfAttention: the down-projections (q_a, kv_a) are replicated
  // ("duplicated") and run on the rank's tokens, its sequence shard under SP; the
  // up-projections (q_b, or q without a q latent, and kv_b) are column-parallel by heads, so
  // under SP they all-gather the latent they read (kv_b's with the shared rotary key, which
  // Megatron gathers beside it), and o_proj is row-parallel.
  auto mla_attention = [&](Block& b, std::vector<Op>& bwd_rev, const std::string& n) {
    const MlaSpec& a = m.mla;
    const int64_t heads = m.heads, qk = a.qk_head_dim();
    const TpContext q_latent{t, tp.sp, Bytes{T * a.q_lora_rank * ab}};
    const TpContext kv_latent{t, tp.sp, Bytes{T * (a.kv_lora_rank + a.qk_rope_head_dim) * ab}};
    if (a.q_lora_rank > 0) {
      linear(f, b, "attn.q_a", T_sp, a.q_lora_rank, h, ids({n + "attn.q_a.weight"}), Split::none,
             tp, bwd_rev);
      norm_op(b, bwd_rev, "attn.q_a_norm", T_sp * a.q_lora_rank, ids({n + "attn.q_a_norm.weight"}));
      linear(f, b, "attn.q_b", T, heads * qk / t, a.q_lora_rank, ids({n + "attn.q_b.weight"}),
             Split::column, q_latent, bwd_rev);
    } else {
      linear(f, b, "attn.q", T, heads * qk / t, h, ids({n + "attn.q.weight"}), Split::column, tp,
             bwd_rev);
    }
    linear(f, b, "attn.kv_a", T_sp, a.kv_lora_rank + a.qk_rope_head_dim, h,
           ids({n + "attn.kv_a.weight"}), Split::none, tp, bwd_rev);
    norm_op(b, bwd_rev, "attn.kv_a_norm", T_sp * a.kv_lora_rank,
            ids({n + "attn.kv_a_norm.weight"}));
    linear(f, b, "attn.kv_b", T, heads * (a.qk_nope_head_dim + a.v_head_dim) / t, a.kv_lora_rank,
           ids({n + "attn.kv_b.weight"}), Split::column, kv_latent, bwd_rev);
    attention_core(b, bwd_rev, (qk + a.v_head_dim) / 2, heads * (qk + a.v_head_dim) / t);
    linear(f, b, "attn.proj", T, h, heads * a.v_head_dim / t, ids({n + "attn.proj.weight"}),
           Split::row, tp, bwd_rev);
  };

  // MoE MLP (Megatron-Core's alltoall dispatcher). The router (replicated) scores every expert
  // for the rank's T_sp tokens (its sequence shard: MoE with TP needs SP) and keeps top_k per
  // token; the rank permutes its T_sp k token copies by expert and sends them to the experts'
  // EP ranks (all-to-all), the busiest of which receives `routed` (moe_routed_tokens: balance,
  // capacity); an expert-TP group (etp > 1) all-gathers what its ranks received, each rank's
  // E / ep local experts (1 / etp of each) run as grouped GEMMs over those copies, the partial
  // outputs are reduce-scattered back over the expert-TP group, return by a second all-to-all and
  // are un-permuted into a weighted sum. Shared experts run beside as a TP-split dense SwiGLU.
  // The all-to-alls are sized by the busiest rank's copies: it receives the most, and every
  // rank waits for it. The allgather dispatcher instead all-gathers the T_sp tokens of every rank
  // of the etp x ep group (G T_sp h per rank) before the permute, whose local experts then take
  // the same `gathered` copies, and reduce-scatters the G T_sp outputs after the un-permute; no
  // all-to-all and no expert-TP collectives (the routing map and probabilities it also gathers,
  // T_sp x experts bits and top_k floats per token, are left out).
  auto moe_mlp = [&](Block& b, std::vector<Op>& bwd_rev, const std::string& n) {
    const MoeSpec& e = m.moe;
    const int64_t k = e.top_k, E = e.experts, local = E / w.ep, fe = e.expert_ffn_hidden / w.etp;
    const int64_t routed = moe_routed_tokens(m, w, T_sp), gathered = w.etp * routed;
    const int64_t per_expert = (gathered + local - 1) / local;
    linear(f, b, "mlp.router", T_sp, E, h,
           ids({n + "mlp.router.weight", n + "mlp.router.expert_bias"}), Split::none, tp, bwd_rev);
    b.forward.push_back(
        {"mlp.topk",
         f.memory_bound(ir::OpClass::softmax, T_sp * E * 4 * 2, 5.0 * double(T_sp * E)),
         {},
         {},
         {}});
    bwd_rev.push_back(
        {"mlp.topk.bwd",
         f.memory_bound(ir::OpClass::softmax, T_sp * E * 4 * 3, 4.0 * double(T_sp * E)),
         {},
         {},
         {}});
    const bool all_gather = w.moe_dispatcher == MoeDispatcher::allgather;
    const int64_t group = int64_t{w.ep} * w.etp;
    const OpCollective a2a = w.ep > 1 && !all_gather
                                 ? OpCollective{ir::CollectiveType::all_to_all,
                                                Bytes{routed * h * ab}, 1, OpGroup::expert_parallel}
                                 : OpCollective{};
    auto etp_op = [&](ir::CollectiveType type) {
      return w.etp > 1 && !all_gather
                 ? OpCollective{type, Bytes{gathered * h * ab}, 1, OpGroup::expert_tensor_parallel}
                 : OpCollective{};
    };
    auto group_op = [&](ir::CollectiveType type) {
      return all_gather && group > 1 ? OpCollective{type, Bytes{group * T_sp * h * ab}, 1,
                                                    OpGroup::expert_tensor_and_expert_parallel}
                                     : OpCollective{};
    };
    // alltoall: the rank's own copies permuted, then sent; allgather: the gathered tokens its
    // local experts take, picked out of the G T_sp gathered.
    const int64_t permuted = all_gather ? gathered : T_sp * k;
    b.forward.push_back({"mlp.permute",
                         f.memory_bound(ir::OpClass::memcpy, 2 * permuted * h * ab),
                         {},
                         group_op(ir::CollectiveType::all_gather),
                         a2a});
    bwd_rev.push_back({"mlp.permute.bwd",
                       f.memory_bound(ir::OpClass::memcpy, 2 * permuted * h * ab),
                       {},
                       a2a,
                       group_op(ir::CollectiveType::reduce_scatter)});
    // Grouped GEMMs over the local experts; fc1 reads the gathered tokens (its input gradient is
    // reduce-scattered back), fc2's partial outputs are reduce-scattered (its output gradient
    // gathered before its backward, whose wgrad runs first).
    auto grouped = [&](const std::string& name, int64_t out, int64_t in, std::vector<int> params,
                       bool first) {
      Op fwd{name, f.gemm(per_expert, out, in, local), {}, {}, {}};
      Op dgrad{name + ".dgrad", f.gemm(per_expert, in, out, local), {}, {}, {}};
      Op wgrad{name + ".wgrad", f.gemm(in, out, per_expert, local), std::move(params), {}, {}};
      if (first) {
        fwd.tp_before = etp_op(ir::CollectiveType::all_gather);
        dgrad.tp_after = etp_op(ir::CollectiveType::reduce_scatter);
      } else {
        fwd.tp_after = etp_op(ir::CollectiveType::reduce_scatter);
        wgrad.tp_before = etp_op(ir::CollectiveType::all_gather);
      }
      b.forward.push_back(std::move(fwd));
      bwd_rev.push_back(std::move(dgrad));
      bwd_rev.push_back(std::move(wgrad));
    };
    const std::string experts = n + "mlp.experts.";
    grouped("mlp.experts.fc1", 2 * fe, h, all_ids(experts, ".fc1.weight", e.experts), true);
    b.forward.push_back({"mlp.experts.act",
                         f.memory_bound(ir::OpClass::elementwise, gathered * fe * ab * 3,
                                        8.0 * double(gathered * fe)),
                         {},
                         {},
                         {}});
    b.forward.back().unfused_kernels = kSwigluKernels.forward;
    bwd_rev.push_back({"mlp.experts.act.bwd",
                       f.memory_bound(ir::OpClass::elementwise, gathered * fe * ab * 5,
                                      12.0 * double(gathered * fe)),
                       {},
                       {},
                       {}});
    bwd_rev.back().unfused_kernels = kSwigluKernels.backward;
    grouped("mlp.experts.fc2", h, fe, all_ids(experts, ".fc2.weight", e.experts), false);
    b.forward.push_back(
        {"mlp.unpermute",
         f.memory_bound(ir::OpClass::memcpy, 3 * permuted * h * ab, double(permuted * h)),
         {},
         a2a,
         group_op(ir::CollectiveType::reduce_scatter)});
    bwd_rev.push_back(
        {"mlp.unpermute.bwd",
         f.memory_bound(ir::OpClass::memcpy, 3 * permuted * h * ab, double(permuted * h)),
         {},
         group_op(ir::CollectiveType::all_gather),
         a2a});
    if (e.shared_experts > 0) {
      const int64_t fs = e.shared_ffn_hidden * e.shared_experts / t;
      const std::string shared = n + "mlp.shared_experts.";
      linear(f, b, "mlp.shared.fc1", T, 2 * fs, h, all_ids(shared, ".fc1.weight", e.shared_experts),
             Split::column, tp, bwd_rev);
      b.forward.push_back(
          {"mlp.shared.act",
           f.memory_bound(ir::OpClass::elementwise, T * fs * ab * 3, 8.0 * double(T * fs)),
           {},
           {},
           {}});
      b.forward.back().unfused_kernels = kSwigluKernels.forward;
      bwd_rev.push_back(
          {"mlp.shared.act.bwd",
           f.memory_bound(ir::OpClass::elementwise, T * fs * ab * 5, 12.0 * double(T * fs)),
           {},
           {},
           {}});
      bwd_rev.back().unfused_kernels = kSwigluKernels.backward;
      linear(f, b, "mlp.shared.fc2", T, h, fs, all_ids(shared, ".fc2.weight", e.shared_experts),
             Split::row, tp, bwd_rev);
    }
  };

  // One decoder layer: parameter names under `n`, layer index `l` (MTP modules: layers + k).
  auto decoder_layer = [&](Block& b, std::vector<Op>& bwd_rev, const std::string& n, int l) {
    norm_op(b, bwd_rev, "ln_1", T_sp * h, ids({n + "ln_1.weight", n + "ln_1.bias"}));
    if (m.mla.enabled()) {
      mla_attention(b, bwd_rev, n);
    } else {
      linear(f, b, "attn.qkv", T, qkv_n, h, ids({n + "attn.qkv.weight", n + "attn.qkv.bias"}),
             Split::column, tp, bwd_rev, has(n + "attn.qkv.bias"));
      if (m.rotary()) {
        // Rotary positions on q and k: read and write both (the cos/sin tables are small), fused
        // as one pass; eager PyTorch runs it as kRotaryKernels per tensor.
        const int64_t rotated = T * (m.q_hidden() + m.kv_hidden()) / t;
        b.forward.push_back(
            {"attn.rope",
             f.memory_bound(ir::OpClass::elementwise, 2 * rotated * ab, 3.0 * double(rotated)),
             {},
             {},
             {}});
        b.forward.back().unfused_kernels = kRotaryKernels.forward;
        bwd_rev.push_back(
            {"attn.rope.bwd",
             f.memory_bound(ir::OpClass::elementwise, 2 * rotated * ab, 3.0 * double(rotated)),
             {},
             {},
             {}});
        bwd_rev.back().unfused_kernels = kRotaryKernels.backward;
      }
      attention_core(b, bwd_rev, m.head_dim(), 2 * m.kv_hidden() / t);
      linear(f, b, "attn.proj", T, h, m.q_hidden() / t,
             ids({n + "attn.proj.weight", n + "attn.proj.bias"}), Split::row, tp, bwd_rev,
             has(n + "attn.proj.bias"));
    }
    b.forward.push_back(
        {"attn.dropout_add",
         f.memory_bound(ir::OpClass::elementwise, T_sp * h * (3 * ab + mask), double(T_sp * h)),
         {},
         {},
         {}});
    b.forward.back().unfused_kernels = dropout_add_kernels.forward;
    bwd_rev.push_back(
        {"attn.dropout_add.bwd",
         f.memory_bound(ir::OpClass::elementwise, T_sp * h * (2 * ab + mask), double(T_sp * h)),
         {},
         {},
         {}});
    bwd_rev.back().unfused_kernels = dropout_add_kernels.backward;
    norm_op(b, bwd_rev, "ln_2", T_sp * h, ids({n + "ln_2.weight", n + "ln_2.bias"}));
    if (m.is_moe_layer(l)) {
      moe_mlp(b, bwd_rev, n);
    } else {
      linear(f, b, "mlp.fc1", T, fc1_n, h, ids({n + "mlp.fc1.weight", n + "mlp.fc1.bias"}),
             Split::column, tp, bwd_rev, has(n + "mlp.fc1.bias"));
      const int64_t act_io =
          m.gated_mlp() ? 3 : 2;  // GELU: read, write; SwiGLU: read gate, up, write
      b.forward.push_back({"mlp.act",
                           f.memory_bound(ir::OpClass::elementwise, T * f_local * ab * act_io,
                                          8.0 * double(T * f_local)),
                           {},
                           {},
                           {}});
      b.forward.back().unfused_kernels = act_kernels.forward;
      b.forward.back().unfused_in_fp32 = act_kernels.autocast_fp32 && p.autocast_copies;
      if (m.gelu_as_tensor_ops()) b.forward.back().unfused_traffic = kTanhGeluForwardTraffic;
      bwd_rev.push_back({"mlp.act.bwd",
                         f.memory_bound(ir::OpClass::elementwise, T * f_local * ab * (act_io + 2),
                                        12.0 * double(T * f_local)),
                         {},
                         {},
                         {}});
      bwd_rev.back().unfused_kernels = act_kernels.backward;
      bwd_rev.back().unfused_in_fp32 = act_kernels.autocast_fp32 && p.autocast_copies;
      if (m.gelu_as_tensor_ops()) bwd_rev.back().unfused_traffic = kTanhGeluBackwardTraffic;
      linear(f, b, "mlp.fc2", T, h, f_local, ids({n + "mlp.fc2.weight", n + "mlp.fc2.bias"}),
             Split::row, tp, bwd_rev, has(n + "mlp.fc2.bias"));
    }
    b.forward.push_back(
        {"mlp.dropout_add",
         f.memory_bound(ir::OpClass::elementwise, T_sp * h * (3 * ab + mask), double(T_sp * h)),
         {},
         {},
         {}});
    b.forward.back().unfused_kernels = dropout_add_kernels.forward;
    bwd_rev.push_back(
        {"mlp.dropout_add.bwd",
         f.memory_bound(ir::OpClass::elementwise, T_sp * h * (2 * ab + mask), double(T_sp * h)),
         {},
         {},
         {}});
    bwd_rev.back().unfused_kernels = dropout_add_kernels.backward;
  };
  // Checkpointing: full re-runs the whole layer forward; selective re-runs the attention core;
  // op_selective re-runs every second GEMM (in forward order) and every op that is neither a GEMM
  // nor the fused attention kernel.
  auto add_recompute = [&](Block& b) {
    int gemms = 0;
    for (const Op& op : b.forward) {
      const bool core = op.name.rfind("attn.core", 0) == 0 || op.name == "attn.scores" ||
                        op.name == "attn.softmax" || op.name == "attn.av";
      bool again = w.recompute == Recompute::full || (w.recompute == Recompute::selective && core);
      if (w.recompute == Recompute::op_selective) {
        if (op.op.op == ir::OpClass::gemm) {
          again = ++gemms % 2 == 0;
        } else {
          again = op.op.op != ir::OpClass::attention;
        }
      }
      if (again) b.recompute.push_back(op);
    }
  };

  for (int l = 0; l < m.layers; ++l) {
    Block b;
    b.name = "L" + std::to_string(l);
    std::vector<Op> bwd_rev;
    decoder_layer(b, bwd_rev, "h." + std::to_string(l) + ".", l);
    b.saved_activations = activation_bytes_of_layer(m, w, l);
    b.recompute_transient = recompute_transient(l);
    b.weight_grad_inputs = weight_grad_input_bytes_of_layer(m, w, l);
    finish_block(b, bwd_rev, l + 1);
    add_recompute(b);
    work.blocks.push_back(std::move(b));
  }

  // Head: final norm, LM head (vocab-parallel under TP), cross-entropy with fp32 log-softmax; then
  // DeepSeek's multi-token prediction modules, each predicting one token further: RMSNorms of the
  // hidden state and of the next token's embedding, a [2h -> h] projection, one decoder layer, a
  // final norm and the shared head and loss again (the shared head's gradient is marked ready by
  // the main head's, which runs after them in backward).
  {
    Block b;
    b.name = "head";
    std::vector<Op> bwd_rev;
    const int64_t v_local = m.vocab / t;
    norm_op(b, bwd_rev, "ln_f", T_sp * h, ids({"ln_f.weight", "ln_f.bias"}));
    // The output head stays in 16 bits under FP8 training in every stack we model: Megatron-Core's
    // output_layer is its own ColumnParallelLinear, outside Transformer Engine's fp8_autocast;
    // TorchTitan's Float8 conversion skips the module named "output" (float8.filter_fqns); and
    // DeepSeek-V3's FP8 recipe keeps "the output head" in its original precision (arXiv
    // 2412.19437, sec. 3.3.1).
    OpFactory head = f;
    head.gemm_dt = std::nullopt;
    const std::string head_w = m.tied_embeddings() ? "" : "lm_head.weight";
    linear(head, b, "lm_head", T, v_local, h, ids({head_w}), Split::column, tp, bwd_rev);
    // Vocab-parallel cross-entropy all-reduces, per token, the logit max, the sum of exponentials
    // and the target logit (three fp32 all-reduces of T values).
    const OpCollective loss_sync =
        t > 1 ? OpCollective{ir::CollectiveType::all_reduce, Bytes{T * 4}, 3} : OpCollective{};
    auto loss = [&](const std::string& name) {
      b.forward.push_back({name,
                           f.memory_bound(ir::OpClass::cross_entropy, T * v_local * (ab + 8),
                                          5.0 * double(T * v_local)),
                           {},
                           {},
                           loss_sync});
      b.forward.back().unfused_kernels = kCrossEntropyKernels.forward;
      bwd_rev.push_back({name + ".bwd",
                         f.memory_bound(ir::OpClass::cross_entropy, T * v_local * (8 + ab),
                                        3.0 * double(T * v_local)),
                         {},
                         {},
                         {}});
      bwd_rev.back().unfused_kernels = kCrossEntropyKernels.backward;
    };
    loss("loss");
    int64_t saved = 0;
    for (int k = 0; k < m.mtp_depth; ++k) {
      const std::string n = "mtp." + std::to_string(k) + ".";
      norm_op(b, bwd_rev, "mtp.enorm", T_sp * h, ids({n + "enorm.weight"}));
      norm_op(b, bwd_rev, "mtp.hnorm", T_sp * h, ids({n + "hnorm.weight"}));
      linear(f, b, "mtp.eh_proj", T, h, 2 * h, ids({n + "eh_proj.weight"}), Split::none, tp,
             bwd_rev);
      decoder_layer(b, bwd_rev, n, m.layers + k);
      norm_op(b, bwd_rev, "mtp.norm", T_sp * h, ids({n + "norm.weight"}));
      linear(head, b, "mtp.lm_head", T, v_local, h, {}, Split::column, tp, bwd_rev);
      loss("mtp.loss");
      saved += activation_bytes_of_layer(m, w, m.layers + k).count +
               T * 2 * h * ab;  // the layer and eh_proj's input
    }
    b.saved_activations = {saved};
    // Logits (16-bit) and the fp32 log-softmax kept for each loss's gradient. Eager PyTorch's
    // loss (Hugging Face's ForCausalLMLoss: logits.float(), then cross_entropy) holds, where the
    // forward turns into the backward, the fp32 log-softmax output it saved, the gradient flowing
    // into it and the gradient it produces: three fp32 tensors, 12 B per logit (the 16-bit
    // logits and their fp32 copy are freed by then). GPT-2 Large at batch 16 on one H100 is out
    // of memory in PyTorch only with these (validate/suites/h100_torch_steps_202611.yaml).
    const int64_t logit_bytes = w.unfused_chains || w.eager_loss ? 12 : ab + 4;
    b.logits = {(1 + m.mtp_depth) * T * v_local * logit_bytes};
    finish_block(b, bwd_rev, m.layers + 1);
    work.blocks.push_back(std::move(b));
  }

  // Model FLOPs: GEMM and attention FLOPs of forward and backward over all TP ranks. The routed
  // experts count the balanced, dropless copies (T_sp top_k per rank): what imbalance or padding
  // adds on the busiest rank is time, not model work.
  const double useful = m.moe.enabled() ? static_cast<double>(T_sp * m.moe.top_k) /
                                              static_cast<double>(moe_routed_tokens(m, w, T_sp))
                                        : 1.0;
  Flops per_rank;
  for (const auto& b : work.blocks) {
    for (const auto* list : {&b.forward, &b.backward}) {
      for (const auto& op : *list) {
        if (op.op.op != ir::OpClass::gemm && op.op.op != ir::OpClass::attention) continue;
        per_rank +=
            op.name.rfind("mlp.experts.", 0) == 0 ? Flops{op.op.flops.value * useful} : op.op.flops;
      }
    }
  }
  work.model_flops = {per_rank.value * t};
  return work;
}

}  // namespace cs::model
