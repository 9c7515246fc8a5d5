// PyTorch DDP: gradients all-reduced as they become ready, overlapped with the rest of backward.
//   bucketed (ddp)  parameters grouped into buckets in reverse registration order (ddp_buckets.h);
//                   a bucket's gradients are copied into its flat buffer, then all-reduced
//   flat (ddp_flat) one all-reduce per parameter tensor, in place
// Only the last accumulation micro-batch synchronises (no_sync before it).
#include "strategies/data_parallel/policy.h"

namespace cs::strategy {
namespace {

class DdpPolicy final : public DataParallelPolicy {
 public:
  using DataParallelPolicy::DataParallelPolicy;

  SyncUnits make_units(const Stage& st) const override {
    if (bucketed()) return bucket_units(st);
    SyncUnits s;
    const auto& params = *ctx_.params;
    for (auto it = st.params.rbegin(); it != st.params.rend(); ++it) {
      s.units.push_back({{*it},
                         Bytes{numel_per_rank(params[static_cast<size_t>(*it)], ctx_.layout) *
                               ctx_.precision.grad_bytes}});
    }
    index_units(s);
    return s;
  }

  void begin_rank(RankState& r, const Stage& st) override {
    DataParallelPolicy::begin_rank(r, st);
    // The bucket views: one flat buffer as large as the stage's gradients.
    if (dp() > 1 && bucketed()) {
      e_.memory(r, kComputeStream, st.numel * ctx_.precision.grad_bytes,
                ir::MemoryCategory::comm_buffers, "alloc.ddp_buckets", ir::Phase::other);
    }
  }

 protected:
  void unit_complete(RankState& r, const Stage& st, int u, TaskId producer, bool sync, int layer,
                     int mb) override {
    if (!sync) return;
    TaskId after = producer;
    // Bucketed DDP copies the bucket's gradients into its flat buffer (read + write).
    if (bucketed()) {
      after = gradient_pass(r, ir::OpClass::memcpy,
                            2 * st.sync.units[static_cast<size_t>(u)].bytes.count,
                            unit_tag(u) + ".copy", layer, mb);
    }
    reduce_unit(r, st, u, ir::CollectiveType::all_reduce, after, layer, mb);
  }

 private:
  bool bucketed() const { return ctx_.layout.data_parallel == DataParallel::ddp; }
};

}  // namespace

std::unique_ptr<DataParallelPolicy> make_ddp_policy(const PolicyContext& c, StepEmitter& e) {
  return std::make_unique<DdpPolicy>(c, e);
}

}  // namespace cs::strategy
