#include "planner/step_estimate.h"

#include <algorithm>

#include "models/software_stack.h"
#include "strategies/data_parallel/flavour.h"
#include "strategies/pipeline_schedule.h"
#include "strategies/tensor_parallel.h"
#include "strategies/work_shape.h"

namespace cs::planner {
namespace {

using strategy::Dim;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<ir::RankId> as_ranks(const std::vector<uint32_t>& v) { return {v.begin(), v.end()}; }

}  // namespace

ReducedModel reduce_layers(const model::ModelSpec& m) {
  ReducedModel r{m, {}};
  const size_t blocks =
      static_cast<size_t>(m.family == model::Family::mlp ? m.layers : m.layers + 2);
  for (size_t b = 0; b < blocks; ++b) r.block_of.push_back(b);
  if (m.family == model::Family::mlp) return r;
  if (m.hybrid()) {
    // One layer of each kind the pattern has (Mamba, attention, MLP, MoE), in order of first
    // appearance; each layer priced as its kind's.
    std::string kinds;
    for (char k : m.layer_pattern)
      if (kinds.find(k) == std::string::npos) kinds += k;
    r.spec.layer_pattern = kinds;
    r.spec.layers = static_cast<int>(kinds.size());
    for (int l = 0; l < m.layers; ++l)
      r.block_of[static_cast<size_t>(l + 1)] = kinds.find(m.layer_pattern[l]) + 1;
    r.block_of.back() = kinds.size() + 1;
    return r;
  }
  // A decoder layer's kind is its MLP (dense or MoE) and its attention (windowed or full): one
  // layer of each, dense before MoE (first_dense_layers) and windowed before full (full_every 2).
  // A reduced model without gpt-oss's full layers was invalid (full_every 2 beyond its one layer):
  // every gpt-oss layout went unpriced and was simulated in enumeration order.
  bool dense = false, moe = false, windowed = false, full = false;
  for (int l = 0; l < m.layers; ++l) {
    (m.is_moe_layer(l) ? moe : dense) = true;
    (m.attention_window(l) > 0 ? windowed : full) = true;
  }
  const int attentions = (windowed && full) ? 2 : 1;
  r.spec.layers = ((dense && moe) ? 2 : 1) * attentions;
  if (m.moe.enabled()) {
    r.spec.moe.layer_step = 1;
    r.spec.moe.dense_layers.clear();
    r.spec.moe.first_dense_layers = dense ? attentions : 0;
  }
  r.spec.window.full_every = windowed && full ? 2 : (full && m.window.enabled() ? 1 : 0);
  for (int l = 0; l < m.layers; ++l) {
    const bool moe_after_dense = dense && moe && m.is_moe_layer(l);
    const bool full_after_windowed = windowed && full && m.attention_window(l) == 0;
    r.block_of[static_cast<size_t>(l + 1)] =
        1 + (moe_after_dense ? static_cast<size_t>(attentions) : 0) + (full_after_windowed ? 1 : 0);
  }
  r.block_of.back() = static_cast<size_t>(r.spec.layers + 1);
  return r;
}

StepEstimator::StepEstimator(const scenario::Scenario& base, const driver::Platform& platform)
    : base_(base),
      platform_(platform),
      reduced_(reduce_layers(base.model)),
      prec_(base.training.precision_info()) {}

double StepEstimator::collective(ir::CollectiveType type, int64_t bytes,
                                 const std::vector<ir::RankId>& ranks) {
  if (ranks.size() < 2 || bytes <= 0) return 0;
  auto key = std::make_tuple(static_cast<int>(type), bytes, ranks);
  auto it = collectives_.find(key);
  if (it == collectives_.end()) {
    const double t =
        platform_.costs().collective_model().choose(type, Bytes{bytes}, ranks).time.seconds();
    it = collectives_.emplace(std::move(key), t).first;
  }
  return it->second;
}

// One op on the compute stream, as the step builder emits it (strategies/tensor_parallel.cpp):
// the device's time (its compute and the collectives it waits for) and the host's to issue it.
StepEstimator::PassTime StepEstimator::op_seconds(const model::Op& op, const strategy::Layout& l,
                                                  bool tp_overlap) {
  const auto& costs = platform_.costs();
  return {device_seconds(op, l, tp_overlap), costs.host_time(op.op).seconds()};
}

double StepEstimator::device_seconds(const model::Op& op, const strategy::Layout& l,
                                     bool tp_overlap) {
  const auto& costs = platform_.costs();
  const double compute = costs.compute(op.op).seconds();
  const std::vector<ir::RankId> tp = as_ranks(strategy::ranks_along(l, {}, Dim::tp));
  auto comm = [&](const model::OpCollective& c) {
    if (c.count == 0) return 0.0;
    std::vector<ir::RankId> group = tp;
    if (c.group == model::OpGroup::expert_parallel)
      group = as_ranks(strategy::expert_parallel_group(l, {}));
    if (c.group == model::OpGroup::expert_tensor_parallel)
      group = as_ranks(strategy::expert_tensor_parallel_group(l, {}));
    if (c.group == model::OpGroup::expert_tensor_and_expert_parallel)
      group = as_ranks(strategy::expert_tensor_and_expert_parallel_group(l, {}));
    return c.count * collective(c.type, c.bytes.count, group);
  };
  const double before = comm(op.tp_before), after = comm(op.tp_after);
  const bool dense_tp = op.tp_before.group == model::OpGroup::tensor_parallel &&
                        op.tp_after.group == model::OpGroup::tensor_parallel;
  const bool overlappable = tp_overlap && l.tp > 1 && dense_tp && op.tp_pipelinable &&
                            op.op.op == ir::OpClass::gemm && op.ring.passes.count == 0 &&
                            !op.ring.waits && (before == 0) != (after == 0);
  if (overlappable) {
    // tp chunks: the collective of chunk i runs under GEMM chunk i +- 1; one chunk of the
    // smaller side stays exposed. PyTorch's async TP then sums the partials.
    const double c = before + after;
    const double sum = after > 0 && op.tp_sums_partials
                           ? costs.compute(strategy::tp_partials_sum(op, l.tp)).seconds()
                           : 0.0;
    return std::max(compute, c) + std::min(compute, c) / l.tp + sum;
  }
  double t = compute + before + after;
  if (op.ring.passes.count > 0 && l.cp > 1) {
    // Ring attention: the KV chunk travels to the next rank while this step computes; the ring
    // waits for its slowest hop (the one leaving a node, when the ring spans nodes).
    double pass = 0;
    for (int k = 0; k < l.cp; ++k) {
      strategy::Coord from, to;
      from.cp = k;
      to.cp = (k + 1) % l.cp;
      const auto a = static_cast<ir::RankId>(strategy::rank_of(l, from)),
                 b = static_cast<ir::RankId>(strategy::rank_of(l, to));
      pass = std::max(
          pass, platform_.costs().collective_model().p2p(a, b, op.ring.passes).time.seconds());
    }
    t += std::max(0.0, pass - compute);
  }
  return t;
}

const StepEstimator::BlockTimes& StepEstimator::blocks(const Candidate& c) {
  const auto& l = c.layout;
  const ShapeKey key{l.tp,
                     l.cp,
                     l.ep,
                     l.etp,
                     c.training.micro_batch,
                     static_cast<int>(c.training.recompute),
                     c.training.tp_comm_overlap};
  if (auto it = shapes_.find(key); it != shapes_.end()) return it->second;
  const model::ModelSpec& m = base_.model;
  const model::StackTraits& stack = model::stack_traits(c.training.stack);
  model::ModelWork work = model::build_model_work(
      reduced_.spec, strategy::make_work_shape(reduced_.spec, l, c.training));
  model::apply_stack(work, stack, c.training.compile_scope);
  BlockTimes reduced;
  const size_t n = work.blocks.size();
  BlockTimes& bt = reduced;
  bt.forward.assign(n, 0);
  bt.backward.assign(n, 0);
  bt.weight_grad.assign(n, 0);
  bt.dense.assign(n, 0);
  bt.routed.assign(n, 0);
  const bool overlap = c.training.tp_comm_overlap;
  for (size_t b = 0; b < n; ++b) {
    const model::Block& blk = work.blocks[b];
    PassTime forward, backward, weight_grad;
    for (const auto& op : blk.forward) forward += op_seconds(op, l, overlap);
    for (const auto& op : blk.recompute) backward += op_seconds(op, l, overlap);
    for (const auto& op : blk.backward) {
      const PassTime t = op_seconds(op, l, overlap);
      backward += t;
      if (ends_with(op.name, ".wgrad")) weight_grad += t;
    }
    bt.forward[b] = forward.seconds();
    bt.backward[b] = backward.seconds();
    bt.weight_grad[b] = weight_grad.seconds();
  }
  for (const model::ParameterTensor& p : work.params) {
    const size_t b = std::min(static_cast<size_t>(std::max(p.block, 0)), n - 1);
    (p.role == model::ParamRole::routed_expert ? bt.routed : bt.dense)[b] +=
        strategy::numel_per_rank(p, l);
  }
  // Back to the model's blocks.
  BlockTimes out;
  for (size_t k : reduced_.block_of) {
    out.forward.push_back(bt.forward[k]);
    out.backward.push_back(bt.backward[k]);
    out.weight_grad.push_back(bt.weight_grad[k]);
    out.dense.push_back(bt.dense[k]);
    out.routed.push_back(bt.routed[k]);
  }
  out.boundary = strategy::pipeline_exchange_bytes(m, l, c.training);
  return shapes_.emplace(key, std::move(out)).first->second;
}

double StepEstimator::step_seconds(const Candidate& c) {
  const auto& l = c.layout;
  const BlockTimes& bt = blocks(c);
  const model::ModelSpec& m = base_.model;
  const bool transformer = m.family != model::Family::mlp;
  const int p = l.pp, v = l.virtual_stages, chunks = p * v;
  const int64_t micro = c.training.accumulation(l);
  const double md = static_cast<double>(micro);

  // Blocks per stage, as strategy::partition_stages assigns them.
  const std::vector<int> chunk_layers = strategy::chunk_layer_counts(l, m.layers);
  struct StageSum {
    double forward = 0, backward = 0, weight_grad = 0;
    int64_t dense = 0, routed = 0;
    int blocks = 0;
  };
  std::vector<StageSum> st(static_cast<size_t>(p));
  auto add = [&](int s, size_t b) {
    StageSum& x = st[static_cast<size_t>(s)];
    x.forward += bt.forward[b];
    x.backward += bt.backward[b];
    x.weight_grad += bt.weight_grad[b];
    x.dense += bt.dense[b];
    x.routed += bt.routed[b] / l.ep;
    ++x.blocks;
  };
  const size_t nblocks = bt.forward.size();
  int next = 0;
  for (int g = 0; g < chunks; ++g) {
    if (transformer && g == 0) add(0, 0);
    for (int i = 0; i < chunk_layers[static_cast<size_t>(g)]; ++i, ++next)
      add(g % p, static_cast<size_t>(transformer ? next + 1 : next));
    if (transformer && g == chunks - 1) add(p - 1, nblocks - 1);
  }

  // Pipeline: every stage runs m forwards and backwards; the busiest sets the steady state.
  double busiest = 0, sum = 0, weight_grad = 0;
  for (const StageSum& x : st) {
    busiest = std::max(busiest, x.forward + x.backward);
    sum += x.forward + x.backward;
    weight_grad = std::max(weight_grad, x.weight_grad);
  }
  double pipe = md * busiest;
  if (p > 1) {
    const double fill = strategy::pipeline_schedule_flavour(l.schedule)
                            .fill_seconds(sum - busiest, p, v, weight_grad);
    strategy::Coord next_stage;
    next_stage.pp = 1;
    const double hop =
        platform_.costs()
            .collective_model()
            .p2p(0, static_cast<ir::RankId>(strategy::rank_of(l, next_stage)), bt.boundary)
            .time.seconds();
    pipe += fill + 2.0 * (chunks - 1) * hop;
    // Blocking exchanges (Megatron's, DeepSpeed's): the first stage waits a hop at each.
    if (strategy::pipeline_p2p_blocks(l, c.training)) {
      pipe += hop * static_cast<double>(
                        strategy::blocking_exchanges(l.schedule, p, v, 0, static_cast<int>(micro)));
    }
  }

  // Data parallelism and the optimizer, stage by stage; the step ends with the slowest tail.
  const std::vector<ir::RankId> grad_group =
      as_ranks(strategy::ranks_along(l, {}, {Dim::dp, Dim::cp}));
  std::vector<ir::RankId> expert_group;
  if (m.moe.enabled()) expert_group = as_ranks(strategy::expert_data_parallel_group(l, {}));
  const int ranks = l.dp * l.cp, expert_ranks = strategy::expert_data_parallel_size(l);
  const strategy::DataParallelFlavour& flavour =
      strategy::data_parallel_flavour(l.data_parallel, ranks);
  const double slowdown = platform_.costs().interference().compute_slowdown;
  double tail = 0;
  for (const StageSum& x : st) {
    using ir::CollectiveType;
    const int64_t reduced =
        flavour.reduced_gradient_bytes(prec_, l.fsdp_version, c.training.grad_reduce_in_bf16);
    const int64_t gd = x.dense * reduced, ge = x.routed * reduced;
    const int64_t pd = x.dense * prec_.weight_bytes, pe = x.routed * prec_.weight_bytes;
    auto both = [&](CollectiveType t, int64_t dense, int64_t routed) {
      return collective(t, dense, grad_group) + collective(t, routed, expert_group);
    };
    strategy::StageCommunication comm;
    comm.reduce = both(flavour.gradient_collective(), gd, ge);
    comm.gather = flavour.zero_stage > 0 ? both(CollectiveType::all_gather, pd, pe) : 0;
    comm.forward = x.forward;
    comm.backward = x.backward;
    comm.micro_batches = md;
    comm.pp = l.pp;
    comm.fsdp_version = l.fsdp_version;
    comm.stack = c.training.stack;
    comm.blocks = x.blocks;
    comm.bucket_share = std::min(1.0, static_cast<double>(l.bucket_size.count) /
                                          static_cast<double>(std::max<int64_t>(1, gd + ge)));
    comm.slowdown = slowdown;
    comm.overlap_param_gather = c.training.overlap_param_gather;
    double t = flavour.exposed_seconds(comm);
    const int64_t stepped =
        flavour.shards_optimizer() ? x.dense / ranks + x.routed / expert_ranks : x.dense + x.routed;
    t += platform_.costs()
             .compute(model::optimizer_op(stepped, prec_, c.training.optimizer()))
             .seconds();
    tail = std::max(tail, t);
  }
  return pipe + tail;
}

}  // namespace cs::planner
