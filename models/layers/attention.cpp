#include "models/layers/attention.h"

#include "models/layers/attention_core.h"
#include "models/layers/lora.h"
#include "models/layers/norm.h"

namespace cs::model::layers {

namespace {

// Hugging Face's apply_rotary_pos_emb, per tensor (q and k): x * cos, rotate_half(x) (two slices
// viewed, a neg, a cat), * sin, the sum: 5 kernels; backward the two products' gradients, neg's,
// the two slices' slice_backward (a zero-filled tensor and a copy each) and the sum of the three
// branches: 9. With partial rotary (GPT-NeoX's rotary_pct) the head is sliced into a rotated and a
// passed part and concatenated again: 1 more forward; backward the two parts' slice_backward and
// their sum, 5. Under autocast cos and sin are fp32, so the result is fp32: SDPA casts it (1 each
// way) and backward casts the two products' gradients to x's dtype (2).
ChainKernels rotary_kernels(const ModelSpec& m, bool autocast) {
  const int partial = m.rotary_fraction < 1 ? 1 : 0, cast = autocast ? 1 : 0;
  const int forward = 5 + partial + cast, backward = 9 + 5 * partial + 3 * cast;
  return {static_cast<uint16_t>(2 * forward), static_cast<uint16_t>(2 * backward)};
}

}  // namespace

void self_attention(const LayerContext& c, BlockOps& ops, const std::string& prefix, bool rotary,
                    int64_t window) {
  const ModelSpec& m = c.m;
  const int64_t T = c.T, h = c.h, t = c.t;
  const std::string qkv = prefix + "attn.qkv.", proj = prefix + "attn.proj.";
  const std::vector<int> qkv_ids = c.ids({qkv + "weight", qkv + "bias"});
  const Projections code = c.projections();
  const bool separate = code == Projections::separate;
  autocast_input_casts(c, ops, "attn.qkv.input_cast", c.T_sp * h, separate ? 3 : 1);
  // Pushed before the linear: the backward runs in reverse, so the sum follows the dgrads.
  if (separate) input_gradient_sum(c, ops, "attn.qkv.input_grad_sum", T * h, 3);
  linear(c.f, ops, "attn.qkv", T, (m.q_hidden() + 2 * m.kv_hidden()) / t, h, qkv_ids, Split::column,
         c.tp, c.ids.has(qkv + "bias"), c.trains(qkv_ids), separate ? 3 : 1);
  if (!separate)
    split_backward(c, ops, "attn.qkv.split.bwd", T, (m.q_hidden() + 2 * m.kv_hidden()) / t,
                   code == Projections::fused_sliced ? 3 : 0);
  lora_adapter(c, ops, LoraTarget::linear_qkv, prefix);
  if (m.qk_norm) {  // Qwen3, Gemma 3: RMSNorm over each head of q and of k
    norm(c, ops, NormKind::rms_norm, "attn.q_norm", T * m.q_hidden() / t,
         c.ids({prefix + "attn.q_norm.weight"}));
    norm(c, ops, NormKind::rms_norm, "attn.k_norm", T * m.kv_hidden() / t,
         c.ids({prefix + "attn.k_norm.weight"}));
  }
  if (rotary) {
    // Rotary positions on q and k: read and write both (the cos/sin tables are small), fused as
    // one pass. Eager PyTorch runs rotary_kernels, each over one of the two tensors, in fp32 under
    // autocast (cos and sin are fp32 there).
    const int64_t rotated = T * (m.q_hidden() + m.kv_hidden()) / t;
    const ir::ComputeOp pass =
        c.f.memory_bound(ir::OpClass::elementwise, 2 * rotated * c.ab, 3.0 * double(rotated));
    Op fwd = named("attn.rope", pass), bwd = named("attn.rope.bwd", pass);
    const ChainKernels kernels = rotary_kernels(m, c.p.autocast_copies);
    fwd.unfused_traffic = kernels.forward / 2.0;
    bwd.unfused_traffic = kernels.backward / 2.0;
    ops.add_chain(std::move(fwd), std::move(bwd), kernels, c.p.autocast_copies);
  }
  attention_core(c, ops, m.head_dim(), 2 * m.kv_hidden() / t, window,
                 c.ids({prefix + "attn.sinks"}));
  const std::vector<int> proj_ids = c.ids({proj + "weight", proj + "bias"});
  linear(c.f, ops, "attn.proj", T, h, m.q_hidden() / t, proj_ids, Split::row, c.tp,
         c.ids.has(proj + "bias"), c.trains(proj_ids));
  lora_adapter(c, ops, LoraTarget::linear_proj, prefix);
}

// MLA (DeepSeek-V2/V3): queries through the q latent, keys and values through the shared kv
// latent (plus one rotary key for all heads), attention at qk_head_dim / v_head_dim, o_proj.
// Under TP as Megatron-Core's MLASelfAttention: the down-projections (q_a, kv_a) are replicated
// ("duplicated") and run on the rank's tokens, its sequence shard under SP; the
// up-projections (q_b, or q without a q latent, and kv_b) are column-parallel by heads, so
// under SP they all-gather the latent they read (kv_b's with the shared rotary key, which
// Megatron gathers beside it), and o_proj is row-parallel.
void mla_attention(const LayerContext& c, BlockOps& ops, const std::string& prefix) {
  const MlaSpec& a = c.m.mla;
  const int64_t T = c.T, T_sp = c.T_sp, h = c.h, t = c.t, ab = c.ab;
  const int64_t heads = c.m.heads, qk = a.qk_head_dim();
  const NormKind latent_norm = norm_kind(c.m);
  const std::string n = prefix + "attn.";
  // Hugging Face's DeepseekV3Attention: q_a_proj (or q_proj) and kv_a_proj read the norm output.
  autocast_input_casts(c, ops, "attn.input_cast", T_sp * h, 2);
  const TpContext q_latent{c.t, c.tp.sp, Bytes{T * a.q_lora_rank * ab}};
  const TpContext kv_latent{c.t, c.tp.sp, Bytes{T * (a.kv_lora_rank + a.qk_rope_head_dim) * ab}};
  if (a.q_lora_rank > 0) {
    linear(c.f, ops, "attn.q_a", T_sp, a.q_lora_rank, h, c.ids({n + "q_a.weight"}), Split::none,
           c.tp);
    norm(c, ops, latent_norm, "attn.q_a_norm", T_sp * a.q_lora_rank,
         c.ids({n + "q_a_norm.weight"}));
    linear(c.f, ops, "attn.q_b", T, heads * qk / t, a.q_lora_rank, c.ids({n + "q_b.weight"}),
           Split::column, q_latent);
  } else {
    linear(c.f, ops, "attn.q", T, heads * qk / t, h, c.ids({n + "q.weight"}), Split::column, c.tp);
  }
  linear(c.f, ops, "attn.kv_a", T_sp, a.kv_lora_rank + a.qk_rope_head_dim, h,
         c.ids({n + "kv_a.weight"}), Split::none, c.tp);
  norm(c, ops, latent_norm, "attn.kv_a_norm", T_sp * a.kv_lora_rank,
       c.ids({n + "kv_a_norm.weight"}));
  linear(c.f, ops, "attn.kv_b", T, heads * (a.qk_nope_head_dim + a.v_head_dim) / t, a.kv_lora_rank,
         c.ids({n + "kv_b.weight"}), Split::column, kv_latent);
  attention_core(c, ops, (qk + a.v_head_dim) / 2, heads * (qk + a.v_head_dim) / t);
  linear(c.f, ops, "attn.proj", T, h, heads * a.v_head_dim / t, c.ids({n + "proj.weight"}),
         Split::row, c.tp);
}

}  // namespace cs::model::layers
