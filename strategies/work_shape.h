// The shape of one rank's per-op work (model::WorkShape) for a layout and training set-up: the one
// place that says which of a layout's and a run's settings reach the model's work. The step
// builder (training_step.cpp), the planner's closed-form step estimate and its memory bound all
// build their WorkShape here, so what the planner prices and bounds is what the simulator runs.
#pragma once

#include <vector>

#include "models/model_spec.h"
#include "models/model_work.h"
#include "models/software_stack.h"
#include "strategies/layout.h"

namespace cs::strategy {

// Ranks of the context-parallel all-to-all level (model::WorkShape::cp_a2a): 1 under the ring
// (p2p), cp under Ulysses (a2a), the layout's cp_a2a under a2a+p2p.
int cp_a2a_size(const Layout& l);

// The context-parallel communication a stack runs (the planner's CP kinds), with cp_comm's
// sources: Megatron-Core (and the ideal bound) every --cp-comm-type we model, through Transformer
// Engine; DeepSpeed its ring and DeepSpeed-Ulysses (deepspeed.sequence's DistributedAttention,
// a2a); PyTorch eager and TorchTitan their context_parallel, a ring only (p2p, run as CpRing's
// torch ring).
std::vector<model::CpComm> cp_comms_run_by(model::Stack stack);

model::WorkShape make_work_shape(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t);

}  // namespace cs::strategy
