// Emits the task graph of one optimizer step of a layout TP x PP x DP: every micro-batch's
// forward and backward on each rank's compute stream in the order of the pipeline schedule,
// tensor-parallel collectives inline on the compute stream (Megatron runs them synchronously),
// activations and gradients between pipeline stages as send/recv pairs, gradient synchronisation
// and parameter gathers on communication streams, memory tasks for every category, and the
// optimizer step over the rank's (possibly sharded) parameters.
//
// Data parallelism (PyTorch / DeepSpeed semantics):
//   ddp       bucketed all-reduce overlapped with backward; flat buffers per bucket (memory);
//             gradients of the last accumulation micro-batch only are synchronised (no_sync)
//   ddp_flat  one all-reduce per parameter tensor, in place, as its gradient is ready
//   zero1     bucketed reduce-scatter in the last micro-batch, optimizer on 1/dp of the state,
//             all-gather of the updated parameters bucket by bucket
//   zero2     as zero1 with sharded gradients: reduce-scatter in every micro-batch, and only the
//             bucket being reduced is held unsharded
//   fsdp_*    one unit per transformer block plus the root (embedding, final norm, head): the
//             unit's parameters are all-gathered before its forward (FULL_SHARD: again before
//             its backward, prefetched when the previous unit's backward starts; resharded after
//             forward except for the root), its gradients reduce-scattered after its backward.
//             SHARD_GRAD_OP keeps gathered parameters until the end of the step's backward.
#pragma once

#include <vector>

#include "models/model_work.h"
#include "strategies/ddp_buckets.h"
#include "strategies/layout.h"
#include "taskgraph/task_graph.h"

namespace cs::strategy {

struct StepOptions {
  // Emit one representative rank per pipeline stage (tp index 0, dp index 0) instead of every
  // rank. Data-parallel replicas and tensor-parallel peers do identical work, so the step time
  // and every per-rank figure are the same; collectives are still costed over their whole group.
  bool representative_ranks = false;
};

struct StepGraph {
  ir::TaskGraph graph;
  int64_t micro_batches = 0;         // accumulation steps per replica = pipeline micro-batches
  double tokens_per_step = 0;        // global_batch * seq_len
  double samples_per_step = 0;
  Flops model_flops_per_step;        // forward + backward, no recomputation, whole job
  int64_t parameters = 0;            // whole model
  std::vector<Bucket> buckets;       // stage 0's gradient sync units: DDP/ZeRO buckets or FSDP units
  std::vector<int> stage_of_rank;    // pipeline stage of each graph rank
};

// Streams every rank has: compute and the data-parallel gradient stream always; the others only
// when the layout needs them (their ids follow in this order).
inline constexpr ir::StreamId kComputeStream = 0;
inline constexpr ir::StreamId kCommStream = 1;

StepGraph build_training_step(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t,
                              const StepOptions& options = {});

// The static model state of one rank holding `params` parameters (per TP rank and stage) under a
// data-parallel flavour, the ZeRO paper's accounting: (weight + gradient + optimizer) bytes per
// parameter, the sharded parts divided by dp. DDP's bucket buffers are not model state.
struct ModelState {
  int64_t parameters = 0, gradients = 0, optimizer_state = 0;
  int64_t total() const { return parameters + gradients + optimizer_state; }
};
ModelState model_state_per_rank(int64_t params, const model::PrecisionInfo& p, DataParallel d, int dp);

}  // namespace cs::strategy
