// Model ops as emitted, with what tensor and context parallelism add around them.
//   TP  the TP-group collectives an op needs before and after it (column/row-parallel linears,
//       vocab-parallel embedding and loss; sequence parallelism's all-gather / reduce-scatter),
//       run synchronously on the compute stream as Megatron-LM does without --tp-comm-overlap;
//       with it (RankState::tp_chunks), a GEMM's SP all-gather or reduce-scatter is cut into tp
//       chunks pipelined with the GEMM's token chunks on the TP stream (Transformer Engine's
//       ring-exchange overlap), leaving one chunk's communication exposed when the GEMM is longer
//   CP  ring attention's steps: step j waits for the KV chunk of the ring's previous rank, which
//       was forwarded (send to the next rank, receive from the previous, on the cp streams) as
//       soon as step j - 1's chunk had arrived, so the transfer overlaps step j - 1's compute
//       (Transformer Engine); PyTorch's ring all-gathers K and V over the CP group at step 0
//       and passes the fp32 KV gradients on after each backward merge, waited for at first use
//       (eager) or where issued (traced by torch.compile); see models/model_work.h, CpRing
//   EP  MoE token dispatch and combine as all-to-alls over the expert-parallel group, inline on
//       the compute stream (Megatron-Core's alltoall dispatcher without overlap)
// The sizes come from the model's work (models/model_work.cpp); this file decides where the
// calls go.
#pragma once

#include <string>

#include "models/model_work.h"
#include "strategies/step_emitter.h"

namespace cs::strategy {

// PyTorch's async TP pulls every rank's partial output for this rank's rows, then sums them on
// the compute stream: all tp partials read, one written (model_work.h, TpOverlap). For an op whose
// pipelined reduce-scatter does so (Op::tp_sums_partials).
ir::ComputeOp tp_partials_sum(const model::Op& op, int tp);

// Emits one model op and its TP collectives on the compute stream; returns the compute task.
// `name`: the op's task name (StepEmitter::names()), which its collectives' names extend.
TaskId emit_model_op(StepEmitter& e, RankState& r, const model::Op& op, ir::NameId name,
                     ir::Phase phase, int layer, int mb, bool recompute = false);

}  // namespace cs::strategy
