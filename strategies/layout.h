// A parallel layout TP x PP x DP with a data-parallel flavour, and the training set-up it runs.
//
// Placement: by default ranks are placed the way Megatron-LM does, tensor-parallel ranks
// innermost (consecutive GPUs, so inside a node), then data-parallel, then pipeline stages:
//   rank = (pp_index * dp + dp_index) * tp + tp_index          (order "tp-dp-pp")
// `order` lists the dimensions innermost first and may be any permutation.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "common/units.h"
#include "models/model_spec.h"
#include "models/model_work.h"

namespace cs::strategy {

enum class DataParallel : uint8_t {
  ddp,                 // PyTorch DDP, bucketed gradient all-reduce overlapped with backward
  ddp_flat,            // one asynchronous all-reduce per parameter as its gradient is ready
  zero1,               // sharded optimizer state: bucketed reduce-scatter, sharded step, all-gather
  zero2,               // ZeRO-1 plus sharded gradients (reduce-scatter every micro-batch)
  fsdp_shard_grad_op,  // FSDP SHARD_GRAD_OP: per-block units, params gathered once per step
  fsdp_full_shard,     // FSDP FULL_SHARD = ZeRO-3: gather before forward and before backward
};
std::string_view to_string(DataParallel d);
bool is_fsdp(DataParallel d);
// Stage of the ZeRO paper the flavour shards to (0: nothing sharded, 3: parameters too).
int zero_stage(DataParallel d);

enum class PipelineSchedule : uint8_t { gpipe, one_f_one_b, interleaved };
std::string_view to_string(PipelineSchedule s);

enum class Dim : uint8_t { tp, dp, pp };

struct Layout {
  int tp = 1, pp = 1, dp = 1;
  DataParallel data_parallel = DataParallel::ddp;
  // PyTorch DDP's bucket_cap_mb default is 25 (MiB); its first bucket is capped at 1 MiB
  // (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES).
  Bytes bucket_size = 25_MiB;
  Bytes first_bucket_size = 1_MiB;
  bool sequence_parallel = false;   // Megatron SP (needs tp > 1)
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;           // model chunks per stage (interleaved schedule)
  std::array<Dim, 3> order{Dim::tp, Dim::dp, Dim::pp};  // innermost first
  int gpus() const { return tp * pp * dp; }
};

// Where a rank sits in the layout.
struct Coord {
  int tp = 0, pp = 0, dp = 0;
};
Coord coord_of(const Layout& l, int rank);
int rank_of(const Layout& l, Coord c);
// The ranks that differ from `at` only along `d` (its tensor-, data- or pipeline-parallel group),
// in index order.
std::vector<uint32_t> ranks_along(const Layout& l, Coord at, Dim d);
std::string order_string(const Layout& l);  // e.g. "tp-dp-pp"

struct TrainingSpec {
  int64_t global_batch = 1;  // sequences per optimizer step
  int64_t micro_batch = 1;   // sequences per micro-batch per data-parallel replica
  int64_t seq_len = 1;
  model::Precision precision = model::Precision::mixed_bf16;
  model::AttentionImpl attention = model::AttentionImpl::fused;
  model::Recompute recompute = model::Recompute::none;
  // Gradient accumulation steps (pipeline micro-batches) = global_batch / (micro_batch * dp).
  int64_t accumulation(const Layout& l) const { return global_batch / (micro_batch * l.dp); }
};

// Throws UserError when the layout does not divide the GPUs, the batch or the model, naming
// what would be valid.
void validate(const Layout& l, const TrainingSpec& t, const model::ModelSpec& m, int gpus);

}  // namespace cs::strategy
