// Emits the task graph of one optimizer step of a layout TP x PP x DP: every micro-batch's
// forward and backward on each rank's compute stream in the order of the pipeline schedule,
// activations and gradients between pipeline stages as send/recv pairs, and the optimizer step
// over the rank's (possibly sharded) parameters.
//
// The builder (training_step.cpp) walks the schedule; the parts are its collaborators:
//   stage_plan.h          which blocks and parameters each pipeline stage holds
//   tensor_parallel.h     each op with its tensor-parallel collectives
//   data_parallel/        one policy per data-parallel flavour (DDP, ZeRO-1/2, FSDP), called at
//                         fixed points: parameter use, gradient ready, around the optimizer
//   step_emitter.h        the task primitives and the matching of collectives across ranks
//   model_state.h         ZeRO's accounting of weights, gradients and optimizer state
// Validation: tests/ddp_test.cpp (seed 002's 109 all-reduces), strategy_test.cpp (Megatron's
// collective counts and memory), pipeline_test.cpp (bubbles against (p-1)/(m+p-1)).
#pragma once

#include <vector>

#include "models/model_work.h"
#include "strategies/ddp_buckets.h"
#include "strategies/layout.h"
#include "strategies/model_state.h"
#include "strategies/step_emitter.h"
#include "taskgraph/task_graph.h"

namespace cs::strategy {

struct StepOptions {
  // Emit one representative rank per pipeline stage (tp index 0, dp index 0) instead of every
  // rank. Data-parallel replicas and tensor-parallel peers do identical work, so the step time
  // and every per-rank figure are the same; collectives are still costed over their whole group.
  bool representative_ranks = false;
  // With representative_ranks: one rank per stage for the context-parallel ring too, where its
  // ranks do identical work and every ring hop costs the same (the driver checks that on the
  // topology). A rank's receive from the previous rank is then paired with its own send to the
  // next: by symmetry the previous rank sends that chunk at the same moment.
  bool fold_context_parallel = false;
  // Tasks' names (traces, critical-path and deadlock messages). The planner's evaluations read
  // none of them and skip interning them (a tenth of building a graph).
  bool task_names = true;
};

struct StepGraph {
  ir::TaskGraph graph;
  int64_t micro_batches = 0;   // accumulation steps per replica = pipeline micro-batches
  double tokens_per_step = 0;  // global_batch * seq_len
  double samples_per_step = 0;
  Flops model_flops_per_step;      // forward + backward, no recomputation, whole job
  int64_t parameters = 0;          // whole model
  std::vector<Bucket> buckets;     // stage 0's gradient sync units: DDP/ZeRO buckets or FSDP units
  std::vector<int> stage_of_rank;  // pipeline stage of each graph rank
};

StepGraph build_training_step(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t,
                              const StepOptions& options = {});

}  // namespace cs::strategy
