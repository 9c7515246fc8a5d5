#include "strategies/tensor_parallel.h"

#include <string_view>

namespace cs::strategy {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One chunk of a GEMM's token dimension: rows (forward, dgrad: m) or the reduction (wgrad: k).
ir::ComputeOp token_chunk(ir::ComputeOp op, bool wgrad, int chunks) {
  (wgrad ? op.k : op.m) /= chunks;
  op.flops = {op.flops.value / chunks};
  op.bytes = {op.bytes.count / chunks};
  return op;
}

// Transformer Engine's userbuffer overlap, as structure: the all-gather feeding a GEMM, or the
// reduce-scatter of its output, in `chunks` pieces on the TP stream; GEMM chunk i waits for
// gather chunk i (so gather i + 1 runs under GEMM i), and reduce-scatter chunk i follows GEMM
// chunk i (so it runs under GEMM i + 1). The next compute waits for the last reduce-scatter.
TaskId overlapped_gemm(StepEmitter& e, RankState& r, const model::Op& op, ir::NameId name,
                       ir::Phase phase, int layer, int mb, bool recompute) {
  ir::TaskGraph& g = e.graph();
  TaskNames& names = e.names();
  const int n = r.tp_chunks;
  const bool gather =
      op.tp_before.count == 1 && op.tp_before.type == ir::CollectiveType::all_gather;
  const bool scatter =
      op.tp_after.count == 1 && op.tp_after.type == ir::CollectiveType::reduce_scatter;
  const ir::ComputeOp piece = token_chunk(op.op, ends_with(op.name, ".wgrad"), n);
  const TaskId input = r.last_compute;
  TaskId last = kNoTask, last_scatter = kNoTask;
  for (int i = 0; i < n; ++i) {
    if (gather) {
      const TaskId ag =
          e.collective(r, r.tp_stream, r.tp_group, ir::CollectiveType::all_gather,
                       Bytes{op.tp_before.bytes.count / n},
                       g.label(names.joined(names.joined(name, ".tp_all_gather"), ".chunk", i),
                               phase, layer, mb, recompute));
      e.depends(input, ag);
      e.hold_input(ag);
    }
    last =
        e.compute(r, piece, g.label(names.joined(name, ".chunk", i), phase, layer, mb, recompute));
    if (scatter) {
      last_scatter =
          e.collective(r, r.tp_stream, r.tp_group, ir::CollectiveType::reduce_scatter,
                       Bytes{op.tp_after.bytes.count / n},
                       g.label(names.joined(names.joined(name, ".tp_reduce_scatter"), ".chunk", i),
                               phase, layer, mb, recompute));
      e.depends(last, last_scatter);
    }
  }
  if (last_scatter != kNoTask) e.hold_input(last_scatter);
  if (scatter && op.tp_sums_partials) {
    last = e.compute(r, tp_partials_sum(op, n),
                     g.label(names.joined(name, ".tp_partials_sum"), phase, layer, mb, recompute));
  }
  return last;
}

// A ring step's receive from the previous rank; folded, the receiving end of this rank's own
// send to the next (StepOptions::fold_context_parallel).
TaskId ring_receive(StepEmitter& e, const RankState& r, Bytes bytes, const ir::Label& l,
                    bool held) {
  return r.cp_ring_folded ? e.receive_own_send(r, r.cp_recv, r.cp_next, bytes, l, held)
                          : e.receive(r, r.cp_recv, r.cp_prev, bytes, l, held);
}

}  // namespace

ir::ComputeOp tp_partials_sum(const model::Op& op, int tp) {
  const int64_t whole = op.tp_after.bytes.count;
  ir::ComputeOp sum{.op = ir::OpClass::elementwise};
  sum.bytes = Bytes{whole + whole / tp};
  return sum;
}

TaskId emit_model_op(StepEmitter& e, RankState& r, const model::Op& op, ir::NameId name,
                     ir::Phase phase, int layer, int mb, bool recompute) {
  ir::TaskGraph& g = e.graph();
  TaskNames& names = e.names();
  // Transformer Engine's overlap covers the dense TP layers, not the expert-TP collectives around
  // the grouped expert GEMMs.
  const bool dense_tp = op.tp_before.group == model::OpGroup::tensor_parallel &&
                        op.tp_after.group == model::OpGroup::tensor_parallel;
  const bool overlappable =
      r.tp_chunks > 1 && dense_tp && op.tp_pipelinable && op.op.op == ir::OpClass::gemm &&
      op.ring.passes.count == 0 && !op.ring.waits &&
      ((op.tp_before.count == 1 && op.tp_before.type == ir::CollectiveType::all_gather &&
        op.tp_after.count == 0) ||
       (op.tp_after.count == 1 && op.tp_after.type == ir::CollectiveType::reduce_scatter &&
        op.tp_before.count == 0));
  if (overlappable) return overlapped_gemm(e, r, op, name, phase, layer, mb, recompute);
  auto tp = [&](const model::OpCollective& c) {
    ir::GroupId group = r.tp_group;
    const char* prefix = ".tp_";
    if (c.group == model::OpGroup::expert_parallel) group = r.ep_group, prefix = ".ep_";
    if (c.group == model::OpGroup::expert_tensor_parallel) group = r.etp_group, prefix = ".etp_";
    if (c.group == model::OpGroup::expert_tensor_and_expert_parallel)
      group = r.etp_ep_group, prefix = ".etp_ep_";
    if (c.group == model::OpGroup::context_parallel_a2a) group = r.cp_a2a_group, prefix = ".cp_";
    for (int i = 0; i < c.count; ++i) {
      e.collective(r, kComputeStream, group, c.type, c.bytes,
                   g.label(names.joined(names.joined(name, prefix), ir::to_string(c.type)), phase,
                           layer, mb, recompute));
    }
  };
  tp(op.tp_before);
  // Ring attention: this step computes on the chunk received during the previous step (if any)
  // while passing that chunk on; the first step passes the rank's own K and V, ready once the
  // compute stream got here.
  const TaskId chunk = op.ring.waits ? r.kv_arrived : r.last_compute;
  if (op.ring.waits) {
    e.hold_input(r.kv_arrived);
    r.kv_arrived = kNoTask;
  }
  if (op.ring.passes.count > 0) {
    e.send(r, r.cp_send, r.cp_next, op.ring.passes,
           g.label(names.joined(name, ".cp_send"), phase, layer, mb, recompute), chunk);
    r.kv_arrived =
        ring_receive(e, r, op.ring.passes,
                     g.label(names.joined(name, ".cp_recv"), phase, layer, mb, recompute), false);
  }
  // PyTorch's ring: the all-gather of every rank's K and V, on the CP group's stream once the
  // packed chunk is ready; a blocking one holds this op, else the step that first reads it.
  if (op.ring.gathers.count > 0) {
    const TaskId ag =
        e.collective(r, r.cp_send, r.cp_group, ir::CollectiveType::all_gather, op.ring.gathers,
                     g.label(names.joined(name, ".cp_all_gather"), phase, layer, mb, recompute));
    e.depends(r.last_compute, ag);
    if (op.ring.blocking)
      e.hold_input(ag);
    else
      r.kv_arrived = ag;
  }
  if (op.ring.waits_grad) {
    e.hold_input(r.dkv_arrived);
    r.dkv_arrived = kNoTask;
  }
  const TaskId t = e.compute(r, op.op, g.label(name, phase, layer, mb, recompute));
  // The KV gradient chunk this merge accumulated, sent on to the next rank once it is done.
  if (op.ring.grad_passes.count > 0) {
    e.send(r, r.cp_send, r.cp_next, op.ring.grad_passes,
           g.label(names.joined(name, ".cp_send_grad"), phase, layer, mb, recompute), t);
    const TaskId rx =
        ring_receive(e, r, op.ring.grad_passes,
                     g.label(names.joined(name, ".cp_recv_grad"), phase, layer, mb, recompute),
                     op.ring.blocking);
    if (!op.ring.blocking) r.dkv_arrived = rx;
  }
  tp(op.tp_after);
  return t;
}

}  // namespace cs::strategy
