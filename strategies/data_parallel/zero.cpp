// ZeRO-1 and ZeRO-2 (DeepSpeed; Megatron's distributed optimizer is ZeRO-1): DDP's buckets, but
// each bucket is reduce-scattered so that every rank holds the summed gradients of its 1/dp shard,
// the optimizer steps that shard only, and the updated parameters are all-gathered bucket by
// bucket after the step.
//   zero1  reduce-scatter in the last micro-batch; whole gradients accumulate in between
//   zero2  sharded gradients: every micro-batch reduce-scatters, and only the bucket being
//          reduced is held unsharded
#include <algorithm>

#include "strategies/data_parallel/policy.h"

namespace cs::strategy {
namespace {

class ZeroPolicy final : public DataParallelPolicy {
 public:
  using DataParallelPolicy::DataParallelPolicy;

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
  bool stage2() const { return ctx_.layout.data_parallel == DataParallel::zero2; }
  std::vector<std::vector<TaskId>>
      gather_of_block_;  // overlap_param_gather: the gathers each block's forward waits for
};

}  // namespace

std::unique_ptr<DataParallelPolicy> make_zero_policy(const PolicyContext& c, StepEmitter& e) {
  return std::make_unique<ZeroPolicy>(c, e);
}

}  // namespace cs::strategy
