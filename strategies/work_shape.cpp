#include "strategies/work_shape.h"

#include "models/software_stack.h"

namespace cs::strategy {

int cp_a2a_size(const Layout& l) {
  switch (l.cp_comm) {
    case model::CpComm::p2p:
      return 1;
    case model::CpComm::a2a:
      return l.cp;
    case model::CpComm::a2a_p2p:
      return l.cp_a2a;
  }
  return 1;
}

std::vector<model::CpComm> cp_comms_run_by(model::Stack stack) {
  using model::CpComm;
  switch (stack) {
    case model::Stack::ideal:
    case model::Stack::megatron_core:
      return {CpComm::p2p, CpComm::a2a, CpComm::a2a_p2p};
    case model::Stack::deepspeed:
      return {CpComm::p2p, CpComm::a2a};
    case model::Stack::pytorch_eager:
    case model::Stack::torch_compile:
      break;
  }
  return {CpComm::p2p};
}

model::WorkShape make_work_shape(const model::ModelSpec& m, const Layout& l,
                                 const TrainingSpec& t) {
  model::WorkShape shape;
  shape.micro_batch = t.micro_batch;
  shape.seq = m.family == model::Family::mlp ? 1 : t.seq_len;
  shape.tp = l.tp;
  shape.cp = l.cp;
  // PyTorch's context_parallel under PyTorch stacks (TorchTitan), Transformer Engine's ring
  // under the others (model_work.h, CpRing).
  if (t.stack == model::Stack::pytorch_eager) shape.cp_ring = model::CpRing::torch;
  if (t.stack == model::Stack::torch_compile) shape.cp_ring = model::CpRing::torch_traced;
  shape.cp_a2a = cp_a2a_size(l);
  shape.ep = l.ep;
  shape.etp = l.etp;
  shape.moe_imbalance = t.moe.imbalance;
  shape.moe_capacity_factor = t.moe.capacity_factor;
  shape.moe_pad_to_capacity = t.moe.pad_to_capacity;
  shape.moe_dispatcher = t.moe.dispatcher;
  shape.sequence_parallel = l.sequence_parallel;
  // PyTorch stacks overlap TP the way torch.compile's async TP does, the others as Transformer
  // Engine does (model_work.h, TpOverlap).
  if (t.tp_comm_overlap) {
    const bool pytorch =
        t.stack == model::Stack::pytorch_eager || t.stack == model::Stack::torch_compile;
    shape.tp_overlap = pytorch ? model::TpOverlap::micro_pipeline : model::TpOverlap::userbuffers;
  }
  shape.precision = t.precision;
  shape.attention = t.attention;
  shape.attention_kernel = t.attention_kernel;
  shape.recompute = t.recompute;
  shape.scaled_mm = t.scaled_mm;
  shape.lora = t.lora;
  model::set_stack_flags(shape, t.stack, t.compile_scope);
  return shape;
}

}  // namespace cs::strategy
