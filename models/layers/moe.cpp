#include "models/layers/moe.h"

#include <algorithm>
#include <cstdint>

#include "models/layers/mlp.h"

namespace cs::model::layers {

namespace {

// The router (replicated) scores every expert for the rank's T_sp tokens (its sequence shard: MoE
// with TP needs SP) and keeps top_k per token: a [h -> experts] linear, then the fp32 softmax and
// top-k over the scores.
void router(const LayerContext& c, BlockOps& ops, const std::string& prefix) {
  const int64_t E = c.m.moe.experts, scores = c.T_sp * E;
  linear(c.f, ops, "mlp.router", c.T_sp, E, c.h,
         c.ids({prefix + "mlp.router.weight", prefix + "mlp.router.bias",
                prefix + "mlp.router.expert_bias"}),
         Split::none, c.tp);
  ops.add(named("mlp.topk",
                c.f.memory_bound(ir::OpClass::softmax, scores * 4 * 2, 5.0 * double(scores))),
          named("mlp.topk.bwd",
                c.f.memory_bound(ir::OpClass::softmax, scores * 4 * 3, 4.0 * double(scores))));
}

// Where the routed token copies go and which collectives move them, on this rank.
struct Dispatch {
  int64_t routed;      // copies the busiest EP rank receives (moe_routed_tokens)
  int64_t gathered;    // copies its local experts process: etp x routed
  int64_t permuted;    // copies this rank permutes (alltoall: its own; allgather: its experts')
  int64_t local;       // experts on this rank: experts / ep
  int64_t per_expert;  // copies per local expert (rounded up)
  OpCollective a2a;    // alltoall: the all-to-all over the EP group
  OpCollective etp_gather, etp_scatter;      // alltoall with etp > 1: around the expert GEMMs
  OpCollective group_gather, group_scatter;  // allgather: over the etp x ep group
};

Dispatch dispatch_of(const LayerContext& c) {
  const WorkShape& w = c.w;
  const int64_t bytes_per_token = c.m.moe.routed_width(c.h) * c.ab;
  Dispatch d;
  d.routed = moe_routed_tokens(c.m, w, c.T_sp);
  d.gathered = w.etp * d.routed;
  d.local = c.m.moe.experts / w.ep;
  d.per_expert = (d.gathered + d.local - 1) / d.local;
  const bool all_gather = w.moe_dispatcher == MoeDispatcher::allgather;
  const int64_t group = int64_t{w.ep} * w.etp;
  d.permuted = all_gather ? d.gathered : c.T_sp * c.m.moe.top_k;
  if (w.ep > 1 && !all_gather) {
    d.a2a = {ir::CollectiveType::all_to_all, Bytes{d.routed * bytes_per_token}, 1,
             OpGroup::expert_parallel};
  }
  if (w.etp > 1 && !all_gather) {
    const Bytes b{d.gathered * bytes_per_token};
    d.etp_gather = {ir::CollectiveType::all_gather, b, 1, OpGroup::expert_tensor_parallel};
    d.etp_scatter = {ir::CollectiveType::reduce_scatter, b, 1, OpGroup::expert_tensor_parallel};
  }
  if (all_gather && group > 1) {
    const Bytes b{group * c.T_sp * bytes_per_token};
    d.group_gather = {ir::CollectiveType::all_gather, b, 1,
                      OpGroup::expert_tensor_and_expert_parallel};
    d.group_scatter = {ir::CollectiveType::reduce_scatter, b, 1,
                       OpGroup::expert_tensor_and_expert_parallel};
  }
  return d;
}

// Grouped GEMMs over the local experts; fc1 reads the gathered tokens (its input gradient is
// reduce-scattered back), fc2's partial outputs are reduce-scattered (its output gradient
// gathered before its backward, whose wgrad runs first).
// Under fp32_experts (software_stack.cpp, set_stack_flags) they run in fp32, one mm per expert.
void grouped_experts(const LayerContext& c, BlockOps& ops, const Dispatch& d,
                     const std::string& name, int64_t out, int64_t in, std::vector<int> params,
                     bool first) {
  OpFactory f = c.f;
  if (c.w.fp32_experts) {
    f.dt = ir::DType::fp32;
    f.gemm_dt = ir::DType::fp32;
    f.ab = 4;
  }
  auto gemm = [&](int64_t m, int64_t n, int64_t k) {
    ir::ComputeOp op = f.gemm(m, n, k, d.local);
    if (c.w.fp32_experts)  // launches, held to the field's range (no model has 65,535 local
                           // experts)
      op.kernels = static_cast<uint16_t>(std::min<int64_t>(d.local, UINT16_MAX));
    return op;
  };
  Op fwd = named(name, gemm(d.per_expert, out, in));
  Op dgrad = named(name + ".dgrad", gemm(d.per_expert, in, out));
  Op wgrad = named(name + ".wgrad", gemm(in, out, d.per_expert), std::move(params));
  if (first) {
    fwd.tp_before = d.etp_gather;
    dgrad.tp_after = d.etp_scatter;
  } else {
    fwd.tp_after = d.etp_scatter;
    wgrad.tp_before = d.etp_gather;
  }
  ops.forward.push_back(std::move(fwd));
  ops.reversed_backward.push_back(std::move(dgrad));
  ops.reversed_backward.push_back(std::move(wgrad));
}

// The routed experts between dispatch and combine. alltoall: the rank's own copies permuted, then
// sent; allgather: the gathered tokens its local experts take, picked out of the G T_sp gathered.
// After the experts the outputs are un-permuted into each token's weighted sum and sent back.
void routed_experts(const LayerContext& c, BlockOps& ops, const std::string& prefix) {
  const MoeSpec& e = c.m.moe;
  const Dispatch d = dispatch_of(c);
  const ActivationKind kind = activation_kind(c.m);
  const int64_t h = e.routed_width(c.h), ab = c.ab, fe = e.expert_ffn_hidden / c.w.etp;
  const int64_t moved = d.permuted * h;
  const OpFactory& f = c.f;
  ops.add({"mlp.permute",
           f.memory_bound(ir::OpClass::memcpy, 2 * moved * ab),
           {},
           d.group_gather,
           d.a2a},
          {"mlp.permute.bwd",
           f.memory_bound(ir::OpClass::memcpy, 2 * moved * ab),
           {},
           d.a2a,
           d.group_scatter});
  const std::string experts = prefix + "mlp.experts.";
  // The experts' weights, then their biases where the model has them (gpt-oss).
  auto params_of = [&](const std::string& linear) {
    std::vector<int> ids = c.ids.numbered(experts, "." + linear + ".weight", e.experts);
    const std::vector<int> biases = c.ids.numbered(experts, "." + linear + ".bias", e.experts);
    ids.insert(ids.end(), biases.begin(), biases.end());
    return ids;
  };
  grouped_experts(c, ops, d, "mlp.experts.fc1", (gated(kind) ? 2 : 1) * fe, h, params_of("fc1"),
                  true);
  activation(c, ops, kind, "mlp.experts.act", d.gathered * fe);
  grouped_experts(c, ops, d, "mlp.experts.fc2", h, fe, params_of("fc2"), false);
  ops.add({"mlp.unpermute",
           f.memory_bound(ir::OpClass::memcpy, 3 * moved * ab, double(moved)),
           {},
           d.a2a,
           d.group_scatter},
          {"mlp.unpermute.bwd",
           f.memory_bound(ir::OpClass::memcpy, 3 * moved * ab, double(moved)),
           {},
           d.group_gather,
           d.a2a});
}

// Shared experts: every token's, a TP-split dense MLP of shared_experts x shared_ffn_hidden.
void shared_experts(const LayerContext& c, BlockOps& ops, const std::string& prefix) {
  const MoeSpec& e = c.m.moe;
  const ActivationKind kind = activation_kind(c.m);
  const int64_t fs = e.shared_ffn_hidden * e.shared_experts / c.t;
  const std::string shared = prefix + "mlp.shared_experts.";
  linear(c.f, ops, "mlp.shared.fc1", c.T, (gated(kind) ? 2 : 1) * fs, c.h,
         c.ids.numbered(shared, ".fc1.weight", e.shared_experts), Split::column, c.tp);
  activation(c, ops, kind, "mlp.shared.act", c.T * fs);
  linear(c.f, ops, "mlp.shared.fc2", c.T, c.h, fs,
         c.ids.numbered(shared, ".fc2.weight", e.shared_experts), Split::row, c.tp);
}

}  // namespace

// Megatron-Core's alltoall dispatcher: the router keeps top_k experts per token; the rank permutes
// its T_sp k token copies by expert and sends them to the experts' EP ranks (all-to-all), the
// busiest of which receives `routed` (moe_routed_tokens: balance, capacity); an expert-TP group
// (etp > 1) all-gathers what its ranks received, each rank's E / ep local experts (1 / etp of
// each) run as grouped GEMMs over those copies, the partial outputs are reduce-scattered back
// over the expert-TP group, return by a second all-to-all and are un-permuted into a weighted
// sum. Shared experts run beside as a TP-split dense SwiGLU.
// The all-to-alls are sized by the busiest rank's copies: it receives the most, and every
// rank waits for it. The allgather dispatcher instead all-gathers the T_sp tokens of every rank
// of the etp x ep group (G T_sp h per rank) before the permute, whose local experts then take
// the same `gathered` copies, and reduce-scatters the G T_sp outputs after the un-permute; no
// all-to-all and no expert-TP collectives (the routing map and probabilities it also gathers,
// T_sp x experts bits and top_k floats per token, are left out).
// LatentMoE (MoeSpec::latent) projects the rank's T_sp tokens down to the latent width after the
// router and back up after the combine (Megatron-Core MoELayer's fc1_latent_proj before the
// dispatch preprocess, fc2_latent_proj after the combine postprocess), replicated linears; the
// dispatch, the experts and the combine between them work at the latent width.
void moe_mlp(const LayerContext& c, BlockOps& ops, const std::string& prefix) {
  const int64_t latent = c.m.moe.latent;
  router(c, ops, prefix);
  if (latent > 0)
    linear(c.f, ops, "mlp.fc1_latent_proj", c.T_sp, latent, c.h,
           c.ids({prefix + "mlp.fc1_latent_proj.weight"}), Split::none, c.tp);
  routed_experts(c, ops, prefix);
  if (latent > 0)
    linear(c.f, ops, "mlp.fc2_latent_proj", c.T_sp, c.h, latent,
           c.ids({prefix + "mlp.fc2_latent_proj.weight"}), Split::none, c.tp);
  if (c.m.moe.shared_experts > 0) shared_experts(c, ops, prefix);
}

}  // namespace cs::model::layers
