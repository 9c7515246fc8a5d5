// PyTorch FSDP (FSDP1, flat parameters) with one unit per transformer block plus the root
// (embedding, final norm, head):
//   forward    the unit's parameters are all-gathered before its forward; FULL_SHARD frees them
//              after (except the root's, used again at once by backward)
//   backward   entering a unit's backward issues the gather of the unit whose backward comes next
//              (BACKWARD_PRE prefetch); FULL_SHARD reshards after each backward, SHARD_GRAD_OP
//              only in the micro-batch that synchronises (it keeps parameters across no_sync)
//   gradients  autograd accumulates each unit's gradients into a flat gradient; in the syncing
//              micro-batch it is pre-divided by the world size and reduce-scattered
// The rate limiter keeps at most two units' gathers in flight (limit_all_gathers).
//
// FSDP2 (layout.fsdp_version 2: torch.distributed.fsdp.fully_shard, per-parameter sharding, as
// TorchTitan runs it) keeps each parameter's shard as its own tensor, so every gather and every
// reduction copies (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py):
//   copy-in    before the all-gather, each shard is copied into the flat send buffer, cast to the
//              compute dtype by the mixed-precision policy (fp32 read, bf16 written: 6 B per
//              shard element), on its own stream beside compute
//   copy-out   after the all-gather, the flat receive buffer is split into the
//              parameters (split_with_sizes_copy: 2 B read and written per element, bf16), on the
//              compute stream when the unit's compute waits for it
//   chunk_cat  before the reduce-scatter, the unit's unsharded gradients are concatenated into
//              the send buffer and cast to the reduce dtype (bf16 read, fp32 written: 6 B per
//              element), on the compute stream (foreach_reduce copies in on the current stream;
//              only the reduce-scatter runs on its own); the average folds into the collective, so
//              FSDP1's flat-gradient and pre-divide passes do not happen
// With pipeline parallelism (pp > 1) torch.distributed.pipelining drives FSDP2 as TorchTitan runs
// it: reshard_after_forward off (TorchTitan's default policy when PP is on) and, for every backward
// but the stage's last, resharding and gradient sync off (set_reshard_after_backward,
// set_requires_gradient_sync). So either flavour gathers each unit once per step, at its first
// forward, keeps it across the micro-batches that interleave in the schedule, and reshards and
// reduce-scatters it in the last micro-batch's backward: SHARD_GRAD_OP's pattern.
// Gradient accumulation (pp = 1): FSDP1 runs the micro-batches before the last under no_sync,
// accumulating each unit's unsharded flat gradient until the last one reduce-scatters it. FSDP2
// as TorchTitan runs it never calls no_sync (its training loop only calls backward per
// micro-batch; set_requires_gradient_sync is PP's): every micro-batch's backward reduce-scatters
// each unit's gradients and frees them, and foreach_reduce adds the new shard into the sharded
// gradient where one exists (_fsdp_collectives.py: `sharded_param.grad += new_sharded_grad`).
// So FSDP2 holds only sharded gradients across micro-batches, reshards after every backward
// (post_backward) and gathers again for the next forward.
// Expert parallelism (ep > 1) as TorchTitan's FSDP2 + EP runs it (torchtitan/models/llama4/infra/
// parallelize.py, apply_fsdp) and Megatron-FSDP with its expert data-parallel group: each MoE
// block's routed experts are their own unit, sharded over the ranks that hold the same expert
// shard (the expert grid's edp = tp cp dp / (etp ep), layout.h; TorchTitan's edp mesh,
// "dp_shard_mod_ep"), while the rest of the block (attention, norms, router, shared experts) is
// sharded over the whole gradient group (dp x cp). The two units of a block are gathered
// together (TorchTitan's explicit prefetch lists [block, block.moe.experts]) and resharded
// together; each gradient unit reduce-scatters over its own group. The tokens' all-to-all is
// the MoE layer's, as under DDP. Expert units are numbered after the dense ones, so a layout
// without EP keeps its unit numbering.
// At world size 1 nothing is communicated but every copy still runs (a Kineto trace of Llama-3-8B
// layers under fully_shard on one H100, validate/measurements/torch_h100_202611/, PyTorch 2.11):
// before each forward and backward a cast (fp32 -> bf16) and a device-to-device copy (bf16) per
// parameter, both on the compute stream; after each backward the chunk_cat on the compute stream,
// then foreach_reduce copies its fp32 buffer into the sharded gradient (read and write 4 B per
// element) on the reduce stream where a reduce-scatter would have run.
//
// DeepSpeed ZeRO stage 3 (stack deepspeed, FULL_SHARD) gathers parameters as FSDP1's units do here
// (DeepSpeed fetches per submodule with a prefetch window instead: not modelled apart) and reduces
// gradients as deepspeed/runtime/zero/stage3.py does (read at edaa72212):
//   every micro-batch  stages 2 and 3 reduce in every backward ("ZeRO stage >= 2 communicates
//                      during non gradient accumulation boundaries as well", engine.py
//                      allreduce_gradients); a rank keeps only its partition, copied in the first
//                      micro-batch and added to after (partition_grads)
//   IPG bucket         each gradient, once ready, is copied into a contiguous buffer of
//                      reduce_bucket_size elements (layout.bucket_size; allocated at start-up, held
//                      for the run) on the reduction stream, and its own tensor is freed; a
//                      gradient that would overflow the bucket first reduce-scatters what it holds
//   epilogue           at the end of every backward the partial bucket is reduce-scattered and the
//                      host synchronises the reduction stream (independent_gradient_partition_
//                      epilogue), so the next micro-batch's forward waits for every reduction
#include <algorithm>
#include <map>

#include "strategies/data_parallel/flavour.h"
#include "strategies/data_parallel/policy.h"

namespace cs::strategy {
namespace {

using ir::MemoryCategory;
using ir::Phase;

// FULL_SHARD reshards after every forward and backward, except under a pipeline (see the top),
// where it gathers once per step as SHARD_GRAD_OP does.
bool reshards_every_pass(bool full_shard, int pp) { return full_shard && pp == 1; }
// FSDP2 without a pipeline and DeepSpeed's ZeRO-3 reduce every micro-batch (see the top).
bool reduces_every_micro_batch(int fsdp_version, int pp, model::Stack stack) {
  return (fsdp_version == 2 && pp == 1) || stack == model::Stack::deepspeed;
}

class FsdpPolicy final : public DataParallelPolicy {
 public:
  FsdpPolicy(const PolicyContext& c, StepEmitter& e, bool full_shard)
      : DataParallelPolicy(c, e), full_shard_(full_shard) {}

  SyncUnits make_units(const Stage& st) const override {
    SyncUnits s;
    const int nblocks = ctx_.blocks;
    s.unit_of_block.assign(static_cast<size_t>(nblocks), -1);
    for (int b = 0; b < nblocks; ++b) {
      if (!st.holds_block[static_cast<size_t>(b)]) continue;
      const bool root = ctx_.transformer && (b == 0 || b == nblocks - 1);
      if (root && s.root_unit >= 0) {
        s.unit_of_block[static_cast<size_t>(b)] = s.root_unit;
        continue;
      }
      s.unit_of_block[static_cast<size_t>(b)] = static_cast<int>(s.units.size());
      if (root) s.root_unit = static_cast<int>(s.units.size());
      s.units.push_back(Bucket{});
    }
    const auto& params = *ctx_.params;
    std::map<int, size_t> expert_unit;  // block -> its routed experts' unit (ep > 1)
    for (int i : st.params) {
      const auto& prm = params[static_cast<size_t>(i)];
      size_t u = static_cast<size_t>(s.unit_of_block[static_cast<size_t>(prm.block)]);
      if (separate_experts() && prm.role == model::ParamRole::routed_expert) {
        auto [it, fresh] = expert_unit.try_emplace(prm.block, s.units.size());
        if (fresh) s.units.emplace_back().experts = true;
        u = it->second;
      }
      Bucket& unit = s.units[u];
      unit.params.push_back(i);
      unit.bytes += Bytes{numel_per_rank(prm, ctx_.layout) * ctx_.precision.grad_bytes};
    }
    index_units(s);
    return s;
  }

  void begin_rank(RankState& r, const Stage& st) override {
    DataParallelPolicy::begin_rank(r, st);
    sharded_grad_bytes_ = 0;
    shard_held_.assign(st.sync.units.size(), false);
    gathered_.assign(st.sync.units.size(), false);
    unit_freed_.assign(st.sync.units.size(), kNoTask);
    unit_gather_.assign(st.sync.units.size(), kNoTask);
    ipg_ = {};
    reductions_end_ = kNoTask;
    if (deepspeed() && std::max(dp(), expert_dp()) > 1) {
      e_.memory(r, kComputeStream, ctx_.layout.bucket_size.count, MemoryCategory::gradients,
                "deepspeed.ipg_buffer", Phase::other);
    }
    expert_unit_of_block_.assign(st.sync.unit_of_block.size(), -1);
    for (size_t u = 0; u < st.sync.units.size(); ++u) {
      const Bucket& unit = st.sync.units[u];
      if (!unit.experts) continue;
      const int block = (*ctx_.params)[static_cast<size_t>(unit.params.front())].block;
      expert_unit_of_block_[static_cast<size_t>(block)] = static_cast<int>(u);
    }
  }

  void before_forward(RankState& r, const Stage& st, int block, int mb) override {
    const int layer = ctx_.layer_of(block);
    // DeepSpeed's epilogue: the host waited for the last micro-batch's reductions.
    const TaskId after = reductions_end_;
    if (after != kNoTask) e_.hold_input(after);
    reductions_end_ = kNoTask;
    for (int u : units_of(st, block)) {
      if (!gathered_[static_cast<size_t>(u)] && gathers(st, u))
        gather(r, st, u, after, limiter_unit(st, u), Phase::forward, layer, mb);
    }
    for (int u : units_of(st, block)) wait_for_gather(r, st, u, Phase::forward, layer, mb);
  }

  void after_forward(RankState& r, const Stage& st, int block, int mb) override {
    if (!reshards_every_pass()) return;
    for (int u : units_of(st, block)) {
      if (u == st.sync.root_unit || !gathers(st, u)) continue;
      free_unit(r, st, u, Phase::forward, ctx_.layer_of(block), mb);
    }
  }

  void before_backward(RankState& r, const Stage& st, const std::vector<int>& blocks, size_t pos,
                       int mb) override {
    const int u = unit_of(st, blocks[pos]);
    const int layer = ctx_.layer_of(blocks[pos]);
    gather_for_backward(r, st, blocks[pos], layer, mb);
    // Prefetch: the next block's units in backward order (blocks run backward, towards index 0).
    for (size_t next = pos; next-- > 0;) {
      if (unit_of(st, blocks[next]) == u) continue;
      gather_for_backward(r, st, blocks[next], ctx_.layer_of(blocks[next]), mb);
      break;
    }
    for (int v : units_of(st, blocks[pos])) wait_for_gather(r, st, v, Phase::backward, layer, mb);
  }

  void after_backward(RankState& r, const Stage& st, int block, bool sync, int mb) override {
    if (deepspeed() && block == first_block(st)) ipg_epilogue(r, ctx_.layer_of(block), mb);
    // The root's blocks are the first and last: reshard it after the embedding's backward.
    if (unit_of(st, block) == st.sync.root_unit && block != 0) return;
    // SHARD_GRAD_OP (and either flavour under a pipeline) keeps parameters gathered across
    // no_sync micro-batches (PyTorch frees them in backward only when it syncs).
    if (!reshards_every_pass() && !sync) return;
    for (int u : units_of(st, block)) {
      if (gathers(st, u) && gathered_[static_cast<size_t>(u)])
        free_unit(r, st, u, Phase::backward, ctx_.layer_of(block), mb);
    }
  }

  // FSDP2 copies gradients into its reduce buffer even at world size 1: every micro-batch
  // without a pipeline, else the last.
  bool syncs(int mb) const override {
    if (deepspeed()) return std::max(dp(), expert_dp()) > 1;
    if (!fsdp2()) return DataParallelPolicy::syncs(mb);
    return reduces_every_micro_batch(2, ctx_.layout.pp, ctx_.stack) || mb == ctx_.micro_batches - 1;
  }

  // Under EP the routed experts' state is sharded over their own group (see the top).
  int64_t optimizer_params(const Stage& st) const override {
    if (separate_experts()) return sharded_params(st);
    return dp() > 1 ? (st.trained_numel() + dp() - 1) / dp() : st.trained_numel();
  }

 protected:
  bool transient_gradients() const override { return true; }
  bool copies_gradients_alone() const override { return fsdp2(); }
  std::string unit_tag(int u) const override { return "fsdp.unit" + std::to_string(u); }

  void unit_complete(RankState& r, const Stage& st, int u, TaskId producer, bool sync, int layer,
                     int mb) override {
    if (deepspeed()) {
      ipg_add(r, st, u, producer, layer, mb);
      return;
    }
    if (fsdp2()) {
      // Under a pipeline, gradients accumulate in place across the no-sync micro-batches.
      if (sync) fsdp2_reduce(r, st, u, producer, layer, mb);
      return;
    }
    const int64_t bytes = st.sync.units[static_cast<size_t>(u)].bytes.count;
    // The flat gradient: read + write, or read + read + write when it accumulates over an
    // earlier no_sync micro-batch; before reduce-scattering FSDP pre-divides it (read + write).
    TaskId after = gradient_pass(r, ir::OpClass::memcpy, (mb == 0 ? 2 : 3) * bytes,
                                 unit_tag(u) + ".flat_grad", layer, mb);
    if (!sync) return;
    after = gradient_pass(r, ir::OpClass::elementwise, 2 * bytes, unit_tag(u) + ".predivide", layer,
                          mb);
    reduce_unit(r, st, u, ir::CollectiveType::reduce_scatter, after, layer, mb);
  }

  // FSDP2's sharded parameter is the master copy itself (fp32 under a bf16 mixed-precision
  // policy), which the optimizer state already counts where the precision keeps a separate
  // master; bf16 exists only while a unit is gathered. Its sharded gradients do not exist when
  // the step starts (zero_grad frees them): each unit's appears at its reduction (unit_complete)
  // and is freed after the optimizer. In the paper's accounting the same 16 B per parameter are
  // 2 (bf16 weight) + 2 (bf16 gradient) + 12, all held for the whole step. A Kineto trace and
  // the peak of Llama-3-8B layers under fully_shard on one H100 (validate/suites/
  // h100_torch_steps_202611.yaml) show no persistent bf16 copy.
  ModelState resting_state(const ModelState& s) const override {
    if (!fsdp2()) return s;
    const bool separate_master = ctx_.precision.master_bytes() > 0;
    return {separate_master ? 0 : s.parameters, 0, s.optimizer_state};
  }

  void after_optimizer(RankState& r, const Stage&, TaskId optimizer) override {
    if (sharded_grad_bytes_ == 0) return;
    const TaskId free =
        e_.memory(r, kComputeStream, -sharded_grad_bytes_, MemoryCategory::gradients,
                  "fsdp.sharded_grad.free", Phase::optimizer);
    e_.depends(optimizer, free);
  }

 private:
  // FSDP2's foreach_reduce of unit u: chunk_cat into the reduce-scatter buffer, cast to the
  // reduce dtype (fp32 as TorchTitan runs it: read the gradient bytes, write 4 B per element;
  // ctx_.reduce_bytes), then the reduce-scatter of that buffer. The reduced shard becomes the
  // parameter's gradient (in the master dtype), held until the optimizer has run (zero_grad frees
  // it: set_to_none); a later micro-batch's shard is added into it (read both, write one).
  void fsdp2_reduce(RankState& r, const Stage& st, int u, TaskId producer, int layer, int mb) {
    const Bucket& unit = st.sync.units[static_cast<size_t>(u)];
    const int64_t bytes = unit.bytes.count;
    const int64_t numel = bytes / ctx_.precision.grad_bytes;
    const int ranks = ranks_of(unit);
    const int64_t shard_bytes = (numel + ranks - 1) / ranks * master_bytes();
    const bool accumulates = shard_held_[static_cast<size_t>(u)];
    const int64_t reduced = numel * ctx_.reduce_bytes;
    const TaskId cat =
        e_.compute(r, fp32_copy(bytes + reduced),
                   e_.graph().label(unit_tag(u) + ".chunk_cat", Phase::backward, layer, mb));
    e_.depends(producer, cat);
    if (ranks > 1) {
      const TaskId scattered =
          reduce_unit(r, st, u, ir::CollectiveType::reduce_scatter, cat, layer, mb, Bytes{reduced});
      if (accumulates)
        on_reduce_stream(r, fp32_copy(3 * shard_bytes), ".grad_accumulate", scattered, u, layer,
                         mb);
    } else {
      // One rank: the reduce-scatter becomes a copy of the fp32 buffer into the sharded
      // gradient (an add when it accumulates) on the reduce stream.
      on_reduce_stream(r, fp32_copy(reduced + (accumulates ? 2 : 1) * 4 * numel), ".reduce_copy",
                       cat, u, layer, mb);
    }
    if (accumulates) return;
    shard_held_[static_cast<size_t>(u)] = true;
    sharded_grad_bytes_ += shard_bytes;
    r.syncs.push_back(e_.memory(r, kCommStream, shard_bytes, MemoryCategory::gradients,
                                unit_tag(u) + ".sharded_grad", Phase::backward, layer, mb));
  }
  // DeepSpeed's IPG bucket (see the top): unit u's gradients, parameter by parameter in the
  // order backward completes them, copied into the bucket on the reduction stream; a parameter
  // that would overflow it (or belongs to another group: routed experts) flushes it first.
  void ipg_add(RankState& r, const Stage& st, int u, TaskId producer, int layer, int mb) {
    const Bucket& unit = st.sync.units[static_cast<size_t>(u)];
    if (ipg_.bytes > 0 && ipg_.experts != unit.experts) ipg_flush(r, layer, mb);
    ipg_.experts = unit.experts;
    ipg_.group = group_of(r, unit);
    ipg_.ranks = ranks_of(unit);
    int64_t pending = 0;  // bytes of the unit not yet copied into the bucket
    auto copy_pending = [&] {
      if (pending == 0) return;
      ir::ComputeOp op;
      op.op = ir::OpClass::memcpy;
      op.dtype = ir::DType::bf16;
      op.bytes = {2 * pending};  // read the gradient, write the bucket
      const TaskId copy = e_.graph().add_compute(
          r.rank, kCommStream, op,
          e_.graph().label(unit_tag(u) + ".ipg_copy", Phase::backward, layer, mb));
      e_.depends(producer, copy);
      ipg_.bytes += pending;
      pending = 0;
    };
    const int64_t capacity = ctx_.layout.bucket_size.count;
    for (auto p = unit.params.rbegin(); p != unit.params.rend(); ++p) {
      const auto& prm = (*ctx_.params)[static_cast<size_t>(*p)];
      const int64_t bytes = numel_per_rank(prm, ctx_.layout) * ctx_.precision.grad_bytes;
      if (ipg_.bytes + pending + bytes > capacity && ipg_.bytes + pending > 0) {
        copy_pending();
        ipg_flush(r, layer, mb);
      }
      pending += bytes;
    }
    copy_pending();
    free_unsharded_gradients(r, st, u, layer, mb);  // each gradient's own tensor, once copied
  }

  // The bucket reduce-scattered, then the rank's partition copied into its gradient shard (the
  // first micro-batch) or added to it, on the reduction stream; the optimizer waits for both.
  void ipg_flush(RankState& r, int layer, int mb) {
    if (ipg_.bytes == 0) return;
    const TaskId scatter = e_.collective(
        r, kCommStream, ipg_.group, ir::CollectiveType::reduce_scatter, Bytes{ipg_.bytes},
        e_.graph().label("deepspeed.ipg.reduce_scatter", Phase::backward, layer, mb),
        /*gradients=*/true);
    const int64_t shard = (ipg_.bytes + ipg_.ranks - 1) / ipg_.ranks;
    ir::ComputeOp op;
    op.op = ir::OpClass::elementwise;
    op.dtype = ir::DType::bf16;
    op.bytes = {(mb == 0 ? 2 : 3) * shard};  // copy: read, write; add: read both, write
    const TaskId partition = e_.graph().add_compute(
        r.rank, kCommStream, op,
        e_.graph().label("deepspeed.ipg.partition_grads", Phase::backward, layer, mb));
    r.syncs.push_back(scatter);
    r.syncs.push_back(partition);
    reductions_end_ = partition;  // the reduction stream's last task so far
    ipg_.bytes = 0;
  }

  // End of a backward: the partial bucket reduced; the next forward waits (before_forward).
  void ipg_epilogue(RankState& r, int layer, int mb) { ipg_flush(r, layer, mb); }

  static int first_block(const Stage& st) {
    const auto it = std::find(st.holds_block.begin(), st.holds_block.end(), true);
    return static_cast<int>(it - st.holds_block.begin());
  }

  static ir::ComputeOp fp32_copy(int64_t bytes) {
    ir::ComputeOp op;
    op.op = ir::OpClass::memcpy;
    op.dtype = ir::DType::fp32;
    op.bytes = {bytes};
    return op;
  }
  // `op` on the reduce stream after `after`; the optimizer waits for it.
  void on_reduce_stream(RankState& r, const ir::ComputeOp& op, const std::string& suffix,
                        TaskId after, int u, int layer, int mb) {
    const TaskId t =
        e_.graph().add_compute(r.rank, kCommStream, op,
                               e_.graph().label(unit_tag(u) + suffix, Phase::backward, layer, mb));
    e_.depends(after, t);
    r.syncs.push_back(t);
  }
  // The sharded parameter's dtype: the master copy's where the optimizer keeps one.
  int64_t master_bytes() const {
    return ctx_.precision.master_bytes() > 0 ? ctx_.precision.master_bytes()
                                             : ctx_.precision.weight_bytes;
  }
  bool reshards_every_pass() const {
    return strategy::reshards_every_pass(full_shard_, ctx_.layout.pp);
  }
  bool fsdp2() const { return ctx_.layout.fsdp_version == 2; }
  bool deepspeed() const { return full_shard_ && ctx_.stack == model::Stack::deepspeed; }
  // Routed experts in units of their own, over the expert data-parallel group (see the top).
  bool separate_experts() const { return ctx_.layout.ep > 1; }
  // Whether unit u is gathered and resharded: across ranks, or (FSDP2) always, its copy-in cast
  // running even at world size 1.
  bool gathers(const Stage& st, int u) const {
    return ranks_of(st.sync.units[static_cast<size_t>(u)]) > 1 || fsdp2();
  }
  static int unit_of(const Stage& st, int block) {
    return st.sync.unit_of_block[static_cast<size_t>(block)];
  }
  // The block's units: its own and, in an MoE block under EP, its routed experts'.
  std::vector<int> units_of(const Stage& st, int block) const {
    const int experts = expert_unit_of_block_[static_cast<size_t>(block)];
    if (experts < 0) return {unit_of(st, block)};
    return {unit_of(st, block), experts};
  }
  // The rate limiter's unit two before u among units of its kind (dense or routed experts):
  // -1 (none) for the first two of each kind.
  int limiter_unit(const Stage& st, int u) const {
    const Bucket& unit = st.sync.units[static_cast<size_t>(u)];
    const int earlier = u - 2;
    if (earlier < 0 || st.sync.units[static_cast<size_t>(earlier)].experts != unit.experts)
      return -1;
    return earlier;
  }
  // Gathers the block's units not yet gathered, issued after the last compute (backward).
  void gather_for_backward(RankState& r, const Stage& st, int block, int layer, int mb) {
    for (int u : units_of(st, block)) {
      if (gathers(st, u) && !gathered_[static_cast<size_t>(u)])
        gather(r, st, u, r.last_compute, -1, Phase::backward, layer, mb);
    }
  }

  // All-gathers unit u's parameters on the gather stream once `issued_after` has finished; the
  // unit's next compute waits for it. The gather also waits until unit `rate_limit_unit` was
  // resharded (the rate limiter).
  void gather(RankState& r, const Stage& st, int u, TaskId issued_after, int rate_limit_unit,
              Phase phase, int layer, int mb) {
    const Bucket& unit = st.sync.units[static_cast<size_t>(u)];
    const int64_t bytes = unit_param_bytes(unit);
    const int ranks = ranks_of(unit);
    const std::string tag = unit_tag(u);
    // At world size 1 FSDP2 casts and copies on the compute stream (see the top).
    const ir::StreamId stream = ranks > 1 ? ctx_.gather_stream : kComputeStream;
    const TaskId alloc =
        e_.memory(r, stream, bytes, MemoryCategory::parameters, tag + ".unshard", phase, layer, mb);
    e_.depends(issued_after, alloc);
    if (rate_limit_unit >= 0) e_.depends(unit_freed_[static_cast<size_t>(rate_limit_unit)], alloc);
    TaskId last = alloc;
    if (fsdp2()) {
      // Copy-in: this rank's shard (master precision) cast into the bf16 send buffer.
      const int64_t numel = bytes / ctx_.precision.weight_bytes;
      const int64_t shard = (numel + ranks - 1) / ranks;
      ir::ComputeOp op;
      op.op = ir::OpClass::memcpy;
      op.dtype = ir::DType::fp32;
      op.bytes = {shard * (master_bytes() + ctx_.precision.weight_bytes)};
      const ir::Label l = e_.graph().label(tag + ".copy_in", phase, layer, mb);
      last = stream == kComputeStream ? e_.compute(r, op, l)
                                      : e_.graph().add_compute(r.rank, stream, op, l);
      e_.depends(alloc, last);
    }
    if (ranks > 1) {
      last = e_.collective(r, ctx_.gather_stream, group_of(r, unit), ir::CollectiveType::all_gather,
                           Bytes{bytes}, e_.graph().label(tag + ".all_gather", phase, layer, mb));
    }
    unit_gather_[static_cast<size_t>(u)] = last;
    gathered_[static_cast<size_t>(u)] = true;
  }

  // The unit's next compute waits for its gather; FSDP2 first splits the received buffer into
  // the parameters on the compute stream (read and write the gathered bytes), at world size 1 too.
  void wait_for_gather(RankState& r, const Stage& st, int u, Phase phase, int layer, int mb) {
    TaskId& g = unit_gather_[static_cast<size_t>(u)];
    if (g != kNoTask) {
      e_.hold_input(g);
      if (fsdp2()) {
        ir::ComputeOp op;
        op.op = ir::OpClass::memcpy;
        op.dtype = ir::DType::bf16;
        op.bytes = {2 * unit_param_bytes(st.sync.units[static_cast<size_t>(u)])};
        e_.compute(r, op, e_.graph().label(unit_tag(u) + ".copy_out", phase, layer, mb));
      }
    }
    g = kNoTask;
  }

  void free_unit(RankState& r, const Stage& st, int u, Phase phase, int layer, int mb) {
    const int64_t bytes = unit_param_bytes(st.sync.units[static_cast<size_t>(u)]);
    unit_freed_[static_cast<size_t>(u)] =
        e_.memory(r, kComputeStream, -bytes, MemoryCategory::parameters, unit_tag(u) + ".reshard",
                  phase, layer, mb);
    gathered_[static_cast<size_t>(u)] = false;
  }

  bool full_shard_;
  int64_t sharded_grad_bytes_ = 0;   // gradient shards allocated this step (freed after the step)
  std::vector<bool> shard_held_;     // per unit: its sharded gradient exists (FSDP2)
  std::vector<bool> gathered_;       // unit parameters currently unsharded
  std::vector<TaskId> unit_freed_;   // task that resharded the unit (rate limiting)
  std::vector<TaskId> unit_gather_;  // gather the unit's next compute must wait for
  std::vector<int> expert_unit_of_block_;  // block -> its routed experts' unit, -1 if none
  struct IpgBucket {                       // DeepSpeed's bucket being filled
    int64_t bytes = 0;
    bool experts = false;
    ir::GroupId group = 0;
    int ranks = 1;
  } ipg_;
  TaskId reductions_end_ = kNoTask;  // DeepSpeed: the last reduction the next forward waits for
};

class FsdpFlavour final : public DataParallelFlavour {
 public:
  explicit FsdpFlavour(bool full_shard)
      : DataParallelFlavour(
            full_shard ? DataParallel::fsdp_full_shard : DataParallel::fsdp_shard_grad_op,
            full_shard ? "fsdp_full_shard" : "fsdp_shard_grad_op", full_shard ? 3 : 2),
        full_shard_(full_shard) {}

  bool fsdp() const override { return true; }
  // zero3 is FSDP FULL_SHARD: both shard parameters, gradients and optimizer state per unit.
  std::vector<std::string_view> aliases() const override {
    if (full_shard_) return {"zero3"};
    return {};
  }
  std::unique_ptr<DataParallelPolicy> make_policy(const PolicyContext& c,
                                                  StepEmitter& e) const override {
    return std::make_unique<FsdpPolicy>(c, e, full_shard_);
  }

  // What FSDP unshards, with its sharded state beside it: SHARD_GRAD_OP keeps every unit gathered
  // from its first forward to the syncing backward; FULL_SHARD gathers at least one unit at a
  // time (under a pipeline, as SHARD_GRAD_OP); and across FSDP1's no_sync micro-batches each
  // unit's unsharded gradient accumulates until the last one reduces it, where FSDP2 (without a
  // pipeline) reduces every micro-batch and keeps only the sharded gradients.
  ModelState unsharded_at_peak(const UnshardedState& u) const override {
    const bool keeps_all = !reshards_every_pass(full_shard_, u.pp);
    ModelState s;
    s.parameters = (keeps_all ? u.whole : u.largest_unit) * u.precision.weight_bytes;
    if (u.micro_batches > 1 && !reduces_every_micro_batch(u.fsdp_version, u.pp, u.stack))
      s.gradients = u.whole * u.precision.grad_bytes;
    if (full_shard_ && u.stack == model::Stack::deepspeed) s.gradients = u.bucket.count;
    return s;
  }

  // One unit per block: the last unit's reduction runs after the last backward op. FULL_SHARD
  // gathers before forward and before backward, every micro-batch; SHARD_GRAD_OP (and FULL_SHARD
  // under a pipeline) gathers once and keeps the parameters across micro-batches. FSDP2 without a
  // pipeline reduces, reshards and gathers again every micro-batch.
  double exposed_seconds(const StageCommunication& c) const override {
    const double unit = 1.0 / std::max(1, c.blocks);
    const bool deepspeed = full_shard_ && c.stack == model::Stack::deepspeed;
    const double reductions =
        reduces_every_micro_batch(c.fsdp_version, c.pp, c.stack) ? c.micro_batches : 1;
    // DeepSpeed's last bucket is reduced after the backward, the next forward waiting for it.
    const double last = deepspeed ? c.bucket_share : unit;
    const double reduce = reductions * c.exposed(c.reduce, c.backward, last);
    const double gather_forward = c.exposed(c.gather, c.forward, unit);
    if (reshards_every_pass(full_shard_, c.pp))
      return c.micro_batches * (gather_forward + c.exposed(c.gather, c.backward, unit)) + reduce;
    return reductions * gather_forward + reduce;
  }

  // Under a pipeline (TorchTitan's 3D) both flavours gather once per step, so FULL_SHARD stands
  // for them.
  bool planned(int gradient_ranks, int pp) const override {
    return gradient_ranks > 1 && (full_shard_ || pp == 1);
  }
  // Simulated with EP (expert units over their own group, see the top), but the planner's closed
  // form prices a stage's gathers and reductions over one group (StageCommunication): not
  // planned until it prices the expert units' apart.
  bool planned_with_expert_parallelism() const override { return false; }
  bool saves_memory() const override { return full_shard_; }

  // With EP, Megatron-FSDP (its expert data-parallel group; the user guide's DeepSeek-V3 script):
  // optim_grads_params shards like FULL_SHARD under FSDP2 (import megatron reads it back so).
  LaunchArgs megatron_args(const Layout& l) const override {
    if (l.ep > 1 && full_shard_) {
      return {{"--use-megatron-fsdp", "--data-parallel-sharding-strategy optim_grads_params",
               "--use-distributed-optimizer", "--no-gradient-accumulation-fusion"},
              {}};
    }
    return {{"--use-torch-fsdp2"},
            {std::string(name) +
             ": Megatron-LM's --use-torch-fsdp2 is FULL_SHARD (import megatron reads it "
             "back as fsdp_full_shard)"}};
  }
  std::string torchrun_setup(const Layout&, std::string_view param_dtype) const override {
    return "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, "
           "ShardingStrategy, MixedPrecision\n"
           "model = FSDP(model, device_mesh=mesh[\"dp\"], sharding_strategy=ShardingStrategy." +
           std::string(full_shard_ ? "FULL_SHARD" : "SHARD_GRAD_OP") +
           ",\n"
           "             mixed_precision=MixedPrecision(param_dtype=torch." +
           std::string(param_dtype) +
           ", reduce_dtype=torch.float32),\n             use_orig_params=True)  # wrap each "
           "transformer block as its own unit\n";
  }
  std::string units_description(const Layout& l, size_t units) const override {
    return " (" + std::string(l.fsdp_version == 2 ? "FSDP2, " : "") + std::to_string(units) +
           " units)";
  }

 protected:
  ModelState shard_state(const ModelState& w, int ranks) const override {
    return {shard(w.parameters, ranks), shard(w.gradients, ranks), shard(w.optimizer_state, ranks)};
  }

 private:
  bool full_shard_;
};

}  // namespace

const DataParallelFlavour& fsdp_flavour(bool full_shard) {
  static const FsdpFlavour full(true), grad_op(false);
  return full_shard ? full : grad_op;
}

}  // namespace cs::strategy
