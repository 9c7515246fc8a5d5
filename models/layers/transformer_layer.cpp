#include "models/layers/transformer_layer.h"

#include "models/layers/attention.h"
#include "models/layers/mamba.h"
#include "models/layers/moe.h"

namespace cs::model::layers {

namespace {

// Dropout + residual add unfused (PyTorch eager): dropout (one fused mask-and-scale kernel), add;
// backward the dropout's mask multiply and autograd's sum of the residual's two gradient
// branches. Without dropout the add alone, one kernel each way.
constexpr ChainKernels kDropoutAddKernels{2, 2};

// The residual add after a submodule on the rank's T_sp x h outputs, with dropout's 1-byte mask
// where the model has dropout: forward reads the output and the residual and writes the sum,
// backward reads the gradient and writes the branch's.
void residual_add(const LayerContext& c, BlockOps& ops, const std::string& name, bool dropout) {
  const int64_t elements = c.T_sp * c.h, mask = dropout ? 1 : 0;
  ops.add_chain(
      named(name, c.f.memory_bound(ir::OpClass::elementwise, elements * (3 * c.ab + mask),
                                   double(elements))),
      named(name + ".bwd", c.f.memory_bound(ir::OpClass::elementwise, elements * (2 * c.ab + mask),
                                            double(elements))),
      dropout ? kDropoutAddKernels : kOneKernel);
}

// A hybrid stack's layer: input norm, its one mixer, residual add (Megatron-Core's MambaLayer and
// its attention and MLP layers in a MambaStack; transformers' NemotronHBlock).
void single_mixer_layer(const LayerContext& c, BlockOps& ops, const LayerSpec& spec,
                        const std::string& prefix) {
  const std::string ln_1 = prefix + "ln_1.";
  norm(c, ops, spec.norm, "ln_1", c.T_sp * c.h, c.ids({ln_1 + "weight", ln_1 + "bias"}));
  switch (spec.kind) {
    case LayerKind::mamba:
      mamba_mixer(c, ops, prefix);
      break;
    case LayerKind::attention:
      self_attention(c, ops, prefix, spec.rotary, spec.window);
      break;
    case LayerKind::moe:
      moe_mlp(c, ops, prefix);
      break;
    default:
      dense_mlp(c, ops, prefix, spec.activation);
      break;
  }
  residual_add(c, ops, "mixer.dropout_add", spec.dropout);
}

LayerKind layer_kind(const ModelSpec& m, int layer) {
  switch (m.hybrid_layer(layer)) {
    case 'M':
      return LayerKind::mamba;
    case '*':
      return LayerKind::attention;
    case '-':
      return LayerKind::mlp;
    case 'E':
      return LayerKind::moe;
    default:
      return LayerKind::transformer;
  }
}

}  // namespace

// Nemotron-H's attention layers have no rotary positions (NemotronHAttention: the Mamba layers
// carry position).
LayerSpec layer_spec(const ModelSpec& m, int layer) {
  LayerSpec spec;
  spec.kind = layer_kind(m, layer);
  spec.norm = norm_kind(m);
  spec.attention = m.mla.enabled() ? AttentionKind::mla : AttentionKind::self_attention;
  spec.rotary = m.rotary() && !m.hybrid();
  spec.window = m.attention_window(layer);
  spec.sandwich_norms = m.sandwich_norms;
  spec.mlp = m.is_moe_layer(layer) ? MlpKind::moe : MlpKind::dense;
  spec.activation = activation_kind(m);
  spec.dropout = m.dropout > 0;
  return spec;
}

void transformer_layer(const LayerContext& c, BlockOps& ops, const LayerSpec& spec,
                       const std::string& prefix) {
  if (spec.kind != LayerKind::transformer) {
    single_mixer_layer(c, ops, spec, prefix);
    return;
  }
  const std::string ln_1 = prefix + "ln_1.", ln_2 = prefix + "ln_2.";
  const int64_t hidden_elements = c.T_sp * c.h;
  norm(c, ops, spec.norm, "ln_1", hidden_elements, c.ids({ln_1 + "weight", ln_1 + "bias"}));
  if (spec.attention == AttentionKind::mla) {
    mla_attention(c, ops, prefix);
  } else {
    self_attention(c, ops, prefix, spec.rotary, spec.window);
  }
  // Gemma's sandwich norms normalise each submodule's output before its residual add.
  if (spec.sandwich_norms)
    norm(c, ops, spec.norm, "ln_attn_out", hidden_elements, c.ids({prefix + "ln_attn_out.weight"}));
  residual_add(c, ops, "attn.dropout_add", spec.dropout);
  norm(c, ops, spec.norm, "ln_2", hidden_elements, c.ids({ln_2 + "weight", ln_2 + "bias"}));
  if (spec.mlp == MlpKind::moe) {
    moe_mlp(c, ops, prefix);
  } else {
    dense_mlp(c, ops, prefix, spec.activation);
  }
  if (spec.sandwich_norms)
    norm(c, ops, spec.norm, "ln_mlp_out", hidden_elements, c.ids({prefix + "ln_mlp_out.weight"}));
  residual_add(c, ops, "mlp.dropout_add", spec.dropout);
}

// Checkpointing: full re-runs the whole layer forward; selective re-runs the attention core;
// op_selective re-runs every second 16-bit GEMM (in forward order), every low-precision GEMM or
// none of them (`scaled_mm`), and every op that is neither a GEMM nor the fused attention kernel.
std::vector<Op> recomputed_ops(Recompute policy, const std::vector<Op>& forward,
                               ScaledMmSaving scaled_mm) {
  auto in_core = [](const Op& op) {
    return op.name.rfind("attn.core", 0) == 0 || op.name == "attn.scores" ||
           op.name == "attn.softmax" || op.name == "attn.av";
  };
  std::vector<Op> again;
  int gemms = 0;
  for (const Op& op : forward) {
    bool rerun = false;
    switch (policy) {
      case Recompute::none:
        break;
      case Recompute::full:
        rerun = true;
        break;
      case Recompute::selective:
        rerun = in_core(op);
        break;
      case Recompute::op_selective:
        if (op.op.op != ir::OpClass::gemm)
          rerun = op.op.op != ir::OpClass::attention;
        else if (op.op.dtype == ir::DType::fp8 || op.op.dtype == ir::DType::fp4)
          rerun = scaled_mm == ScaledMmSaving::recomputed;
        else
          rerun = ++gemms % 2 == 0;
        break;
    }
    if (rerun) again.push_back(op);
  }
  return again;
}

}  // namespace cs::model::layers
