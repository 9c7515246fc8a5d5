// PyTorch DDP: gradients all-reduced as they become ready, overlapped with the rest of backward.
//   bucketed (ddp)  parameters grouped into buckets in reverse registration order (ddp_buckets.h);
//                   a bucket's gradients are copied into its flat buffer, then all-reduced
//   flat (ddp_flat) one all-reduce per parameter tensor, in place
// Only the last accumulation micro-batch synchronises (no_sync before it).
#include "strategies/data_parallel/flavour.h"
#include "strategies/data_parallel/policy.h"

namespace cs::strategy {
namespace {

class DdpPolicy final : public DataParallelPolicy {
 public:
  DdpPolicy(const PolicyContext& c, StepEmitter& e, bool bucketed)
      : DataParallelPolicy(c, e), bucketed_(bucketed) {}

  SyncUnits make_units(const Stage& st) const override {
    if (bucketed()) return bucket_units(st);
    SyncUnits s;
    const auto& params = *ctx_.params;
    for (auto it = st.params.rbegin(); it != st.params.rend(); ++it) {
      if (!params[static_cast<size_t>(*it)].trainable()) continue;
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
      e_.memory(r, kComputeStream, st.trained_numel() * ctx_.precision.grad_bytes,
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
  bool bucketed() const { return bucketed_; }
  bool bucketed_;
};

class DdpFlavour final : public DataParallelFlavour {
 public:
  explicit DdpFlavour(bool bucketed)
      : DataParallelFlavour(bucketed ? DataParallel::ddp : DataParallel::ddp_flat,
                            bucketed ? "ddp" : "ddp_flat", 0),
        bucketed_(bucketed) {}

  bool bucketed() const override { return bucketed_; }
  std::unique_ptr<DataParallelPolicy> make_policy(const PolicyContext& c,
                                                  StepEmitter& e) const override {
    return std::make_unique<DdpPolicy>(c, e, bucketed_);
  }

  // Gradients all-reduced under the backward, the last bucket's after it; only the syncing
  // micro-batch communicates.
  double exposed_seconds(const StageCommunication& c) const override {
    return c.exposed(c.reduce, c.backward, c.bucket_share);
  }

  // The planner tries bucketed DDP only.
  bool planned(int /*gradient_ranks*/, int /*pp*/) const override { return bucketed_; }

  LaunchArgs megatron_args(const Layout& l) const override {
    return {{megatron_bucket_arg(l)}, {}};
  }
  std::string torchrun_setup(const Layout& l, std::string_view /*param_dtype*/) const override {
    return "from torch.nn.parallel import DistributedDataParallel as DDP\n"
           "model = DDP(model, process_group=mesh[\"dp\"].get_group(), bucket_cap_mb=" +
           std::to_string(l.bucket_size.count / (1 << 20)) + ")\n";
  }
  std::string units_description(const Layout& l, size_t units) const override {
    if (!bucketed_) return " (" + std::to_string(units) + " per-parameter all-reduces)";
    return buckets_description(l, units);
  }

 protected:
  ModelState shard_state(const ModelState& whole, int /*ranks*/) const override { return whole; }

 private:
  bool bucketed_;
};

}  // namespace

const DataParallelFlavour& ddp_flavour(bool bucketed) {
  static const DdpFlavour ddp(true), flat(false);
  return bucketed ? ddp : flat;
}

}  // namespace cs::strategy
