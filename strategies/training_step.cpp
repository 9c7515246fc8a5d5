#include "strategies/training_step.h"

#include <algorithm>
#include <memory>

#include "strategies/data_parallel/flavour.h"
#include "strategies/data_parallel/policy.h"
#include "strategies/pipeline_schedule.h"
#include "strategies/stage_plan.h"
#include "strategies/tensor_parallel.h"
#include "strategies/work_shape.h"

namespace cs::strategy {
namespace {

using ir::MemoryCategory;
using ir::Phase;
using ir::RankId;

class StepBuilder {
 public:
  StepBuilder(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t,
              const StepOptions& o)
      : spec_(m), layout_(l), train_(t), options_(o) {
    work_ = model::build_model_work(m, make_work_shape(m, l, t));
    model::apply_stack(work_, model::stack_traits(t.stack), t.compile_scope);
    prec_ = t.precision_info();
    micro_batches_ = t.accumulation(l);
  }

  StepGraph build() {
    // Representatives: one rank per pipeline stage, and per context-parallel index unless the
    // ring folds (its ranks exchange KV chunks peer to peer).
    const int per_stage = cp_ring_folded() ? 1 : layout_.cp;
    const int ranks = options_.representative_ranks ? layout_.pp * per_stage : layout_.gpus();
    StepGraph out{ir::TaskGraph(static_cast<uint32_t>(ranks)), micro_batches_, 0, 0, {}, 0, {}, {}};
    ir::TaskGraph& g = out.graph;
    g.keep_names(options_.task_names);
    emitter_ = std::make_unique<StepEmitter>(g);
    add_streams(g);
    add_tied_embedding_copy();
    stages_ = partition_stages(spec_, work_, params_, tied_copy_, layout_, micro_batches_);
    policy_ = make_data_parallel_policy(policy_context(), *emitter_);
    for (Stage& st : stages_) st.sync = policy_->make_units(st);

    std::vector<RankId> cluster;
    for (int r = 0; r < ranks; ++r) {
      const int c = options_.representative_ranks
                        ? rank_of(layout_, Coord{0, r / per_stage, 0, r % per_stage})
                        : r;
      cluster.push_back(static_cast<RankId>(c));
      out.stage_of_rank.push_back(coord_of(layout_, c).pp);
    }
    g.set_cluster_ranks(cluster, static_cast<uint32_t>(layout_.gpus()));
    for (int r = 0; r < ranks; ++r) {
      emit_rank(static_cast<RankId>(r), cluster[static_cast<size_t>(r)]);
      if (r == 0) g.reserve_for_ranks(static_cast<size_t>(ranks));  // ranks emit alike
    }
    g.finalize();

    out.samples_per_step = static_cast<double>(train_.global_batch);
    out.tokens_per_step =
        static_cast<double>(train_.global_batch) *
        static_cast<double>(spec_.family == model::Family::mlp ? 1 : train_.seq_len);
    out.model_flops_per_step = {work_.model_flops.value *
                                static_cast<double>(micro_batches_ * layout_.dp * layout_.cp)};
    out.parameters = model::parameter_count(spec_);
    out.buckets = stages_[0].sync.units;
    policy_.reset();
    emitter_.reset();
    return out;
  }

 private:
  // --- set-up -------------------------------------------------------------------------------
  bool cp_ring_folded() const {
    return options_.representative_ranks && options_.fold_context_parallel && layout_.cp > 1;
  }

  void add_streams(ir::TaskGraph& g) {
    g.add_stream("compute");
    g.add_stream("dp.grad");
    if (data_parallel_flavour(layout_.data_parallel).needs_gather_stream())
      gather_stream_ = g.add_stream("dp.gather");
    if (train_.tp_comm_overlap) tp_stream_ = g.add_stream("tp.comm");
    if (layout_.cp > 1) {
      cp_send_ = g.add_stream("cp.send");
      cp_recv_ = g.add_stream("cp.recv");
    }
    if (layout_.pp > 1) {
      send_next_ = g.add_stream("pp.send_next");
      recv_prev_ = g.add_stream("pp.recv_prev");
      send_prev_ = g.add_stream("pp.send_prev");
      recv_next_ = g.add_stream("pp.recv_next");
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
    params_.back().frozen = params_[0].frozen;
    for (auto& op : work_.blocks[static_cast<size_t>(head)].backward) {
      if (op.name == "lm_head.wgrad") op.grads_ready.push_back(tied_copy_);
    }
  }

  PolicyContext policy_context() const {
    PolicyContext c;
    c.layout = layout_;
    c.precision = prec_;
    c.reduce_bytes =
        strategy::data_parallel_flavour(layout_.data_parallel)
            .reduced_gradient_bytes(prec_, layout_.fsdp_version, train_.grad_reduce_in_bf16);
    c.params = &params_;
    c.blocks = static_cast<int>(work_.blocks.size());
    c.transformer = spec_.family != model::Family::mlp;
    c.micro_batches = micro_batches_;
    c.overlap_param_gather = train_.overlap_param_gather;
    c.gradient_ranks = layout_.dp * layout_.cp;
    c.expert_gradient_ranks = expert_data_parallel_size(layout_);
    c.gather_stream = gather_stream_;
    c.stack = train_.stack;
    c.layer_of = [this](int block) { return layer_of(block); };
    // Hugging Face's Trainer and plain PyTorch loops on one GPU: no DDP, so no gradient buckets.
    const bool pytorch_loop =
        train_.stack == model::Stack::pytorch_eager || train_.stack == model::Stack::torch_compile;
    const bool unwrapped = layout_.data_parallel == DataParallel::ddp ||
                           layout_.data_parallel == DataParallel::ddp_flat;
    c.lazy_gradients =
        pytorch_loop && unwrapped && c.gradient_ranks == 1 && c.expert_gradient_ranks == 1;
    return c;
  }

  // --- one rank -------------------------------------------------------------------------------
  void emit_rank(RankId rank, RankId cluster) {
    ir::TaskGraph& g = emitter_->graph();
    RankState r;
    r.rank = rank;
    r.cluster = cluster;
    r.at = coord_of(layout_, static_cast<int>(cluster));
    r.tp_group = g.group(ranks_along(layout_, r.at, Dim::tp));
    // Gradients are averaged over every rank holding the same parameters: dp x cp (Megatron).
    r.dp_group = g.group(ranks_along(layout_, r.at, {Dim::dp, Dim::cp}));
    if (train_.tp_comm_overlap) {
      r.tp_chunks = layout_.tp;
      r.tp_stream = tp_stream_;
    }
    if (spec_.moe.enabled()) {
      r.ep_group = g.group(expert_parallel_group(layout_, r.at));
      r.etp_group = g.group(expert_tensor_parallel_group(layout_, r.at));
      r.etp_ep_group = g.group(expert_tensor_and_expert_parallel_group(layout_, r.at));
      r.expert_dp_group = g.group(expert_data_parallel_group(layout_, r.at));
    }
    if (layout_.cp > 1) set_context_parallel(r);
    const Stage& st = stages_[static_cast<size_t>(r.at.pp)];
    policy_->begin_rank(r, st);
    if (p2p_blocks_) {
      emit_passes_between_exchanges(r, st);
    } else {
      for (const Slot& slot : st.schedule) {
        receive_input(r, slot);
        gather_received(r);
        emit_pass(r, st, slot);
        send_output(r, slot);
      }
    }
    finish_step(r, st);
  }

  // Blocking exchanges (pipeline_p2p_blocks): each sends what the passes since the last one
  // produced and receives what the passes until the next need, all posted after the stage's last
  // compute; the next compute waits for every one of them.
  void emit_passes_between_exchanges(RankState& r, const Stage& st) {
    const std::vector<Slot>& order = st.schedule;
    const PipelineScheduleFlavour& schedule = pipeline_schedule_flavour(layout_.schedule);
    size_t unsent = 0;
    for (size_t first = 0; first < order.size();) {
      const size_t end =
          first + schedule.passes_per_exchange(layout_.pp, layout_.virtual_stages, r.at.pp,
                                               static_cast<int>(micro_batches_), first);
      for (size_t k = unsent; k < first; ++k) send_output(r, order[k]);
      for (size_t k = first; k < end; ++k) receive_input(r, order[k]);
      gather_received(r);
      for (size_t k = first; k < end; ++k) emit_pass(r, st, order[k]);
      unsent = first;
      first = end;
    }
    for (size_t k = unsent; k < order.size(); ++k) send_output(r, order[k]);
  }

  void emit_pass(RankState& r, const Stage& st, const Slot& slot) {
    if (slot.pass == Pass::forward)
      emit_forward(r, st, slot.chunk, slot.micro_batch);
    else
      emit_backward(r, st, slot.chunk, slot.micro_batch, slot.pass);
  }

  // A pass's pipeline exchange: its input from the previous model chunk (a forward's activation,
  // a backward's output gradient), and its output to the next (zero-bubble's W exchanges nothing).
  void receive_input(RankState& r, const Slot& slot) {
    const int g = global_chunk(r, slot.chunk), mb = slot.micro_batch;
    if (slot.pass == Pass::forward && g > 0)
      receive(r, recv_prev_, neighbour(r, -1), "pp.recv_activation", Phase::forward, mb);
    if (exchanges_gradient(slot) && g < chunks() - 1)
      receive(r, recv_next_, neighbour(r, +1), "pp.recv_grad", Phase::backward, mb);
  }
  void send_output(RankState& r, const Slot& slot) {
    const int g = global_chunk(r, slot.chunk), mb = slot.micro_batch;
    if (slot.pass == Pass::forward && g < chunks() - 1)
      send(r, send_next_, neighbour(r, +1), "pp.send_activation", Phase::forward, mb);
    if (exchanges_gradient(slot) && g > 0)
      send(r, send_prev_, neighbour(r, -1), "pp.send_grad", Phase::backward, mb);
  }
  static bool exchanges_gradient(const Slot& slot) {
    return slot.pass == Pass::backward || slot.pass == Pass::input_grad;
  }

  // The CP group, its all-to-all level (Megatron's hierarchical groups: runs of `a` consecutive
  // CP indices, a = cp_a2a_size: 1 under the ring, cp under Ulysses) and the ring's neighbours,
  // a CP indices apart (the ring over the all-to-all groups; the plain ring when a = 1).
  void set_context_parallel(RankState& r) {
    ir::TaskGraph& g = emitter_->graph();
    const int cp = layout_.cp, a = cp_a2a_size(layout_);
    Coord next = r.at, prev = r.at;
    next.cp = (r.at.cp + a) % cp;
    prev.cp = (r.at.cp + cp - a) % cp;
    r.cp_next = static_cast<RankId>(rank_of(layout_, next));
    r.cp_prev = static_cast<RankId>(rank_of(layout_, prev));
    r.cp_group = g.group(ranks_along(layout_, r.at, Dim::cp));
    if (a > 1) {
      std::vector<uint32_t> level;
      Coord k = r.at;
      for (int i = 0; i < a; ++i) {
        k.cp = r.at.cp / a * a + i;
        level.push_back(static_cast<uint32_t>(rank_of(layout_, k)));
      }
      std::sort(level.begin(), level.end());
      r.cp_a2a_group = g.group(level);
    }
    r.cp_send = cp_send_;
    r.cp_recv = cp_recv_;
    r.cp_ring_folded = cp_ring_folded();
  }

  void emit_forward(RankState& r, const Stage& st, int chunk, int mb) {
    for (int bi : st.chunk_blocks[static_cast<size_t>(chunk)]) {
      const model::Block& b = work_.blocks[static_cast<size_t>(bi)];
      const int layer = layer_of(bi);
      policy_->before_forward(r, st, bi, mb);
      hold(r, b.saved_activations, MemoryCategory::activations, block_name(b, ".activations"),
           Phase::forward, layer, mb);
      hold(r, b.autocast_weights, MemoryCategory::workspace, block_name(b, ".autocast_weights"),
           Phase::forward, layer, mb);
      hold(r, b.logits, MemoryCategory::logits, named("logits"), Phase::forward, layer, mb);
      for (const auto& op : b.forward)
        emit_model_op(*emitter_, r, op, op_name(b, op, ".fwd"), Phase::forward, layer, mb);
      policy_->after_forward(r, st, bi, mb);
    }
  }

  // "L3.attn.qkv.fwd", interned once per op and suffix (StepEmitter::names()).
  ir::NameId op_name(const model::Block& b, const model::Op& op, const char* suffix) {
    return emitter_->names().of(&op, suffix, [&] { return b.name + "." + op.name + suffix; });
  }
  // "L3.activations", once per block and suffix; a literal's own name once.
  ir::NameId block_name(const model::Block& b, const char* suffix) {
    return emitter_->names().of(&b, suffix, [&] { return b.name + suffix; });
  }
  ir::NameId named(const char* literal) {
    return emitter_->names().of(nullptr, literal, [&] { return std::string(literal); });
  }

  // A backward pass: whole, or zero-bubble's B (input gradients; sent upstream at its end) or W
  // (weight gradients; the activations they read are freed after it).
  void emit_backward(RankState& r, const Stage& st, int chunk, int mb, Pass pass) {
    const bool sync = policy_->syncs(mb);
    const bool inputs = pass != Pass::weight_grad;
    const auto& blocks = st.chunk_blocks[static_cast<size_t>(chunk)];
    for (size_t pos = blocks.size(); pos-- > 0;) {
      const int bi = blocks[pos];
      const model::Block& b = work_.blocks[static_cast<size_t>(bi)];
      const int layer = layer_of(bi);
      // Recomputation re-materialises, transiently, what checkpointing did not keep.
      const Bytes transient = b.recompute_transient;
      const bool recomputes = !b.recompute.empty() && transient.count > 0;
      if (inputs) {
        policy_->before_backward(r, st, blocks, pos, mb);
        if (recomputes)
          hold(r, transient, MemoryCategory::activations, block_name(b, ".recomputed"),
               Phase::backward, layer, mb);
        // Recomputation repeats the forward ops, tensor-parallel collectives included.
        for (const auto& op : b.recompute) {
          emit_model_op(*emitter_, r, op, op_name(b, op, ".recompute"), Phase::backward, layer, mb,
                        true);
        }
      }
      for (const auto& op : b.backward) {
        if (pass != Pass::backward && is_weight_gradient(op) != (pass == Pass::weight_grad))
          continue;
        const TaskId t =
            emit_model_op(*emitter_, r, op, op_name(b, op, ""), Phase::backward, layer, mb);
        policy_->gradients_ready(r, st, op.grads_ready, t, sync, layer, mb);
      }
      // Zero-bubble: B frees all that W does not read (dW = x^T dy): of the saved and recomputed
      // activations all but the linears' inputs, the logits and loss intermediates, autocast's
      // weight copies. W frees the linears' inputs. As for every layer, the output gradient W
      // also reads (the head's: the logits' gradient) is not counted.
      const int64_t held = b.saved_activations.count + (recomputes ? transient.count : 0);
      const Bytes kept_for_w{std::min(held, b.weight_grad_inputs.count)};
      if (pass == Pass::input_grad) {
        release(r, Bytes{held - kept_for_w.count}, MemoryCategory::activations,
                block_name(b, ".activations.free_b"), layer, mb);
        release(r, b.logits, MemoryCategory::logits, named("logits.free"), layer, mb);
        release(r, b.autocast_weights, MemoryCategory::workspace,
                block_name(b, ".autocast_weights.free"), layer, mb);
        continue;
      }
      if (pass == Pass::weight_grad) {
        release(r, kept_for_w, MemoryCategory::activations, block_name(b, ".activations.free"),
                layer, mb);
      } else {
        if (recomputes)
          release(r, transient, MemoryCategory::activations, block_name(b, ".recomputed.free"),
                  layer, mb);
        release(r, b.logits, MemoryCategory::logits, named("logits.free"), layer, mb);
        release(r, b.autocast_weights, MemoryCategory::workspace,
                block_name(b, ".autocast_weights.free"), layer, mb);
        release(r, b.saved_activations, MemoryCategory::activations,
                block_name(b, ".activations.free"), layer, mb);
      }
      policy_->after_backward(r, st, bi, sync, mb);
    }
  }

  static bool is_weight_gradient(const model::Op& op) {
    constexpr std::string_view kSuffix = ".wgrad";
    return op.name.size() >= kSuffix.size() &&
           op.name.compare(op.name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
  }

  void finish_step(RankState& r, const Stage& st) {
    ir::TaskGraph& g = emitter_->graph();
    // Tied embeddings split over the first and last stage: all-reduce the word-embedding
    // gradient between them after the data-parallel sync (Megatron's finalize_model_grads).
    if (tied_copy_ >= 0 && (r.at.pp == 0 || r.at.pp == layout_.pp - 1)) {
      Coord first = r.at, last = r.at;
      first.pp = 0;
      last.pp = layout_.pp - 1;
      const ir::GroupId pair = g.group({static_cast<RankId>(rank_of(layout_, first)),
                                        static_cast<RankId>(rank_of(layout_, last))});
      const Bytes bytes{params_[static_cast<size_t>(tied_copy_)].numel_per_tp_rank(layout_.tp) *
                        prec_.grad_bytes};
      const TaskId ar =
          emitter_->collective(r, kComputeStream, pair, ir::CollectiveType::all_reduce, bytes,
                               g.label("embedding_grad.all_reduce", Phase::optimizer));
      for (TaskId s : r.syncs) emitter_->depends(s, ar);
    }
    const TaskId opt = emitter_->compute(
        r, model::optimizer_op(policy_->optimizer_params(st), prec_, train_.optimizer()),
        g.label("optimizer.adamw", Phase::optimizer));
    for (TaskId s : r.syncs) emitter_->depends(s, opt);
    policy_->after_optimizer(r, st, opt);
    policy_->free_lazy_gradients(r, st);
  }

  // --- helpers --------------------------------------------------------------------------------
  // Activation-like memory held from forward to backward, on the compute stream.
  void hold(RankState& r, Bytes bytes, MemoryCategory cat, ir::NameId name, Phase phase, int layer,
            int mb) {
    if (bytes.count) emitter_->memory(r, kComputeStream, bytes.count, cat, name, phase, layer, mb);
  }
  void release(RankState& r, Bytes bytes, MemoryCategory cat, ir::NameId name, int layer, int mb) {
    if (bytes.count)
      emitter_->memory(r, kComputeStream, -bytes.count, cat, name, Phase::backward, layer, mb);
  }

  // Activations (and their gradients) crossing a stage boundary (pipeline_exchange_bytes: the
  // tensor, or its TP slice all-gathered on arrival).
  Bytes boundary_tensor_bytes() const {
    return pipeline_boundary_tensor_bytes(spec_, layout_, train_);
  }
  Bytes boundary_bytes() const { return pipeline_exchange_bytes(spec_, layout_, train_); }
  // A blocking exchange (strategy::pipeline_p2p_blocks) posts its receives and sends after the
  // stage's last compute and holds the next compute until all have completed. A received TP
  // slice is all-gathered on the compute stream once every receive of its exchange has arrived
  // (gather_received: the first gather is the compute those receives hold).
  void receive(RankState& r, ir::StreamId s, RankId from, const std::string& name, Phase phase,
               int mb) {
    const TaskId rx = emitter_->receive(r, s, from, boundary_bytes(),
                                        emitter_->graph().label(name, phase, -1, mb));
    if (p2p_blocks_) emitter_->depends(r.last_compute, rx);
    if (scatter_gathers_) to_gather_.push_back({name + ".tp_all_gather", phase, mb});
  }
  void gather_received(RankState& r) {
    for (const PendingGather& p : to_gather_) {
      emitter_->collective(r, kComputeStream, r.tp_group, ir::CollectiveType::all_gather,
                           boundary_tensor_bytes(),
                           emitter_->graph().label(p.name, p.phase, -1, p.micro_batch));
    }
    to_gather_.clear();
  }
  void send(RankState& r, ir::StreamId s, RankId to, const std::string& name, Phase phase, int mb) {
    const TaskId tx = emitter_->send(r, s, to, boundary_bytes(),
                                     emitter_->graph().label(name, phase, -1, mb), r.last_compute);
    if (p2p_blocks_) emitter_->hold_input(tx);
  }

  int global_chunk(const RankState& r, int local_chunk) const {
    return local_chunk * layout_.pp + r.at.pp;
  }
  int chunks() const { return layout_.pp * layout_.virtual_stages; }
  RankId neighbour(const RankState& r, int delta) const {
    Coord c = r.at;
    c.pp = (c.pp + delta + layout_.pp) % layout_.pp;
    return static_cast<RankId>(rank_of(layout_, c));
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
  int64_t micro_batches_ = 0;
  std::vector<model::ParameterTensor> params_;
  int tied_copy_ = -1;
  std::vector<Stage> stages_;
  std::unique_ptr<StepEmitter> emitter_;
  std::unique_ptr<DataParallelPolicy> policy_;
  const bool p2p_blocks_ = pipeline_p2p_blocks(layout_, train_);
  const bool scatter_gathers_ = pipeline_scatter_gather(layout_, train_);
  struct PendingGather {
    std::string name;
    Phase phase;
    int micro_batch;
  };
  std::vector<PendingGather> to_gather_;  // received slices to all-gather (scatter_gathers)
  ir::StreamId cp_send_ = 0, cp_recv_ = 0, tp_stream_ = 0;
  ir::StreamId gather_stream_ = 0, send_next_ = 0, recv_prev_ = 0, send_prev_ = 0, recv_next_ = 0;
};

}  // namespace

StepGraph build_training_step(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t,
                              const StepOptions& o) {
  return StepBuilder(m, l, t, o).build();
}

}  // namespace cs::strategy
