#include "strategies/work_shape.h"

#include "models/software_stack.h"

namespace cs::strategy {

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
  shape.ep = l.ep;
  shape.etp = l.etp;
  shape.moe_imbalance = t.moe.imbalance;
  shape.moe_capacity_factor = t.moe.capacity_factor;
  shape.moe_pad_to_capacity = t.moe.pad_to_capacity;
  shape.moe_dispatcher = t.moe.dispatcher;
  shape.sequence_parallel = l.sequence_parallel;
  shape.precision = t.precision;
  shape.attention = t.attention;
  shape.attention_kernel = t.attention_kernel;
  shape.recompute = t.recompute;
  shape.lora = t.lora;
  model::set_stack_flags(shape, t.stack, t.compile_scope);
  return shape;
}

}  // namespace cs::strategy
