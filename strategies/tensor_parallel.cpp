#include "strategies/tensor_parallel.h"

namespace cs::strategy {

TaskId emit_model_op(StepEmitter& e, RankState& r, const model::Op& op, const std::string& name, ir::Phase phase, int layer,
                     int mb, bool recompute) {
  ir::TaskGraph& g = e.graph();
  auto tp = [&](const model::OpCollective& c) {
    const bool ep = c.group == model::OpGroup::expert_parallel;
    for (int i = 0; i < c.count; ++i) {
      e.collective(r, kComputeStream, ep ? r.ep_group : r.tp_group, c.type, c.bytes,
                   g.label(name + (ep ? ".ep_" : ".tp_") + std::string(ir::to_string(c.type)), phase, layer, mb, recompute));
    }
  };
  tp(op.tp_before);
  // Ring attention: this step computes on the chunk received during the previous step (if any)
  // while passing that chunk on; the first step passes the rank's own K and V, ready once the
  // compute stream got here.
  const TaskId chunk = op.ring.waits ? r.kv_arrived : r.last_compute;
  if (op.ring.waits) e.hold_input(r.kv_arrived);
  r.kv_arrived = kNoTask;
  if (op.ring.passes.count > 0) {
    e.send(r, r.cp_send, r.cp_next, op.ring.passes, g.label(name + ".cp_send", phase, layer, mb, recompute), chunk);
    r.kv_arrived = e.receive(r, r.cp_recv, r.cp_prev, op.ring.passes, g.label(name + ".cp_recv", phase, layer, mb, recompute), false);
  }
  const TaskId t = e.compute(r, op.op, g.label(name, phase, layer, mb, recompute));
  tp(op.tp_after);
  return t;
}

}  // namespace cs::strategy
