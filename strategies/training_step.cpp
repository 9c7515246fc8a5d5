#include "strategies/training_step.h"

#include <algorithm>

namespace cs::strategy {
namespace {

using ir::MemoryCategory;
using ir::Phase;
using ir::TaskId;

class StepBuilder {
 public:
  StepBuilder(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t)
      : spec_(m), layout_(l), train_(t), out_{ir::TaskGraph(static_cast<uint32_t>(l.gpus())), 0, 0, 0, {}, 0, {}} {
    model::WorkShape shape;
    shape.micro_batch = t.micro_batch;
    shape.seq = m.family == model::Family::mlp ? 1 : t.seq_len;
    shape.tp = l.tp;
    shape.precision = t.precision;
    shape.attention = t.attention;
    shape.recompute = t.recompute;
    work_ = model::build_model_work(m, shape);
    prec_ = model::precision_info(t.precision);
    g().add_stream("compute");
    g().add_stream("comm");
  }

  StepGraph build() {
    out_.micro_batches = train_.accumulation(layout_);
    out_.samples_per_step = static_cast<double>(train_.global_batch);
    out_.tokens_per_step = static_cast<double>(train_.global_batch) *
                           static_cast<double>(spec_.family == model::Family::mlp ? 1 : train_.seq_len);
    out_.model_flops_per_step = {work_.model_flops.value * static_cast<double>(out_.micro_batches * layout_.dp)};
    for (const auto& p : work_.params) out_.parameters += p.numel;
    if (layout_.dp > 1) {
      if (layout_.data_parallel == DataParallel::ddp) {
        out_.buckets = assign_buckets(work_.params, prec_.grad_bytes, layout_.first_bucket_size, layout_.bucket_size);
      } else {
        for (int i = static_cast<int>(work_.params.size()) - 1; i >= 0; --i) {
          out_.buckets.push_back({{i}, Bytes{work_.params[static_cast<size_t>(i)].numel * prec_.grad_bytes}});
        }
      }
    }
    std::vector<ir::RankId> dp_group;
    for (int r = 0; r < layout_.dp; ++r) dp_group.push_back(static_cast<ir::RankId>(r));
    dp_group_ = g().group(dp_group);
    bucket_calls_.clear();
    for (const auto& b : out_.buckets) bucket_calls_.push_back(g().new_collective(ir::CollectiveType::all_reduce, b.bytes, dp_group_));
    for (int r = 0; r < layout_.gpus(); ++r) emit_rank(static_cast<ir::RankId>(r));
    g().finalize();
    return std::move(out_);
  }

 private:
  ir::TaskGraph& g() { return out_.graph; }

  TaskId memory(ir::RankId r, int64_t delta, MemoryCategory cat, const std::string& name, Phase phase,
                int layer = -1, int mb = -1) {
    return g().add_memory(r, kComputeStream, delta, cat, g().label(name, phase, layer, mb));
  }

  void emit_rank(ir::RankId r) {
    const int64_t params = out_.parameters;
    // Model state lives for the whole step: weights, gradients, optimizer state, DDP buckets.
    memory(r, params * prec_.weight_bytes, MemoryCategory::parameters, "alloc.parameters", Phase::other);
    memory(r, params * prec_.grad_bytes, MemoryCategory::gradients, "alloc.gradients", Phase::other);
    memory(r, params * prec_.optimizer_bytes, MemoryCategory::optimizer_state, "alloc.optimizer_state", Phase::other);
    if (layout_.dp > 1 && layout_.data_parallel == DataParallel::ddp) {
      memory(r, params * prec_.grad_bytes, MemoryCategory::comm_buffers, "alloc.ddp_buckets", Phase::other);
    }

    std::vector<TaskId> sync_tasks;
    for (int64_t mb = 0; mb < out_.micro_batches; ++mb) {
      const bool sync = layout_.dp > 1 && mb == out_.micro_batches - 1;
      emit_micro_batch(r, static_cast<int>(mb), sync, sync_tasks);
    }

    // Optimizer: waits for every gradient all-reduce (DDP's finalize_backward), then AdamW.
    const ir::ComputeOp adam = model::optimizer_op(params, prec_);
    TaskId opt = g().add_compute(r, kComputeStream, adam, g().label("optimizer.adamw", Phase::optimizer));
    for (TaskId s : sync_tasks) g().add_dependency(s, opt);
  }

  void emit_micro_batch(ir::RankId r, int mb, bool sync, std::vector<TaskId>& sync_tasks) {
    const auto& blocks = work_.blocks;
    const int nblocks = static_cast<int>(blocks.size());
    for (int bi = 0; bi < nblocks; ++bi) {
      const model::Block& b = blocks[static_cast<size_t>(bi)];
      const int layer = layer_of(bi);
      Bytes held = b.saved_activations;
      if (held.count) memory(r, held.count, MemoryCategory::activations, b.name + ".activations", Phase::forward, layer, mb);
      if (b.autocast_weights.count) memory(r, b.autocast_weights.count, MemoryCategory::workspace, b.name + ".autocast_weights", Phase::forward, layer, mb);
      if (b.logits.count) memory(r, b.logits.count, MemoryCategory::logits, "logits", Phase::forward, layer, mb);
      for (const auto& op : b.forward) {
        g().add_compute(r, kComputeStream, op.op, g().label(b.name + "." + op.name + ".fwd", Phase::forward, layer, mb));
      }
    }
    // Backward: blocks in reverse; gradients complete as their wgrad ops finish.
    std::vector<int> remaining(out_.buckets.size());
    std::vector<int> bucket_of(work_.params.size(), -1);
    for (size_t k = 0; k < out_.buckets.size(); ++k) {
      remaining[k] = static_cast<int>(out_.buckets[k].params.size());
      for (int p : out_.buckets[k].params) bucket_of[static_cast<size_t>(p)] = static_cast<int>(k);
    }
    for (int bi = nblocks - 1; bi >= 0; --bi) {
      const model::Block& b = blocks[static_cast<size_t>(bi)];
      const int layer = layer_of(bi);
      for (const auto& op : b.recompute) {
        g().add_compute(r, kComputeStream, op.op, g().label(b.name + "." + op.name + ".recompute", Phase::backward, layer, mb, true));
      }
      for (const auto& op : b.backward) {
        TaskId t = g().add_compute(r, kComputeStream, op.op, g().label(b.name + "." + op.name, Phase::backward, layer, mb));
        if (!sync) continue;
        for (int p : op.grads_ready) {
          const int k = bucket_of[static_cast<size_t>(p)];
          if (k < 0 || --remaining[static_cast<size_t>(k)] > 0) continue;
          sync_tasks.push_back(emit_bucket_sync(r, k, t, layer, mb));
        }
      }
      if (b.logits.count) memory(r, -b.logits.count, MemoryCategory::logits, "logits.free", Phase::backward, layer, mb);
      if (b.autocast_weights.count) memory(r, -b.autocast_weights.count, MemoryCategory::workspace, b.name + ".autocast_weights.free", Phase::backward, layer, mb);
      if (b.saved_activations.count) memory(r, -b.saved_activations.count, MemoryCategory::activations, b.name + ".activations.free", Phase::backward, layer, mb);
    }
  }

  // Bucketed DDP copies the bucket's gradients into its flat buffer (read + write) on the compute
  // stream, then all-reduces it on the communication stream.
  TaskId emit_bucket_sync(ir::RankId r, int k, TaskId ready, int layer, int mb) {
    const Bucket& bucket = out_.buckets[static_cast<size_t>(k)];
    TaskId after = ready;
    if (layout_.data_parallel == DataParallel::ddp) {
      ir::ComputeOp copy;
      copy.op = ir::OpClass::memcpy;
      copy.dtype = ir::DType::fp32;
      copy.bytes = {2 * bucket.bytes.count};
      after = g().add_compute(r, kComputeStream, copy, g().label("ddp.bucket" + std::to_string(k) + ".copy", Phase::backward, layer, mb));
    }
    TaskId ar = g().add_collective(r, kCommStream, bucket_calls_[static_cast<size_t>(k)],
                                   g().label("ddp.bucket" + std::to_string(k) + ".all_reduce", Phase::backward, layer, mb));
    g().add_dependency(after, ar);
    return ar;
  }

  // Label layers by decoder index (-1 for embedding/head) for transformers, by block for the MLP.
  int layer_of(int block) const {
    if (spec_.family == model::Family::mlp) return block;
    if (block == 0 || block == spec_.layers + 1) return -1;
    return block - 1;
  }

  const model::ModelSpec& spec_;
  Layout layout_;
  TrainingSpec train_;
  StepGraph out_;
  model::ModelWork work_;
  model::PrecisionInfo prec_{};
  ir::GroupId dp_group_ = 0;
  std::vector<ir::CollectiveId> bucket_calls_;
};

}  // namespace

StepGraph build_training_step(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t) {
  return StepBuilder(m, l, t).build();
}

}  // namespace cs::strategy
