// ZeRO-1 and ZeRO-2 (DeepSpeed; Megatron's distributed optimizer is ZeRO-1): DDP's buckets, but
// each bucket is reduce-scattered so that every rank holds the summed gradients of its 1/dp shard,
// the optimizer steps that shard only, and the updated parameters are all-gathered bucket by
// bucket after the step.
//   zero1  reduce-scatter in the last micro-batch; whole gradients accumulate in between
//   zero2  sharded gradients: every micro-batch reduce-scatters, and only the bucket being
//          reduced is held unsharded
#include <algorithm>

#include "strategies/data_parallel/flavour.h"
#include "strategies/data_parallel/policy.h"

namespace cs::strategy {
namespace {

class ZeroPolicy final : public DataParallelPolicy {
 public:
  ZeroPolicy(const PolicyContext& c, StepEmitter& e, bool stage2)
      : DataParallelPolicy(c, e), stage2_(stage2) {}

  SyncUnits make_units(const Stage& st) const override { return bucket_units(st); }

  bool syncs(int mb) const override {
    return std::max(dp(), expert_dp()) > 1 && (stage2() || mb == ctx_.micro_batches - 1);
  }

  int64_t optimizer_params(const Stage& st) const override { return sharded_params(st); }

  // --overlap-param-gather: the updated parameters' all-gathers, steady state, as the step's
  // opening: issued bucket by bucket in the order the forward uses them, each block's first
  // forward waits only for the buckets holding its parameters.
  void begin_rank(RankState& r, const Stage& st) override {
    DataParallelPolicy::begin_rank(r, st);
    gather_of_block_.assign(static_cast<size_t>(ctx_.blocks), {});
    if (!ctx_.overlap_param_gather) return;
    for (size_t u = st.sync.units.size(); u-- > 0;) {  // buckets hold parameters in reverse order
      const Bucket& unit = st.sync.units[u];
      if (ranks_of(unit) == 1) continue;
      const TaskId ag =
          e_.collective(r, ctx_.gather_stream, group_of(r, unit), ir::CollectiveType::all_gather,
                        Bytes{unit_param_bytes(unit)},
                        e_.graph().label("dp.bucket" + std::to_string(u) + ".param_all_gather",
                                         ir::Phase::forward));
      for (int p : unit.params)
        gather_of_block_[static_cast<size_t>((*ctx_.params)[static_cast<size_t>(p)].block)]
            .push_back(ag);
    }
  }

  void before_forward(RankState&, const Stage&, int block, int mb) override {
    if (mb != 0) return;
    for (TaskId ag : gather_of_block_[static_cast<size_t>(block)]) e_.hold_input(ag);
  }

  void after_optimizer(RankState& r, const Stage& st, TaskId optimizer) override {
    if (ctx_.overlap_param_gather) return;  // the next step's opening gathers (begin_rank)
    for (size_t u = 0; u < st.sync.units.size(); ++u) {
      if (ranks_of(st.sync.units[u]) == 1) continue;
      const TaskId ag =
          e_.collective(r, ctx_.gather_stream, group_of(r, st.sync.units[u]),
                        ir::CollectiveType::all_gather, Bytes{unit_param_bytes(st.sync.units[u])},
                        e_.graph().label("dp.bucket" + std::to_string(u) + ".param_all_gather",
                                         ir::Phase::optimizer));
      e_.depends(optimizer, ag);
    }
  }

 protected:
  bool transient_gradients() const override { return stage2(); }

  void unit_complete(RankState& r, const Stage& st, int u, TaskId producer, bool sync, int layer,
                     int mb) override {
    if (sync) reduce_unit(r, st, u, ir::CollectiveType::reduce_scatter, producer, layer, mb);
  }

 private:
  bool stage2() const { return stage2_; }
  bool stage2_;
  std::vector<std::vector<TaskId>>
      gather_of_block_;  // overlap_param_gather: the gathers each block's forward waits for
};

class ZeroFlavour final : public DataParallelFlavour {
 public:
  explicit ZeroFlavour(int stage)
      : DataParallelFlavour(stage == 1 ? DataParallel::zero1 : DataParallel::zero2,
                            stage == 1 ? "zero1" : "zero2", stage) {}

  bool bucketed() const override { return true; }
  std::unique_ptr<DataParallelPolicy> make_policy(const PolicyContext& c,
                                                  StepEmitter& e) const override {
    return std::make_unique<ZeroPolicy>(c, e, zero_stage == 2);
  }

  // Reduce-scattered under the backward (ZeRO-2 every micro-batch), then the updated parameters
  // gathered after the step; with overlap_param_gather the next forward waits only for the first
  // bucket.
  double exposed_seconds(const StageCommunication& c) const override {
    double t = c.exposed(c.reduce, c.backward, c.bucket_share);
    if (zero_stage == 2) t = c.micro_batches * t;
    t += c.overlap_param_gather ? c.gather * c.bucket_share : c.gather;
    return t;
  }

  std::string pipeline_refusal(const Layout& l) const override {
    if (l.pp == 1 || zero_stage == 1) return "";
    return "zero2 with pp > 1 is not supported: it reduce-scatters every micro-batch (DeepSpeed "
           "forbids ZeRO-2 with "
           "pipeline parallelism); use zero1 (Megatron's distributed optimizer) or ddp";
  }
  bool admits_overlap_param_gather() const override { return true; }
  bool planned(int gradient_ranks, int pp) const override {
    return gradient_ranks > 1 && pipeline_refusal(Layout{.pp = pp}).empty();
  }
  bool saves_memory() const override { return true; }

  LaunchArgs megatron_args(const Layout& l) const override {
    LaunchArgs a{{"--use-distributed-optimizer", megatron_bucket_arg(l)}, {}};
    if (zero_stage == 2) {
      a.notes.push_back(
          "zero2: Megatron-LM's distributed optimizer shards the optimizer state (ZeRO-1); "
          "gradient sharding has no flag");
    }
    return a;
  }
  std::string torchrun_setup(const Layout& l, std::string_view /*param_dtype*/) const override {
    return "# " + std::string(name) + ": optimizer state" +
           (zero_stage == 2 ? " and gradients" : "") +
           " sharded over dp: DeepSpeed {\"zero_optimization\": {\"stage\": " +
           std::to_string(zero_stage) +
           ", \"reduce_bucket_size\": " + std::to_string(l.bucket_size.count / 2) +
           "}} or torch.distributed.optim.ZeroRedundancyOptimizer (stage 1)\n";
  }
  std::string units_description(const Layout& l, size_t units) const override {
    return buckets_description(l, units);
  }

 protected:
  ModelState shard_state(const ModelState& whole, int ranks) const override {
    ModelState s = whole;
    s.optimizer_state = shard(s.optimizer_state, ranks);
    if (zero_stage == 2) s.gradients = shard(s.gradients, ranks);
    return s;
  }
};

}  // namespace

const DataParallelFlavour& zero_flavour(int stage) {
  static const ZeroFlavour one(1), two(2);
  return stage == 1 ? one : two;
}

}  // namespace cs::strategy
