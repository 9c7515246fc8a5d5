#include "strategies/training_step.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "strategies/pipeline_schedule.h"

namespace cs::strategy {

ModelState model_state_per_rank(int64_t params, const model::PrecisionInfo& p, DataParallel d, int dp) {
  auto shard = [dp](int64_t bytes) { return (bytes + dp - 1) / dp; };  // FSDP/ZeRO pad to dp
  ModelState s{params * p.weight_bytes, params * p.grad_bytes, params * p.optimizer_bytes};
  switch (d) {
    case DataParallel::ddp:
    case DataParallel::ddp_flat: break;
    case DataParallel::zero1: s.optimizer_state = shard(s.optimizer_state); break;
    case DataParallel::zero2:
      s.gradients = shard(s.gradients);
      s.optimizer_state = shard(s.optimizer_state);
      break;
    case DataParallel::fsdp_shard_grad_op:
    case DataParallel::fsdp_full_shard:
      s = {shard(s.parameters), shard(s.gradients), shard(s.optimizer_state)};
      break;
  }
  return s;
}

namespace {

using ir::CollectiveType;
using ir::MemoryCategory;
using ir::Phase;
using ir::RankId;
using ir::TaskId;
constexpr TaskId kNone = UINT32_MAX;

// One pipeline stage: its blocks (by model chunk), parameters and gradient-sync units.
struct Stage {
  std::vector<std::vector<int>> chunk_blocks;  // local chunk -> block indices in forward order
  std::vector<int> params;                     // global parameter ids held here
  int64_t numel = 0;                           // parameters per TP rank
  std::vector<Bucket> units;                   // gradient sync units (buckets / FSDP units)
  std::vector<int> unit_of_param;              // global id -> unit, -1 when not here
  std::vector<int> unit_of_block;              // FSDP: block -> unit, -1 when not here
  int root_unit = -1;                          // FSDP root (embedding + head), never resharded after forward
  std::vector<Slot> schedule;
};

// Per-rank emission state (one step).
struct RankState {
  RankId rank = 0;                 // graph rank
  RankId cluster = 0;              // cluster rank
  Coord at;
  ir::GroupId tp_group = 0, dp_group = 0;
  TaskId last_compute = kNone;     // last task on the compute stream
  std::vector<TaskId> syncs;       // gradient syncs the optimizer waits for
  std::map<int, std::vector<int>> remaining;  // per micro-batch, per unit: gradients to complete
  std::vector<bool> grad_held;     // per unit: unsharded gradient allocated (zero2 / FSDP)
  std::vector<bool> gathered;      // FSDP: unit parameters currently unsharded
  std::vector<TaskId> unit_freed;  // FSDP: task that resharded the unit (rate limiting)
  std::vector<TaskId> unit_gather; // FSDP: gather the unit's next compute must wait for
};

class StepBuilder {
 public:
  StepBuilder(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t, const StepOptions& o)
      : spec_(m), layout_(l), train_(t), options_(o) {
    model::WorkShape shape;
    shape.micro_batch = t.micro_batch;
    shape.seq = m.family == model::Family::mlp ? 1 : t.seq_len;
    shape.tp = l.tp;
    shape.sequence_parallel = l.sequence_parallel;
    shape.precision = t.precision;
    shape.attention = t.attention;
    shape.recompute = t.recompute;
    work_ = model::build_model_work(m, shape);
    prec_ = model::precision_info(t.precision);
    // Recomputation re-materialises, transiently, what checkpointing did not keep.
    model::WorkShape keep_all = shape;
    keep_all.recompute = model::Recompute::none;
    recompute_transient_ = model::activation_bytes_per_layer(m, keep_all).count - model::activation_bytes_per_layer(m, shape).count;
    micro_batches_ = t.accumulation(l);
    fsdp_ = is_fsdp(l.data_parallel);
  }

  StepGraph build() {
    const int ranks = options_.representative_ranks ? layout_.pp : layout_.gpus();
    StepGraph out{ir::TaskGraph(static_cast<uint32_t>(ranks)), micro_batches_, 0, 0, {}, 0, {}, {}};
    g_ = &out.graph;
    add_streams();
    add_tied_embedding_copy();
    partition_stages();

    std::vector<RankId> cluster;
    for (int r = 0; r < ranks; ++r) {
      const int c = options_.representative_ranks ? rank_of(layout_, Coord{0, r, 0}) : r;
      cluster.push_back(static_cast<RankId>(c));
      out.stage_of_rank.push_back(coord_of(layout_, c).pp);
    }
    g_->set_cluster_ranks(cluster, static_cast<uint32_t>(layout_.gpus()));
    for (int r = 0; r < ranks; ++r) emit_rank(static_cast<RankId>(r), cluster[static_cast<size_t>(r)]);
    g_->finalize();

    out.samples_per_step = static_cast<double>(train_.global_batch);
    out.tokens_per_step = static_cast<double>(train_.global_batch) *
                          static_cast<double>(spec_.family == model::Family::mlp ? 1 : train_.seq_len);
    out.model_flops_per_step = {work_.model_flops.value * static_cast<double>(micro_batches_ * layout_.dp)};
    out.parameters = model::parameter_count(spec_);
    out.buckets = stages_[0].units;
    g_ = nullptr;
    return out;
  }

 private:
  // --- set-up -------------------------------------------------------------------------------
  void add_streams() {
    g_->add_stream("compute");
    g_->add_stream("dp.grad");
    if (fsdp_ || zero_stage(layout_.data_parallel) > 0) gather_stream_ = g_->add_stream("dp.gather");
    if (layout_.pp > 1) {
      send_next_ = g_->add_stream("pp.send_next");
      recv_prev_ = g_->add_stream("pp.recv_prev");
      send_prev_ = g_->add_stream("pp.send_prev");
      recv_next_ = g_->add_stream("pp.recv_next");
    }
  }

  // Tied embeddings under pipeline parallelism: the last stage keeps its own copy of the word
  // embedding for the LM head (Megatron), whose gradient the first and last stages all-reduce.
  void add_tied_embedding_copy() {
    params_ = work_.params;
    if (layout_.pp == 1 || spec_.family == model::Family::mlp || !spec_.tied_embeddings()) return;
    const int head = spec_.layers + 1;
    tied_copy_ = static_cast<int>(params_.size());
    params_.push_back({"lm_head.weight(tied copy of wte)", head, params_[0].numel, true});
    for (auto& op : work_.blocks[static_cast<size_t>(head)].backward) {
      if (op.name == "lm_head.wgrad") op.grads_ready.push_back(tied_copy_);
    }
  }

  void partition_stages() {
    const int p = layout_.pp, v = layout_.virtual_stages, chunks = p * v;
    const bool transformer = spec_.family != model::Family::mlp;
    const int layers = spec_.layers, per_chunk = layers / chunks;
    const int nblocks = static_cast<int>(work_.blocks.size());
    stages_.assign(static_cast<size_t>(p), Stage{});
    for (int g = 0; g < chunks; ++g) {
      std::vector<int> blocks;
      if (transformer && g == 0) blocks.push_back(0);
      for (int l = g * per_chunk; l < (g + 1) * per_chunk; ++l) blocks.push_back(transformer ? l + 1 : l);
      if (transformer && g == chunks - 1) blocks.push_back(nblocks - 1);
      stages_[static_cast<size_t>(g % p)].chunk_blocks.push_back(std::move(blocks));
    }
    for (int s = 0; s < p; ++s) {
      Stage& st = stages_[static_cast<size_t>(s)];
      std::vector<bool> here(static_cast<size_t>(nblocks), false);
      for (const auto& c : st.chunk_blocks) {
        for (int b : c) here[static_cast<size_t>(b)] = true;
      }
      for (int i = 0; i < static_cast<int>(params_.size()); ++i) {
        const auto& prm = params_[static_cast<size_t>(i)];
        const bool copy_on_last = i == tied_copy_;
        if (copy_on_last ? s == p - 1 : here[static_cast<size_t>(prm.block)]) {
          st.params.push_back(i);
          st.numel += prm.numel_per_tp_rank(layout_.tp);
        }
      }
      make_units(st, here);
      st.schedule = pipeline_schedule(layout_.schedule, p, v, s, static_cast<int>(micro_batches_));
    }
  }

  // Gradient sync units: PyTorch DDP buckets over the stage's parameters (also used for ZeRO-1/2),
  // one unit per tensor for flat DDP, one per block (root: embedding + head) for FSDP.
  void make_units(Stage& st, const std::vector<bool>& here) {
    std::vector<model::ParameterTensor> local;
    for (int i : st.params) {
      model::ParameterTensor t = params_[static_cast<size_t>(i)];
      t.numel = t.numel_per_tp_rank(layout_.tp);
      local.push_back(std::move(t));
    }
    const int64_t gb = prec_.grad_bytes;
    if (fsdp_) {
      const int nblocks = static_cast<int>(work_.blocks.size());
      st.unit_of_block.assign(static_cast<size_t>(nblocks), -1);
      const bool transformer = spec_.family != model::Family::mlp;
      for (int b = 0; b < nblocks; ++b) {
        if (!here[static_cast<size_t>(b)]) continue;
        const bool root = transformer && (b == 0 || b == nblocks - 1);
        if (root && st.root_unit >= 0) {
          st.unit_of_block[static_cast<size_t>(b)] = st.root_unit;
          continue;
        }
        st.unit_of_block[static_cast<size_t>(b)] = static_cast<int>(st.units.size());
        if (root) st.root_unit = static_cast<int>(st.units.size());
        st.units.push_back(Bucket{});
      }
      for (size_t k = 0; k < st.params.size(); ++k) {
        const int u = st.unit_of_block[static_cast<size_t>(local[k].block)];
        st.units[static_cast<size_t>(u)].params.push_back(st.params[k]);
        st.units[static_cast<size_t>(u)].bytes += Bytes{local[k].numel * gb};
      }
    } else if (layout_.data_parallel == DataParallel::ddp_flat) {
      for (int k = static_cast<int>(local.size()) - 1; k >= 0; --k) {
        st.units.push_back({{st.params[static_cast<size_t>(k)]}, Bytes{local[static_cast<size_t>(k)].numel * gb}});
      }
    } else {
      st.units = assign_buckets(local, gb, layout_.first_bucket_size, layout_.bucket_size);
      for (auto& u : st.units) {
        for (int& k : u.params) k = st.params[static_cast<size_t>(k)];
      }
    }
    st.unit_of_param.assign(params_.size(), -1);
    for (size_t u = 0; u < st.units.size(); ++u) {
      for (int i : st.units[u].params) st.unit_of_param[static_cast<size_t>(i)] = static_cast<int>(u);
    }
  }

  // --- matching collectives and transfers across ranks ---------------------------------------
  // Members of a group emit the same sequence of calls on the same stream, so the n-th call a
  // rank makes on (group, stream) is the n-th call of every other member.
  ir::CollectiveId collective_for(const RankState& r, ir::GroupId group, ir::StreamId s, CollectiveType type, Bytes bytes, bool gradients) {
    auto& calls = collectives_[{group, s}];
    size_t& n = collective_seen_[{r.rank, group, s}];
    if (n == calls.size()) calls.push_back(g_->new_collective(type, bytes, group, gradients));
    const ir::CollectiveId c = calls[n++];
    const auto& call = g_->collective_call(c);
    if (call.type != type || call.bytes.count != bytes.count) throw std::logic_error("ranks of a group disagree on a collective");
    return c;
  }
  ir::TransferId transfer_for(RankId src, RankId dst, Bytes bytes, bool sender) {
    auto& xs = transfers_[{src, dst}];
    size_t& n = (sender ? sends_seen_ : recvs_seen_)[{src, dst}];
    if (n == xs.size()) xs.push_back(g_->new_transfer(src, dst, bytes));
    return xs[n++];
  }

  // --- emission -------------------------------------------------------------------------------
  // Compute-stream work waits for the inputs that arrived on other streams (receives, gathers).
  TaskId on_compute_stream(RankState& r, TaskId t) {
    for (TaskId in : pending_inputs_) g_->add_dependency(in, t);
    pending_inputs_.clear();
    return r.last_compute = t;
  }
  TaskId compute(RankState& r, const ir::ComputeOp& op, const ir::Label& l) {
    return on_compute_stream(r, g_->add_compute(r.rank, kComputeStream, op, l));
  }
  TaskId memory(RankState& r, ir::StreamId s, int64_t delta, MemoryCategory cat, const std::string& name, Phase phase,
                int layer = -1, int mb = -1) {
    const TaskId t = g_->add_memory(r.rank, s, delta, cat, g_->label(name, phase, layer, mb));
    if (s == kComputeStream) r.last_compute = t;
    return t;
  }
  TaskId collective(RankState& r, ir::StreamId s, ir::GroupId group, CollectiveType type, Bytes bytes, const ir::Label& l,
                    bool gradients = false) {
    const TaskId t = g_->add_collective(r.rank, s, collective_for(r, group, s, type, bytes, gradients), l);
    return s == kComputeStream ? on_compute_stream(r, t) : t;
  }
  // One model op: its tensor-parallel collectives before and after it, inline on the compute
  // stream. Returns the compute task.
  TaskId emit_op(RankState& r, const model::Op& op, const std::string& name, Phase phase, int layer, int mb, bool recompute = false) {
    auto tp = [&](const model::TpCollective& c) {
      for (int i = 0; i < c.count; ++i) {
        collective(r, kComputeStream, r.tp_group, c.type, c.bytes,
                   g_->label(name + ".tp_" + std::string(ir::to_string(c.type)), phase, layer, mb, recompute));
      }
    };
    tp(op.tp_before);
    const TaskId t = compute(r, op.op, g_->label(name, phase, layer, mb, recompute));
    tp(op.tp_after);
    return t;
  }

  void emit_rank(RankId rank, RankId cluster) {
    RankState r;
    r.rank = rank;
    r.cluster = cluster;
    r.at = coord_of(layout_, static_cast<int>(cluster));
    r.tp_group = g_->group(ranks_along(layout_, r.at, Dim::tp));
    r.dp_group = g_->group(ranks_along(layout_, r.at, Dim::dp));
    const Stage& st = stages_[static_cast<size_t>(r.at.pp)];
    r.grad_held.assign(st.units.size(), false);
    r.gathered.assign(st.units.size(), false);
    r.unit_freed.assign(st.units.size(), kNone);
    r.unit_gather.assign(st.units.size(), kNone);

    // Model state at rest for the whole step (ZeRO's accounting), plus DDP's bucket buffers.
    const int dp = layout_.dp;
    const ModelState state = model_state_per_rank(st.numel, prec_, dp > 1 ? layout_.data_parallel : DataParallel::ddp, dp);
    memory(r, kComputeStream, state.parameters, MemoryCategory::parameters, "alloc.parameters", Phase::other);
    memory(r, kComputeStream, state.gradients, MemoryCategory::gradients, "alloc.gradients", Phase::other);
    memory(r, kComputeStream, state.optimizer_state, MemoryCategory::optimizer_state, "alloc.optimizer_state", Phase::other);
    if (dp > 1 && layout_.data_parallel == DataParallel::ddp) {
      memory(r, kComputeStream, st.numel * prec_.grad_bytes, MemoryCategory::comm_buffers, "alloc.ddp_buckets", Phase::other);
    }

    for (const Slot& slot : st.schedule) {
      if (slot.forward) emit_forward(r, st, slot.chunk, slot.micro_batch);
      else emit_backward(r, st, slot.chunk, slot.micro_batch);
    }
    finish_step(r, st);
  }

  int global_chunk(const RankState& r, int local_chunk) const { return local_chunk * layout_.pp + r.at.pp; }
  int chunks() const { return layout_.pp * layout_.virtual_stages; }
  RankId neighbour(const RankState& r, int delta) const {
    Coord c = r.at;
    c.pp = (c.pp + delta + layout_.pp) % layout_.pp;
    return static_cast<RankId>(rank_of(layout_, c));
  }
  // Activations (and their gradients) crossing a stage boundary: one [s, b, h] tensor per TP
  // rank (SP: its sequence shard).
  Bytes boundary_bytes() const {
    const int64_t h = spec_.hidden, ab = prec_.activation_bytes;
    if (spec_.family == model::Family::mlp) return {train_.micro_batch * h * ab};
    const int64_t tokens = train_.micro_batch * train_.seq_len;
    return {tokens * h * ab / (layout_.sequence_parallel ? layout_.tp : 1)};
  }

  // Receives on a p2p stream; the next compute waits for it.
  void receive(RankState& r, ir::StreamId s, RankId from, const std::string& name, Phase phase, int mb) {
    const TaskId rx = g_->add_recv(r.rank, s, transfer_for(from, r.cluster, boundary_bytes(), false), g_->label(name, phase, -1, mb));
    pending_inputs_.push_back(rx);
  }
  void send(RankState& r, ir::StreamId s, RankId to, const std::string& name, Phase phase, int mb) {
    const TaskId tx = g_->add_send(r.rank, s, transfer_for(r.cluster, to, boundary_bytes(), true), g_->label(name, phase, -1, mb));
    g_->add_dependency(r.last_compute, tx);
  }

  void emit_forward(RankState& r, const Stage& st, int chunk, int mb) {
    const int g = global_chunk(r, chunk);
    if (g > 0) receive(r, recv_prev_, neighbour(r, -1), "pp.recv_activation", Phase::forward, mb);
    for (int bi : st.chunk_blocks[static_cast<size_t>(chunk)]) {
      const model::Block& b = work_.blocks[static_cast<size_t>(bi)];
      const int layer = layer_of(bi);
      if (fsdp_) {
        fsdp_gather_forward(r, st, bi, mb);
        wait_for_gather(r, st, bi);
      }
      if (b.saved_activations.count) memory(r, kComputeStream, b.saved_activations.count, MemoryCategory::activations, b.name + ".activations", Phase::forward, layer, mb);
      if (b.autocast_weights.count) memory(r, kComputeStream, b.autocast_weights.count, MemoryCategory::workspace, b.name + ".autocast_weights", Phase::forward, layer, mb);
      if (b.logits.count) memory(r, kComputeStream, b.logits.count, MemoryCategory::logits, "logits", Phase::forward, layer, mb);
      for (const auto& op : b.forward) emit_op(r, op, b.name + "." + op.name + ".fwd", Phase::forward, layer, mb);
      if (fsdp_) fsdp_reshard_after_forward(r, st, bi, mb);
    }
    if (g < chunks() - 1) send(r, send_next_, neighbour(r, +1), "pp.send_activation", Phase::forward, mb);
  }

  void emit_backward(RankState& r, const Stage& st, int chunk, int mb) {
    const int g = global_chunk(r, chunk);
    // Gradients are synchronised in the last micro-batch (no_sync before it); ZeRO-2 cannot hold
    // whole gradients, so it reduce-scatters in every micro-batch.
    const bool sync = layout_.dp > 1 && (mb == micro_batches_ - 1 || layout_.data_parallel == DataParallel::zero2);
    if (g < chunks() - 1) receive(r, recv_next_, neighbour(r, +1), "pp.recv_grad", Phase::backward, mb);
    const auto& blocks = st.chunk_blocks[static_cast<size_t>(chunk)];
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
      const int bi = *it;
      const model::Block& b = work_.blocks[static_cast<size_t>(bi)];
      const int layer = layer_of(bi);
      if (fsdp_) {
        fsdp_gather_backward(r, st, blocks, it, mb);
        wait_for_gather(r, st, bi);
      }
      if (!b.recompute.empty() && recompute_transient_ > 0) {
        memory(r, kComputeStream, recompute_transient_, MemoryCategory::activations, b.name + ".recomputed", Phase::backward, layer, mb);
      }
      // Recomputation repeats the forward ops, tensor-parallel collectives included.
      for (const auto& op : b.recompute) emit_op(r, op, b.name + "." + op.name + ".recompute", Phase::backward, layer, mb, true);
      for (const auto& op : b.backward) {
        const TaskId t = emit_op(r, op, b.name + "." + op.name, Phase::backward, layer, mb);
        for (int p : op.grads_ready) gradient_ready(r, st, p, t, sync, layer, mb);
      }
      if (!b.recompute.empty() && recompute_transient_ > 0) {
        memory(r, kComputeStream, -recompute_transient_, MemoryCategory::activations, b.name + ".recomputed.free", Phase::backward, layer, mb);
      }
      if (b.logits.count) memory(r, kComputeStream, -b.logits.count, MemoryCategory::logits, "logits.free", Phase::backward, layer, mb);
      if (b.autocast_weights.count) memory(r, kComputeStream, -b.autocast_weights.count, MemoryCategory::workspace, b.name + ".autocast_weights.free", Phase::backward, layer, mb);
      if (b.saved_activations.count) memory(r, kComputeStream, -b.saved_activations.count, MemoryCategory::activations, b.name + ".activations.free", Phase::backward, layer, mb);
      if (fsdp_) fsdp_reshard_after_backward(r, st, bi, sync, mb);
    }
    if (g > 0) send(r, send_prev_, neighbour(r, -1), "pp.send_grad", Phase::backward, mb);
  }

  // A parameter's gradient is complete. Unsharded gradient storage that ZeRO-2 and FSDP keep
  // only transiently is allocated with a unit's first gradient; the unit syncs with its last.
  void gradient_ready(RankState& r, const Stage& st, int param, TaskId producer, bool sync, int layer, int mb) {
    const int u = st.unit_of_param[static_cast<size_t>(param)];
    if (u < 0 || layout_.dp == 1) return;
    const Bucket& unit = st.units[static_cast<size_t>(u)];
    const std::string tag = (fsdp_ ? "fsdp.unit" : "dp.bucket") + std::to_string(u);
    const bool transient_grads = fsdp_ || layout_.data_parallel == DataParallel::zero2;
    if (transient_grads && !r.grad_held[static_cast<size_t>(u)]) {
      memory(r, kComputeStream, unit.bytes.count, MemoryCategory::gradients, tag + ".unsharded_grad", Phase::backward, layer, mb);
      r.grad_held[static_cast<size_t>(u)] = true;
    }
    auto [counts, fresh] = r.remaining.try_emplace(mb);
    if (fresh) {
      for (const Bucket& b : st.units) counts->second.push_back(static_cast<int>(b.params.size()));
    }
    if (--counts->second[static_cast<size_t>(u)] > 0) return;
    TaskId after = producer;
    auto pass = [&](ir::OpClass cls, int64_t bytes, const std::string& what) {
      ir::ComputeOp op;
      op.op = cls;
      op.dtype = ir::DType::fp32;
      op.bytes = {bytes};
      after = compute(r, op, g_->label(tag + "." + what, Phase::backward, layer, mb));
    };
    if (fsdp_) {
      // FSDP's flat parameter: autograd concatenates the unit's gradients into one flat gradient
      // (read + write; read + read + write when it accumulates over a no_sync micro-batch), and
      // before reduce-scattering FSDP pre-divides it by the world size (read + write).
      pass(ir::OpClass::memcpy, (mb == 0 ? 2 : 3) * unit.bytes.count, "flat_grad");
      if (sync) pass(ir::OpClass::elementwise, 2 * unit.bytes.count, "predivide");
    }
    if (!sync) return;
    // Bucketed DDP copies the bucket's gradients into its flat buffer (read + write).
    if (layout_.data_parallel == DataParallel::ddp) pass(ir::OpClass::memcpy, 2 * unit.bytes.count, "copy");
    const bool all_reduce = layout_.data_parallel == DataParallel::ddp || layout_.data_parallel == DataParallel::ddp_flat;
    const CollectiveType type = all_reduce ? CollectiveType::all_reduce : CollectiveType::reduce_scatter;
    const TaskId c = collective(r, kCommStream, r.dp_group, type, unit.bytes,
                                g_->label(tag + "." + std::string(ir::to_string(type)), Phase::backward, layer, mb), /*gradients=*/true);
    g_->add_dependency(after, c);
    r.syncs.push_back(c);
    if (transient_grads) {
      r.syncs.push_back(memory(r, kCommStream, -unit.bytes.count, MemoryCategory::gradients, tag + ".unsharded_grad.free", Phase::backward, layer, mb));
      r.grad_held[static_cast<size_t>(u)] = false;
    }
  }

  // --- FSDP parameter gathers ------------------------------------------------------------------
  int64_t unit_param_bytes(const Bucket& u) const { return u.bytes.count / prec_.grad_bytes * prec_.weight_bytes; }

  // All-gathers unit u's parameters on the gather stream once `issued_after` has finished; the
  // unit's next compute waits for it. FSDP's rate limiter keeps at most two units in flight: the
  // gather also waits until the unit two before it was resharded.
  void fsdp_gather(RankState& r, const Stage& st, int u, TaskId issued_after, int rate_limit_unit, Phase phase, int layer, int mb) {
    const Bucket& unit = st.units[static_cast<size_t>(u)];
    const int64_t bytes = unit_param_bytes(unit);
    const std::string tag = "fsdp.unit" + std::to_string(u);
    const TaskId alloc = memory(r, gather_stream_, bytes, MemoryCategory::parameters, tag + ".unshard", phase, layer, mb);
    if (issued_after != kNone) g_->add_dependency(issued_after, alloc);
    if (rate_limit_unit >= 0 && r.unit_freed[static_cast<size_t>(rate_limit_unit)] != kNone) {
      g_->add_dependency(r.unit_freed[static_cast<size_t>(rate_limit_unit)], alloc);
    }
    r.unit_gather[static_cast<size_t>(u)] = collective(r, gather_stream_, r.dp_group, CollectiveType::all_gather, Bytes{bytes},
                                                       g_->label(tag + ".all_gather", phase, layer, mb));
    r.gathered[static_cast<size_t>(u)] = true;
  }

  void wait_for_gather(RankState& r, const Stage& st, int block) {
    TaskId& gather = r.unit_gather[static_cast<size_t>(st.unit_of_block[static_cast<size_t>(block)])];
    if (gather != kNone) pending_inputs_.push_back(gather);
    gather = kNone;
  }

  void fsdp_gather_forward(RankState& r, const Stage& st, int block, int mb) {
    const int u = st.unit_of_block[static_cast<size_t>(block)];
    if (r.gathered[static_cast<size_t>(u)] || layout_.dp == 1) return;
    fsdp_gather(r, st, u, kNone, u - 2, Phase::forward, layer_of(block), mb);
  }

  void fsdp_reshard_after_forward(RankState& r, const Stage& st, int block, int mb) {
    const int u = st.unit_of_block[static_cast<size_t>(block)];
    if (layout_.data_parallel != DataParallel::fsdp_full_shard || u == st.root_unit || layout_.dp == 1) return;
    free_unit(r, st, u, Phase::forward, layer_of(block), mb);
  }

  // Backward prefetch (BACKWARD_PRE): entering a unit's backward issues the gather of the unit
  // whose backward comes next.
  void fsdp_gather_backward(RankState& r, const Stage& st, const std::vector<int>& blocks,
                            std::vector<int>::const_reverse_iterator it, int mb) {
    if (layout_.dp == 1) return;
    const int u = st.unit_of_block[static_cast<size_t>(*it)];
    if (!r.gathered[static_cast<size_t>(u)]) fsdp_gather(r, st, u, r.last_compute, -1, Phase::backward, layer_of(*it), mb);
    for (auto next = it + 1; next != blocks.rend(); ++next) {
      const int nu = st.unit_of_block[static_cast<size_t>(*next)];
      if (nu == u) continue;
      if (!r.gathered[static_cast<size_t>(nu)]) fsdp_gather(r, st, nu, r.last_compute, -1, Phase::backward, layer_of(*next), mb);
      break;
    }
  }

  void fsdp_reshard_after_backward(RankState& r, const Stage& st, int block, bool sync, int mb) {
    const int u = st.unit_of_block[static_cast<size_t>(block)];
    if (layout_.dp == 1 || !r.gathered[static_cast<size_t>(u)]) return;
    // The root's blocks are the first and last: reshard it after the embedding's backward.
    if (u == st.root_unit && block != 0) return;
    // SHARD_GRAD_OP keeps parameters gathered across no_sync micro-batches (PyTorch frees them
    // in backward only when it syncs).
    if (layout_.data_parallel == DataParallel::fsdp_shard_grad_op && !sync) return;
    free_unit(r, st, u, Phase::backward, layer_of(block), mb);
  }

  void free_unit(RankState& r, const Stage& st, int u, Phase phase, int layer, int mb) {
    const int64_t bytes = unit_param_bytes(st.units[static_cast<size_t>(u)]);
    r.unit_freed[static_cast<size_t>(u)] = memory(r, kComputeStream, -bytes, MemoryCategory::parameters,
                                                  "fsdp.unit" + std::to_string(u) + ".reshard", phase, layer, mb);
    r.gathered[static_cast<size_t>(u)] = false;
  }

  // --- end of step ---------------------------------------------------------------------------
  void finish_step(RankState& r, const Stage& st) {
    // Tied embeddings split over the first and last stage: all-reduce the word-embedding
    // gradient between them after the data-parallel sync (Megatron's finalize_model_grads).
    if (tied_copy_ >= 0 && (r.at.pp == 0 || r.at.pp == layout_.pp - 1)) {
      Coord first = r.at, last = r.at;
      first.pp = 0;
      last.pp = layout_.pp - 1;
      const ir::GroupId pair = g_->group({static_cast<RankId>(rank_of(layout_, first)), static_cast<RankId>(rank_of(layout_, last))});
      const Bytes bytes{params_[static_cast<size_t>(tied_copy_)].numel_per_tp_rank(layout_.tp) * prec_.grad_bytes};
      const TaskId ar = collective(r, kComputeStream, pair, CollectiveType::all_reduce, bytes, g_->label("embedding_grad.all_reduce", Phase::optimizer));
      for (TaskId s : r.syncs) g_->add_dependency(s, ar);
    }
    const bool sharded_step = layout_.dp > 1 && zero_stage(layout_.data_parallel) > 0;
    const int64_t step_params = sharded_step ? (st.numel + layout_.dp - 1) / layout_.dp : st.numel;
    const TaskId opt = compute(r, model::optimizer_op(step_params, prec_), g_->label("optimizer.adamw", Phase::optimizer));
    for (TaskId s : r.syncs) g_->add_dependency(s, opt);
    // ZeRO-1/2: every rank updated its shard; all-gather the new parameters bucket by bucket.
    if (sharded_step && !fsdp_) {
      for (size_t u = 0; u < st.units.size(); ++u) {
        const TaskId ag = collective(r, gather_stream_, r.dp_group, CollectiveType::all_gather, Bytes{unit_param_bytes(st.units[u])},
                                     g_->label("dp.bucket" + std::to_string(u) + ".param_all_gather", Phase::optimizer));
        g_->add_dependency(opt, ag);
      }
    }
  }

  // Layers are labelled by decoder index (-1 for embedding/head) for transformers, by block for
  // the MLP.
  int layer_of(int block) const {
    if (spec_.family == model::Family::mlp) return block;
    if (block == 0 || block == spec_.layers + 1) return -1;
    return block - 1;
  }

  const model::ModelSpec& spec_;
  Layout layout_;
  TrainingSpec train_;
  StepOptions options_;
  model::ModelWork work_;
  model::PrecisionInfo prec_{};
  int64_t recompute_transient_ = 0;
  int64_t micro_batches_ = 0;
  bool fsdp_ = false;
  std::vector<model::ParameterTensor> params_;
  int tied_copy_ = -1;
  std::vector<Stage> stages_;
  ir::TaskGraph* g_ = nullptr;
  ir::StreamId gather_stream_ = 0, send_next_ = 0, recv_prev_ = 0, send_prev_ = 0, recv_next_ = 0;
  std::vector<TaskId> pending_inputs_;
  std::map<std::pair<ir::GroupId, ir::StreamId>, std::vector<ir::CollectiveId>> collectives_;
  std::map<std::tuple<RankId, ir::GroupId, ir::StreamId>, size_t> collective_seen_;
  std::map<std::pair<RankId, RankId>, std::vector<ir::TransferId>> transfers_;
  std::map<std::pair<RankId, RankId>, size_t> sends_seen_, recvs_seen_;
};

}  // namespace

StepGraph build_training_step(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t, const StepOptions& o) {
  return StepBuilder(m, l, t, o).build();
}

}  // namespace cs::strategy
