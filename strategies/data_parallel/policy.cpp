#include "strategies/data_parallel/policy.h"

#include "strategies/data_parallel/flavour.h"
#include "strategies/model_state.h"

namespace cs::strategy {

using ir::MemoryCategory;
using ir::Phase;

void DataParallelPolicy::begin_rank(RankState& r, const Stage& st) {
  remaining_.clear();
  grad_held_.assign(st.sync.units.size(), false);
  // Dense parameters are shared by dp x cp ranks, routed experts by dp x cp / ep; frozen ones
  // keep their weights only.
  ModelState state = data_parallel_flavour(ctx_.layout.data_parallel, dp())
                         .model_state(st.trained_numel() - st.expert_numel, ctx_.precision, dp());
  const ModelState experts = data_parallel_flavour(ctx_.layout.data_parallel, expert_dp())
                                 .model_state(st.expert_numel, ctx_.precision, expert_dp());
  state.parameters += experts.parameters;
  state.gradients += experts.gradients;
  state.optimizer_state += experts.optimizer_state;
  state.parameters += frozen_model_state(st.frozen_numel, ctx_.precision).parameters;
  state = resting_state(state);
  e_.memory(r, kComputeStream, state.parameters, MemoryCategory::parameters, "alloc.parameters",
            Phase::other);
  if (!ctx_.lazy_gradients) {
    e_.memory(r, kComputeStream, state.gradients, MemoryCategory::gradients, "alloc.gradients",
              Phase::other);
  }
  e_.memory(r, kComputeStream, state.optimizer_state, MemoryCategory::optimizer_state,
            "alloc.optimizer_state", Phase::other);
  // FP8 training keeps an FP8 copy of the weights its FP8 GEMMs read for the step (Transformer
  // Engine's modules, torchao's Float8Linear): the decoder layers' weight matrices (the
  // tensor-parallel-split ones), not the embedding, the output head (16-bit in every stack we
  // model: models/model_work.cpp), norms, routers or LoRA's adapters (bf16 outside the recipe).
  if (ctx_.precision.scaling != model::Scaling::none) {
    int64_t fp8_numel = 0;
    for (int id : st.params) {
      const model::ParameterTensor& p = (*ctx_.params)[static_cast<size_t>(id)];
      const bool matrix = p.name.ends_with(".weight") && p.role != model::ParamRole::lora_adapter;
      if (p.layer >= 0 && p.tp_split && matrix) fp8_numel += numel_per_rank(p, ctx_.layout);
    }
    // Block-scaled copies (MXFP8, NVFP4) carry their scales: weight_copy_bytes is exact.
    e_.memory(r, kComputeStream, ctx_.precision.weight_copy_bytes(fp8_numel),
              MemoryCategory::workspace, "alloc.fp8_weights", Phase::other);
  }
}

// PyTorch's no_sync and Megatron's gradient accumulation: only the last micro-batch reduces.
bool DataParallelPolicy::syncs(int mb) const { return dp() > 1 && mb == ctx_.micro_batches - 1; }

void DataParallelPolicy::gradients_ready(RankState& r, const Stage& st,
                                         const std::vector<int>& params, TaskId producer, bool sync,
                                         int layer, int mb) {
  for (size_t i = 0; i < params.size();) {
    const int u = st.sync.unit_of_param[static_cast<size_t>(params[i])];
    size_t end = i + 1;
    while (end < params.size() && st.sync.unit_of_param[static_cast<size_t>(params[end])] == u)
      ++end;
    if (u >= 0)
      unit_gradients_ready(r, st, u, static_cast<int>(end - i), producer, sync, layer, mb);
    i = end;
  }
}

void DataParallelPolicy::unit_gradients_ready(RankState& r, const Stage& st, int u, int count,
                                              TaskId producer, bool sync, int layer, int mb) {
  const Bucket& unit = st.sync.units[static_cast<size_t>(u)];
  if (ctx_.lazy_gradients && !grad_held_[static_cast<size_t>(u)]) {
    // The unit's .grad tensors, allocated as backward first writes them (bucket-sized steps).
    e_.memory(r, kComputeStream, unit.bytes.count, MemoryCategory::gradients, unit_tag(u) + ".grad",
              Phase::backward, layer, mb);
    grad_held_[static_cast<size_t>(u)] = true;
  }
  if (ranks_of(unit) == 1) {
    if (!copies_gradients_alone()) return;
  } else if (transient_gradients() && !grad_held_[static_cast<size_t>(u)]) {
    e_.memory(r, kComputeStream, unit.bytes.count, MemoryCategory::gradients,
              unit_tag(u) + ".unsharded_grad", Phase::backward, layer, mb);
    grad_held_[static_cast<size_t>(u)] = true;
  }
  auto [counts, fresh] = remaining_.try_emplace(mb);
  if (fresh) {
    for (const Bucket& b : st.sync.units)
      counts->second.push_back(static_cast<int>(b.params.size()));
  }
  if ((counts->second[static_cast<size_t>(u)] -= count) > 0) return;
  unit_complete(r, st, u, producer, sync, layer, mb);
}

void DataParallelPolicy::free_lazy_gradients(RankState& r, const Stage& st) {
  if (!ctx_.lazy_gradients) return;
  int64_t held = 0;
  for (size_t u = 0; u < st.sync.units.size(); ++u) {
    if (grad_held_[u]) held += st.sync.units[u].bytes.count;
    grad_held_[u] = false;
  }
  if (held > 0) {
    e_.memory(r, kComputeStream, -held, MemoryCategory::gradients, "zero_grad.set_to_none",
              Phase::optimizer);
  }
}

SyncUnits DataParallelPolicy::bucket_units(const Stage& st) const {
  const auto& params = *ctx_.params;
  SyncUnits s;
  for (bool experts : {false, true}) {
    std::vector<model::ParameterTensor> local;
    std::vector<int> ids;
    for (int i : st.params) {
      model::ParameterTensor t = params[static_cast<size_t>(i)];
      if ((t.role == model::ParamRole::routed_expert) != experts || !t.trainable()) continue;
      t.numel = numel_per_rank(t, ctx_.layout);
      local.push_back(std::move(t));
      ids.push_back(i);
    }
    for (Bucket& u : assign_buckets(local, ctx_.precision.grad_bytes, ctx_.layout.first_bucket_size,
                                    ctx_.layout.bucket_size)) {
      for (int& k : u.params) k = ids[static_cast<size_t>(k)];
      u.experts = experts;
      s.units.push_back(std::move(u));
    }
  }
  index_units(s);
  return s;
}

int64_t DataParallelPolicy::sharded_params(const Stage& st) const {
  auto shard = [](int64_t n, int ranks) { return ranks > 1 ? (n + ranks - 1) / ranks : n; };
  return shard(st.trained_numel() - st.expert_numel, dp()) + shard(st.expert_numel, expert_dp());
}

void DataParallelPolicy::index_units(SyncUnits& s) const {
  s.unit_of_param.assign(ctx_.params->size(), -1);
  for (size_t u = 0; u < s.units.size(); ++u) {
    for (int i : s.units[u].params) s.unit_of_param[static_cast<size_t>(i)] = static_cast<int>(u);
  }
}

TaskId DataParallelPolicy::gradient_pass(RankState& r, ir::OpClass cls, int64_t bytes,
                                         const std::string& name, int layer, int mb) {
  ir::ComputeOp op;
  op.op = cls;
  op.dtype = ir::DType::fp32;
  op.bytes = {bytes};
  return e_.compute(r, op, e_.graph().label(name, Phase::backward, layer, mb));
}

TaskId DataParallelPolicy::reduce_unit(RankState& r, const Stage& st, int u,
                                       ir::CollectiveType type, TaskId after, int layer, int mb,
                                       std::optional<Bytes> bytes) {
  const Bucket& unit = st.sync.units[static_cast<size_t>(u)];
  const std::string tag = unit_tag(u);
  const TaskId c = e_.collective(
      r, kCommStream, group_of(r, unit), type, bytes.value_or(unit.bytes),
      e_.graph().label(tag + "." + std::string(ir::to_string(type)), Phase::backward, layer, mb),
      /*gradients=*/true);
  e_.depends(after, c);
  r.syncs.push_back(c);
  if (transient_gradients()) free_unsharded_gradients(r, st, u, layer, mb);
  return c;
}

void DataParallelPolicy::free_unsharded_gradients(RankState& r, const Stage& st, int u, int layer,
                                                  int mb) {
  const TaskId free = e_.memory(r, kCommStream, -st.sync.units[static_cast<size_t>(u)].bytes.count,
                                MemoryCategory::gradients, unit_tag(u) + ".unsharded_grad.free",
                                Phase::backward, layer, mb);
  r.syncs.push_back(free);
  grad_held_[static_cast<size_t>(u)] = false;
}

std::unique_ptr<DataParallelPolicy> make_data_parallel_policy(const PolicyContext& c,
                                                              StepEmitter& e) {
  return data_parallel_flavour(c.layout.data_parallel).make_policy(c, e);
}

}  // namespace cs::strategy
