#include "models/model_work.h"

#include <unordered_map>

#include "common/error.h"

namespace cs::model {

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::amp_fp16: return "amp_fp16";
    case Precision::amp_bf16: return "amp_bf16";
    case Precision::mixed_fp16: return "mixed_fp16";
    case Precision::mixed_bf16: return "mixed_bf16";
  }
  return "?";
}
std::string_view to_string(AttentionImpl a) { return a == AttentionImpl::fused ? "fused" : "eager"; }
std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

PrecisionInfo precision_info(Precision p) {
  switch (p) {
    case Precision::fp32: return {ir::DType::fp32, 4, 4, 8, 4, false};
    case Precision::amp_fp16: return {ir::DType::fp16, 4, 4, 8, 2, true};
    case Precision::amp_bf16: return {ir::DType::bf16, 4, 4, 8, 2, true};
    case Precision::mixed_fp16: return {ir::DType::fp16, 2, 2, 12, 2, false};
    case Precision::mixed_bf16: return {ir::DType::bf16, 2, 2, 12, 2, false};
  }
  return {ir::DType::fp32, 4, 4, 8, 4, false};
}

namespace {

// Tensor parallelism of one TP rank: which collectives the Megatron layers need and their size.
// `full` is one [s, b, h] activation at 16 bits (the unsplit hidden state all TP ranks exchange).
struct TpContext {
  int t = 1;
  bool sp = false;
  Bytes full;
  TpCollective make(ir::CollectiveType type) const { return t > 1 ? TpCollective{type, full, 1} : TpCollective{}; }
  // Sequence parallelism replaces an all-reduce by a reduce-scatter (leaving the output sharded on
  // the sequence) and needs an all-gather before a column-parallel layer (its input is sharded).
  TpCollective reduce() const { return make(sp ? ir::CollectiveType::reduce_scatter : ir::CollectiveType::all_reduce); }
  TpCollective gather_if_sp() const { return sp ? make(ir::CollectiveType::all_gather) : TpCollective{}; }
};

enum class Split : uint8_t { none, column, row };

// A linear layer y[T, n] = x[T, k] W[k, n]: forward GEMM; backward dgrad (dx = dy W^T) and wgrad
// (dW = x^T dy), each with the forward's 2*T*n*k FLOPs, so backward = 2x forward.
// Megatron: a column-parallel layer all-reduces its input gradient in backward (SP: all-gathers
// its input in forward and again for wgrad, reduce-scatters the input gradient); a row-parallel
// layer all-reduces its output in forward (SP: reduce-scatters it, all-gathers its gradient).
void linear(const OpFactory& f, Block& b, const std::string& name, int64_t tokens, int64_t n,
            int64_t k, std::vector<int> params, Split split, const TpContext& tp, std::vector<Op>& bwd_rev) {
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
  // bwd_rev is filled in forward order and reversed at the end: wgrad then dgrad in execution order.
  bwd_rev.push_back(std::move(dgrad));
  bwd_rev.push_back(std::move(wgrad));
}

}  // namespace

Bytes activation_bytes_per_layer(const ModelSpec& m, const WorkShape& w) {
  const PrecisionInfo p = precision_info(w.precision);
  const int64_t ab = p.activation_bytes;
  const int64_t s = w.seq / w.cp, b = w.micro_batch, h = m.hidden, t = w.tp;
  const int64_t sbh = s * b * h;
  if (m.family == Family::mlp) return {b * h * ab * 2};  // linear input + ReLU output
  if (w.recompute == Recompute::full) return {sbh * ab / (w.sequence_parallel ? t : 1)};  // layer input only
  const int64_t masks = m.dropout > 0 ? 2 : 0;  // 1-byte dropout masks after attention and MLP
  // Not split by TP (split by SP): two norm inputs, the QKV input, the fc1 input, dropout masks.
  int64_t replicated = sbh * (4 * ab + masks);
  if (w.sequence_parallel) replicated /= t;
  // Split by TP: Q, K, V (GQA shrinks K, V), the projection input, and the MLP inner activations
  // (GELU: fc1 output and fc2 input; SwiGLU: gate, up and their product).
  const int64_t f = m.ffn_hidden;
  const int64_t qkv_proj = s * b * ab * (2 * m.q_hidden() + 2 * m.kv_hidden());
  const int64_t mlp_inner = s * b * f * ab * (m.gated_mlp() ? 3 : 2);
  int64_t split = (qkv_proj + mlp_inner) / t;
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
  return {replicated + split + core};
}

ir::ComputeOp OpFactory::gemm(int64_t m, int64_t n, int64_t k, int64_t batch) const {
  ir::ComputeOp op;
  op.op = ir::OpClass::gemm;
  op.dtype = dt;
  op.m = m; op.n = n; op.k = k; op.batch = batch;
  op.flops = {2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch)};
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
  op.batch = batch_heads; op.m = s; op.n = s; op.k = d;
  op.flops = {factor * 4.0 * static_cast<double>(batch_heads) * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(d) * 0.5};
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

ModelWork build_model_work(const ModelSpec& m, const WorkShape& w) {
  validate(m);
  const PrecisionInfo p = precision_info(w.precision);
  const OpFactory f{p.compute, p.activation_bytes};
  const int64_t ab = p.activation_bytes;
  const int t = w.tp;
  if (t < 1) throw UserError("tensor parallel size must be at least 1");
  if (m.moe.enabled() || m.mla.enabled()) {
    throw UserError(m.name + ": mixture-of-experts and MLA layers are described (parameters, model state) but their per-op work is not "
                    "simulated yet; simulate a dense model");
  }
  if (m.family != Family::mlp) {
    if (m.heads % t != 0 || (m.kv_heads >= t && m.kv_heads % t != 0)) {
      throw UserError("tensor parallel size " + std::to_string(t) + " must divide the attention heads (" +
                      std::to_string(m.heads) + ") and KV heads (" + std::to_string(m.kv_heads) + ") of " + m.name);
    }
    if (m.ffn_hidden % t != 0) throw UserError("tensor parallel size " + std::to_string(t) + " must divide ffn_hidden of " + m.name);
    if (w.seq > m.max_seq) throw UserError("sequence length " + std::to_string(w.seq) + " exceeds " + m.name + "'s context of " + std::to_string(m.max_seq));
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
  auto block_bytes = [&](int block) {
    int64_t n = 0;
    for (const auto& prm : work.params) n += prm.block == block ? prm.numel_per_tp_rank(t) : 0;
    return n;
  };
  auto finish_block = [&](Block& b, std::vector<Op>& bwd_rev, int block_index) {
    for (auto it = bwd_rev.rbegin(); it != bwd_rev.rend(); ++it) b.backward.push_back(std::move(*it));
    for (int i = 0; i < static_cast<int>(work.params.size()); ++i) {
      if (work.params[i].block == block_index) b.params.push_back(i);
    }
    if (p.autocast_copies) b.autocast_weights = {block_bytes(block_index) * ab};
    // amp casts each fp32 weight to 16 bits once per forward: read 4, write 2 bytes per element.
    if (p.autocast_copies && block_bytes(block_index) > 0) {
      b.forward.insert(b.forward.begin(), Op{"weights.cast", f.memory_bound(ir::OpClass::elementwise, block_bytes(block_index) * 6), {}, {}, {}});
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
      linear(f, b, n, rows, h, h, ids({n + ".weight", n + ".bias"}), Split::none, TpContext{}, bwd_rev);
      b.forward.push_back({n + ".relu", f.memory_bound(ir::OpClass::elementwise, rows * h * ab * 2, double(rows * h)), {}, {}, {}});
      bwd_rev.push_back({n + ".relu.bwd", f.memory_bound(ir::OpClass::elementwise, rows * h * ab * 3, double(rows * h)), {}, {}, {}});
      if (l == m.layers - 1) {
        b.forward.push_back({"loss", f.memory_bound(ir::OpClass::cross_entropy, rows * h * ab * 2, double(3 * rows * h)), {}, {}, {}});
        bwd_rev.push_back({"loss.bwd", f.memory_bound(ir::OpClass::cross_entropy, rows * h * ab * 2, double(2 * rows * h)), {}, {}, {}});
      }
      b.saved_activations = activation_bytes_per_layer(m, w);
      finish_block(b, bwd_rev, l);
      work.blocks.push_back(std::move(b));
    }
    for (const auto& b : work.blocks) {
      for (const auto& op : b.forward) work.model_flops += op.op.op == ir::OpClass::gemm ? op.op.flops : Flops{};
      for (const auto& op : b.backward) work.model_flops += op.op.op == ir::OpClass::gemm ? op.op.flops : Flops{};
    }
    return work;
  }

  if (w.cp < 1 || w.seq % w.cp != 0) throw UserError("context parallel size must divide the sequence length");
  if (w.cp > 1 && w.attention != AttentionImpl::fused) throw UserError("context parallelism needs fused attention (ring attention is a flash-attention kernel)");
  const int64_t s = w.seq / w.cp, bsz = w.micro_batch, T = s * bsz, h = m.hidden;
  const int64_t T_sp = w.sequence_parallel ? T / t : T;   // tokens of the non-TP regions on this rank
  const int64_t heads_local = m.heads / t;
  const int64_t qkv_n = (m.q_hidden() + 2 * m.kv_hidden()) / t;
  const int64_t f_local = m.ffn_hidden / t;
  const int64_t fc1_n = (m.gated_mlp() ? 2 : 1) * f_local;
  const bool dropout = m.dropout > 0;
  const int64_t mask = dropout ? 1 : 0;
  const ir::OpClass norm = ir::OpClass::norm;
  const TpContext tp{t, w.sequence_parallel && t > 1, Bytes{T * h * ab}};

  // Embedding: gather rows (plus learned positions); backward scatters into a dense V x h gradient.
  {
    Block b;
    b.name = "embed";
    std::vector<Op> bwd_rev;
    const int64_t pos = m.learned_positions() ? 1 : 0;
    // Vocab-parallel embedding: each TP rank looks up its vocabulary slice, then the partial
    // results are summed (all-reduce; SP: reduce-scatter, whose backward is an all-gather).
    b.forward.push_back({"embed", f.memory_bound(ir::OpClass::embedding, T_sp * h * ab * (2 + pos)), {}, {}, tp.reduce()});
    const int64_t vocab_local = m.vocab / t;
    bwd_rev.push_back({"embed.bwd", f.memory_bound(ir::OpClass::embedding, vocab_local * h * p.grad_bytes + T * h * (ab + 2 * p.grad_bytes)),
                       ids({"wte", "wpe"}), tp.gather_if_sp(), {}});
    finish_block(b, bwd_rev, 0);
    work.blocks.push_back(std::move(b));
  }

  const Bytes layer_saved = activation_bytes_per_layer(m, w);
  for (int l = 0; l < m.layers; ++l) {
    Block b;
    b.name = "L" + std::to_string(l);
    std::vector<Op> bwd_rev;
    const std::string n = "h." + std::to_string(l) + ".";
    // Attention sub-block.
    b.forward.push_back({"ln_1", f.memory_bound(norm, 2 * T_sp * h * ab, 5.0 * double(T_sp * h)), {}, {}, {}});
    bwd_rev.push_back({"ln_1.bwd", f.memory_bound(norm, 3 * T_sp * h * ab, 8.0 * double(T_sp * h)), ids({n + "ln_1.weight", n + "ln_1.bias"}), {}, {}});
    linear(f, b, "attn.qkv", T, qkv_n, h, ids({n + "attn.qkv.weight", n + "attn.qkv.bias"}), Split::column, tp, bwd_rev);
    if (w.attention == AttentionImpl::fused && w.cp > 1) {
      // Ring attention over cp ranks, load-balanced for the causal mask (the sequence in 2 cp
      // chunks, rank i holding chunks i and 2cp - 1 - i): each of the cp steps does the causal
      // work of an s_local x s_local block (two half-size chunks against two, half masked), so
      // a step is the causal kernel at s_local and a rank does 1/cp of the whole attention.
      // While step j computes, the chunk it used travels on to the next rank (backward: K, V and
      // their gradients, twice the bytes); step j + 1 waits for it. KV heads are split by TP.
      const Bytes kv_chunk{2 * bsz * s * (m.kv_hidden() / t) * ab};
      const int64_t cp_steps = w.cp;
      std::vector<Op> bwd_steps;
      for (int64_t j = 0; j < cp_steps; ++j) {
        const std::string step = "attn.core.cp" + std::to_string(j);
        const bool last = j == cp_steps - 1;
        b.forward.push_back({step, f.attention(bsz * heads_local, s, m.head_dim(), 1.0), {}, {}, {}, {last ? Bytes{} : kv_chunk, j > 0}});
        bwd_steps.push_back({step + ".bwd", f.attention(bsz * heads_local, s, m.head_dim(), 2.5), {}, {}, {},
                             {last ? Bytes{} : Bytes{2 * kv_chunk.count}, j > 0}});
      }
      // bwd_rev is reversed at the end; push the steps so that they run in ring order.
      for (auto it = bwd_steps.rbegin(); it != bwd_steps.rend(); ++it) bwd_rev.push_back(std::move(*it));
    } else if (w.attention == AttentionImpl::fused) {
      b.forward.push_back({"attn.core", f.attention(bsz * heads_local, s, m.head_dim(), 1.0), {}, {}, {}});
      bwd_rev.push_back({"attn.core.bwd", f.attention(bsz * heads_local, s, m.head_dim(), 2.5), {}, {}, {}});
    } else {
      // Eager: QK^T, scale + mask + softmax + dropout over the s x s scores, then scores x V.
      const int64_t scores = bsz * heads_local * s * s;
      const int64_t d = m.head_dim();
      b.forward.push_back({"attn.scores", f.gemm(s, s, d, bsz * heads_local), {}, {}, {}});
      b.forward.push_back({"attn.softmax", f.memory_bound(ir::OpClass::softmax, scores * (8 * ab + mask), 5.0 * double(scores)), {}, {}, {}});
      b.forward.push_back({"attn.av", f.gemm(s, d, s, bsz * heads_local), {}, {}, {}});
      bwd_rev.push_back({"attn.scores.dgrad_k", f.gemm(s, d, s, bsz * heads_local), {}, {}, {}});
      bwd_rev.push_back({"attn.scores.dgrad_q", f.gemm(s, d, s, bsz * heads_local), {}, {}, {}});
      bwd_rev.push_back({"attn.softmax.bwd", f.memory_bound(ir::OpClass::softmax, scores * (7 * ab + mask), 4.0 * double(scores)), {}, {}, {}});
      bwd_rev.push_back({"attn.av.dgrad_v", f.gemm(s, d, s, bsz * heads_local), {}, {}, {}});
      bwd_rev.push_back({"attn.av.dgrad_p", f.gemm(s, s, d, bsz * heads_local), {}, {}, {}});
    }
    linear(f, b, "attn.proj", T, h, m.q_hidden() / t, ids({n + "attn.proj.weight", n + "attn.proj.bias"}), Split::row, tp, bwd_rev);
    b.forward.push_back({"attn.dropout_add", f.memory_bound(ir::OpClass::elementwise, T_sp * h * (3 * ab + mask), double(T_sp * h)), {}, {}, {}});
    bwd_rev.push_back({"attn.dropout_add.bwd", f.memory_bound(ir::OpClass::elementwise, T_sp * h * (2 * ab + mask), double(T_sp * h)), {}, {}, {}});
    // MLP sub-block.
    b.forward.push_back({"ln_2", f.memory_bound(norm, 2 * T_sp * h * ab, 5.0 * double(T_sp * h)), {}, {}, {}});
    bwd_rev.push_back({"ln_2.bwd", f.memory_bound(norm, 3 * T_sp * h * ab, 8.0 * double(T_sp * h)), ids({n + "ln_2.weight", n + "ln_2.bias"}), {}, {}});
    linear(f, b, "mlp.fc1", T, fc1_n, h, ids({n + "mlp.fc1.weight", n + "mlp.fc1.bias"}), Split::column, tp, bwd_rev);
    const int64_t act_io = m.gated_mlp() ? 3 : 2;  // GELU: read, write; SwiGLU: read gate, up, write
    b.forward.push_back({"mlp.act", f.memory_bound(ir::OpClass::elementwise, T * f_local * ab * act_io, 8.0 * double(T * f_local)), {}, {}, {}});
    bwd_rev.push_back({"mlp.act.bwd", f.memory_bound(ir::OpClass::elementwise, T * f_local * ab * (act_io + 2), 12.0 * double(T * f_local)), {}, {}, {}});
    linear(f, b, "mlp.fc2", T, h, f_local, ids({n + "mlp.fc2.weight", n + "mlp.fc2.bias"}), Split::row, tp, bwd_rev);
    b.forward.push_back({"mlp.dropout_add", f.memory_bound(ir::OpClass::elementwise, T_sp * h * (3 * ab + mask), double(T_sp * h)), {}, {}, {}});
    bwd_rev.push_back({"mlp.dropout_add.bwd", f.memory_bound(ir::OpClass::elementwise, T_sp * h * (2 * ab + mask), double(T_sp * h)), {}, {}, {}});
    b.saved_activations = layer_saved;
    finish_block(b, bwd_rev, l + 1);
    // Checkpointing: full re-runs the whole layer forward; selective re-runs the attention core.
    for (const Op& op : b.forward) {
      const bool core = op.name.rfind("attn.core", 0) == 0 || op.name == "attn.scores" || op.name == "attn.softmax" || op.name == "attn.av";
      if (w.recompute == Recompute::full || (w.recompute == Recompute::selective && core)) b.recompute.push_back(op);
    }
    work.blocks.push_back(std::move(b));
  }

  // Head: final norm, LM head (vocab-parallel under TP), cross-entropy with fp32 log-softmax.
  {
    Block b;
    b.name = "head";
    std::vector<Op> bwd_rev;
    const int64_t v_local = m.vocab / t;
    b.forward.push_back({"ln_f", f.memory_bound(norm, 2 * T_sp * h * ab, 5.0 * double(T_sp * h)), {}, {}, {}});
    bwd_rev.push_back({"ln_f.bwd", f.memory_bound(norm, 3 * T_sp * h * ab, 8.0 * double(T_sp * h)), ids({"ln_f.weight", "ln_f.bias"}), {}, {}});
    const std::string head_w = m.tied_embeddings() ? "" : "lm_head.weight";
    linear(f, b, "lm_head", T, v_local, h, ids({head_w}), Split::column, tp, bwd_rev);
    // Vocab-parallel cross-entropy all-reduces, per token, the logit max, the sum of exponentials
    // and the target logit (three fp32 all-reduces of T values).
    const TpCollective loss_sync = t > 1 ? TpCollective{ir::CollectiveType::all_reduce, Bytes{T * 4}, 3} : TpCollective{};
    b.forward.push_back({"loss", f.memory_bound(ir::OpClass::cross_entropy, T * v_local * (ab + 8), 5.0 * double(T * v_local)), {}, {}, loss_sync});
    bwd_rev.push_back({"loss.bwd", f.memory_bound(ir::OpClass::cross_entropy, T * v_local * (8 + ab), 3.0 * double(T * v_local)), {}, {}, {}});
    // Logits (16-bit) and the fp32 log-softmax kept for the loss gradient.
    b.logits = {T * v_local * (ab + 4)};
    finish_block(b, bwd_rev, m.layers + 1);
    work.blocks.push_back(std::move(b));
  }

  // Model FLOPs: GEMM and attention FLOPs of forward and backward over all TP ranks.
  Flops per_rank;
  for (const auto& b : work.blocks) {
    for (const auto* list : {&b.forward, &b.backward}) {
      for (const auto& op : *list) {
        if (op.op.op == ir::OpClass::gemm || op.op.op == ir::OpClass::attention) per_rank += op.op.flops;
      }
    }
  }
  work.model_flops = {per_rank.value * t};
  return work;
}

}  // namespace cs::model
