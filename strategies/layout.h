// A parallel layout TP x PP x DP with a data-parallel flavour, and the training set-up it runs.
// Ranks are placed the way Megatron-LM does by default: tensor-parallel ranks innermost
// (consecutive GPUs, so inside a node), then data-parallel, then pipeline stages:
//   rank = (pp_index * dp + dp_index) * tp + tp_index
#pragma once

#include <string>

#include "common/units.h"
#include "models/model_spec.h"
#include "models/model_work.h"

namespace cs::strategy {

enum class DataParallel : uint8_t {
  ddp,        // PyTorch DDP, bucketed gradient all-reduce overlapped with backward
  ddp_flat,   // one asynchronous all-reduce per parameter as its gradient is ready
};
std::string_view to_string(DataParallel d);

struct Layout {
  int tp = 1, pp = 1, dp = 1;
  DataParallel data_parallel = DataParallel::ddp;
  // PyTorch DDP's bucket_cap_mb default is 25 (MiB); its first bucket is capped at 1 MiB
  // (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES).
  Bytes bucket_size = 25_MiB;
  Bytes first_bucket_size = 1_MiB;
  int gpus() const { return tp * pp * dp; }
};

struct TrainingSpec {
  int64_t global_batch = 1;  // sequences per optimizer step
  int64_t micro_batch = 1;   // sequences per micro-batch per data-parallel replica
  int64_t seq_len = 1;
  model::Precision precision = model::Precision::mixed_bf16;
  model::AttentionImpl attention = model::AttentionImpl::fused;
  model::Recompute recompute = model::Recompute::none;
  // Gradient accumulation steps = global_batch / (micro_batch * dp).
  int64_t accumulation(const Layout& l) const { return global_batch / (micro_batch * l.dp); }
};

// Throws UserError when the layout does not divide the GPUs or the batch, or is not supported.
void validate(const Layout& l, const TrainingSpec& t, const model::ModelSpec& m, int gpus);

}  // namespace cs::strategy
