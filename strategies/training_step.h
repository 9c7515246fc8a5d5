// Emits the task graph of one optimizer step of a layout: every micro-batch's forward and
// backward on each rank's compute stream, gradient synchronisation on its communication stream,
// memory tasks for every category, and the optimizer step.
//
// Data parallelism (PyTorch DDP semantics): gradients of the last accumulation micro-batch only
// are synchronised (no_sync on the others). Bucketed DDP copies a bucket's gradients into its
// flat buffer as soon as the last of them is computed (on the compute stream) and all-reduces the
// bucket on the communication stream, overlapping the rest of backward; the optimizer waits for
// every bucket. Flat DDP all-reduces each parameter's gradient in place, without buffers.
#pragma once

#include <vector>

#include "models/model_work.h"
#include "strategies/ddp_buckets.h"
#include "strategies/layout.h"
#include "taskgraph/task_graph.h"

namespace cs::strategy {

struct StepGraph {
  ir::TaskGraph graph;
  int64_t micro_batches = 0;         // accumulation steps per replica
  double tokens_per_step = 0;        // global_batch * seq_len
  double samples_per_step = 0;
  Flops model_flops_per_step;        // forward + backward, no recomputation, whole job
  int64_t parameters = 0;
  std::vector<Bucket> buckets;       // DDP buckets (empty without data parallelism)
};

// Streams every rank has, in this order.
inline constexpr ir::StreamId kComputeStream = 0;
inline constexpr ir::StreamId kCommStream = 1;

StepGraph build_training_step(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t);

}  // namespace cs::strategy
