#include "models/layers/lora.h"

#include "common/error.h"

namespace cs::model::layers {

namespace {

// The collectives around one adapter GEMM (Megatron-Core's linear layers run them synchronously).
struct AdapterComms {
  OpCollective before, after;  // forward
  OpCollective dgrad_after;    // the input gradient's reduction
  OpCollective wgrad_before;   // the output gradient gathered (wgrad runs first in backward)
};

// One of A or B, x[tokens, k] times [k, n]: forward, input gradient and weight gradient (which
// completes `params`), each 2 tokens n k FLOPs.
void adapter_gemm(BlockOps& ops, const OpFactory& f, const std::string& name, int64_t tokens,
                  int64_t n, int64_t k, std::vector<int> params, const AdapterComms& comms) {
  Op fwd = named(name, f.gemm(tokens, n, k));
  fwd.tp_before = comms.before;
  fwd.tp_after = comms.after;
  Op dgrad = named(name + ".dgrad", f.gemm(tokens, k, n));
  dgrad.tp_after = comms.dgrad_after;
  Op wgrad = named(name + ".wgrad", f.gemm(k, n, tokens), std::move(params));
  wgrad.tp_before = comms.wgrad_before;
  ops.forward.push_back(std::move(fwd));
  // Backward in forward order (BlockOps): wgrad then dgrad in execution order, as linear().
  ops.reversed_backward.push_back(std::move(dgrad));
  ops.reversed_backward.push_back(std::move(wgrad));
}

// Dropout ('pre', LoRA.dropout > 0) on A's input: read it, write the output and a 1-byte mask;
// backward reads the gradient and the mask, writes the input's gradient.
void adapter_dropout(const LayerContext& c, BlockOps& ops, const std::string& name,
                     int64_t elements) {
  const ir::ComputeOp pass =
      c.f.memory_bound(ir::OpClass::elementwise, elements * (2 * c.ab + 1), double(elements));
  ops.add(named(name + ".dropout", pass), named(name + ".dropout.bwd", pass));
}

// x * (alpha / rank), then W's output + that: two kernels over the output, reading 1 + 2 and
// writing 1 + 1 elements; backward the scale's (the add passes its gradient on unchanged).
void adapter_scale_add(const LayerContext& c, BlockOps& ops, const std::string& name,
                       int64_t elements) {
  ops.add(named(name + ".scale_add", c.f.memory_bound(ir::OpClass::elementwise, elements * 5 * c.ab,
                                                      2.0 * double(elements))),
          named(name + ".scale.bwd",
                c.f.memory_bound(ir::OpClass::elementwise, elements * 2 * c.ab, double(elements))));
}

}  // namespace

std::string lora_summary(const LoraSpec& lora) {
  std::string s = "LoRA rank " + std::to_string(lora.rank) + " on ";
  const char* comma = "";
  for (const auto& [name, target] : lora_target_names()) {
    if (!lora.adapts(target)) continue;
    s += comma + name;
    comma = ", ";
  }
  return s;
}

std::string lora_target_linear(LoraTarget target) {
  switch (target) {
    case LoraTarget::linear_qkv:
      return "attn.qkv";
    case LoraTarget::linear_proj:
      return "attn.proj";
    case LoraTarget::linear_fc1:
      return "mlp.fc1";
    case LoraTarget::linear_fc2:
      return "mlp.fc2";
  }
  return "?";
}

LoraTargetShape lora_target_shape(const ModelSpec& m, LoraTarget target) {
  switch (target) {
    case LoraTarget::linear_qkv:
      return {m.hidden, m.q_hidden() + 2 * m.kv_hidden(), true};
    case LoraTarget::linear_proj:
      return {m.q_hidden(), m.hidden, false};
    case LoraTarget::linear_fc1:
      return {m.hidden, (m.gated_mlp() ? 2 : 1) * m.ffn_hidden, true};
    case LoraTarget::linear_fc2:
      return {m.ffn_hidden, m.hidden, false};
  }
  return {};
}

void add_lora_adapters(const ModelSpec& m, const LoraSpec& lora,
                       std::vector<ParameterTensor>& params) {
  for (ParameterTensor& p : params) p.frozen = true;
  for (int l = 0; l < m.layers; ++l) {
    for (const auto& [_, target] : lora_target_names()) {
      if (!lora.adapts(target)) continue;
      const LoraTargetShape shape = lora_target_shape(m, target);
      const std::string name = "h." + std::to_string(l) + "." + lora_target_linear(target);
      // Both split by tensor parallelism (see lora.h); an adapter lives in its layer's block.
      for (const auto& [suffix, numel] : {std::pair{".lora_a.weight", shape.in * lora.rank},
                                          std::pair{".lora_b.weight", lora.rank * shape.out}}) {
        ParameterTensor t{name + suffix, l + 1, numel, true, l};
        t.role = ParamRole::lora_adapter;
        params.push_back(std::move(t));
      }
    }
  }
}

void lora_adapter(const LayerContext& c, BlockOps& ops, LoraTarget target,
                  const std::string& prefix) {
  const LoraSpec& lora = c.w.lora;
  if (!lora.adapts(target)) return;
  const LoraTargetShape shape = lora_target_shape(c.m, target);
  const std::string name = lora_target_linear(target) + ".lora";
  const std::string param = prefix + lora_target_linear(target) + ".lora_";
  OpFactory f = c.f;  // A and B run in the compute dtype, outside the FP8 recipe
  f.gemm_dt = std::nullopt;
  f.scaling = Scaling::none;
  const int64_t T = c.T, r = lora.rank, t = c.t;
  const TpContext rank_wide{c.t, c.tp.sp, Bytes{T * r * c.ab}};  // [T, rank] tensors
  const int64_t out_local = shape.out / t;
  if (shape.column) {
    if (lora.dropout > 0) adapter_dropout(c, ops, name, c.T_sp * shape.in);
    adapter_gemm(
        ops, f, name + "_a", T, r / t, shape.in, c.ids({param + "a.weight"}),
        {c.tp.gather_if_sp(), rank_wide.make(ir::CollectiveType::all_gather), c.tp.reduce(), {}});
    adapter_gemm(ops, f, name + "_b", T, out_local, r, c.ids({param + "b.weight"}),
                 {{}, {}, rank_wide.make(ir::CollectiveType::all_reduce), {}});
    adapter_scale_add(c, ops, name, T * out_local);
  } else {
    const TpContext out_wide{c.t, c.tp.sp, Bytes{T * shape.out * c.ab}};
    const int64_t in_local = shape.in / t;
    if (lora.dropout > 0) adapter_dropout(c, ops, name, T * in_local);
    adapter_gemm(ops, f, name + "_a", T, r, in_local, c.ids({param + "a.weight"}),
                 {{}, rank_wide.make(ir::CollectiveType::all_reduce), {}, {}});
    adapter_gemm(ops, f, name + "_b", T, out_local, r, c.ids({param + "b.weight"}),
                 {{},
                  out_wide.make(ir::CollectiveType::all_gather),
                  rank_wide.make(ir::CollectiveType::all_reduce),
                  out_wide.gather_if_sp()});
    adapter_scale_add(c, ops, name, c.T_sp * shape.out);
  }
}

int64_t lora_saved_bytes_per_token(const ModelSpec& m, const WorkShape& w) {
  const LoraSpec& lora = w.lora;
  const int64_t ab = precision_info(w.precision).activation_bytes, t = w.tp;
  const bool sp = w.sequence_parallel && t > 1, dropout = lora.dropout > 0;
  int64_t bytes = 0;
  for (const auto& [_, target] : lora_target_names()) {
    if (!lora.adapts(target)) continue;
    const LoraTargetShape shape = lora_target_shape(m, target);
    const int64_t in_local = shape.column ? shape.in : shape.in / t;  // A's input width
    bytes += ab * lora.rank;                                          // B's input
    const bool gathers = shape.column && sp;
    if (gathers || dropout) bytes += ab * in_local;  // A's own copy of its input
    // Dropout runs on the input as W receives it: the sequence shard under SP.
    if (dropout) bytes += gathers ? shape.in / t : in_local;
  }
  return bytes;
}

void check_lora_shape(const ModelSpec& m, const WorkShape& w) {
  const LoraSpec& lora = w.lora;
  if (!lora.enabled()) return;
  if (lora.rank > limits::max_rank || !(lora.dropout >= 0 && lora.dropout < 1) ||
      !(lora.alpha > 0)) {
    throw UserError("LoRA needs a rank in [1, " + std::to_string(limits::max_rank) +
                    "], a positive alpha and a dropout in [0, 1)");
  }
  if (m.family == Family::mlp || m.moe.enabled() || m.mla.enabled() || m.hybrid() ||
      m.mtp_depth > 0) {
    throw UserError(m.name +
                    ": LoRA is modelled on dense decoder layers (attention with fused q/k/v and a "
                    "dense MLP), not on MoE, MLA, Mamba, multi-token prediction or the mlp "
                    "family's layers");
  }
  const bool column_target =
      lora.adapts(LoraTarget::linear_qkv) || lora.adapts(LoraTarget::linear_fc1);
  if (column_target && lora.rank % w.tp != 0) {
    throw UserError("LoRA rank " + std::to_string(lora.rank) +
                    " must be divisible by the tensor parallel size " + std::to_string(w.tp) +
                    " (the A beside linear_qkv and linear_fc1 is split over its rank)");
  }
}

}  // namespace cs::model::layers
