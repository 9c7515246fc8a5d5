#include "strategies/tensor_parallel.h"

namespace cs::strategy {

TaskId emit_model_op(StepEmitter& e, RankState& r, const model::Op& op, const std::string& name, ir::Phase phase, int layer,
                     int mb, bool recompute) {
  ir::TaskGraph& g = e.graph();
  auto tp = [&](const model::TpCollective& c) {
    for (int i = 0; i < c.count; ++i) {
      e.collective(r, kComputeStream, r.tp_group, c.type, c.bytes,
                   g.label(name + ".tp_" + std::string(ir::to_string(c.type)), phase, layer, mb, recompute));
    }
  };
  tp(op.tp_before);
  const TaskId t = e.compute(r, op.op, g.label(name, phase, layer, mb, recompute));
  tp(op.tp_after);
  return t;
}

}  // namespace cs::strategy
