#include "sim/critical_path.h"

#include <unordered_map>

namespace cs::sim {
namespace {

PathClass class_of(const ir::TaskGraph& g, ir::TaskId t) {
  const ir::Task& task = g.task(t);
  switch (task.kind) {
    case ir::TaskKind::compute: {
      const auto op = g.compute(task).op;
      if (op == ir::OpClass::gemm) return PathClass::gemm;
      if (op == ir::OpClass::attention) return PathClass::attention;
      return PathClass::memory_bound;
    }
    case ir::TaskKind::collective:
    case ir::TaskKind::send:
    case ir::TaskKind::recv:
      return PathClass::communication;
    default:
      return PathClass::idle;
  }
}

}  // namespace

CriticalPath critical_path(const ir::TaskGraph& g, const Timeline& tl) {
  CriticalPath p;
  if (g.size() == 0) return p;
  // Predecessors (stream order and explicit dependencies), from the successor lists.
  std::vector<std::vector<ir::TaskId>> preds(g.size());
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    for (const ir::TaskId* s = g.successors_begin(t); s != g.successors_end(t); ++s)
      preds[*s].push_back(t);
  }
  // The members of each collective and the two ends of each transfer, to follow a wait to the
  // peer that arrived last.
  std::unordered_map<uint64_t, std::vector<ir::TaskId>> peers;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const ir::Task& task = g.task(t);
    if (task.kind == ir::TaskKind::collective) peers[task.payload].push_back(t);
    if (task.kind == ir::TaskKind::send || task.kind == ir::TaskKind::recv)
      peers[(uint64_t{1} << 40) | task.payload].push_back(t);
  }
  ir::TaskId t = 0;
  for (ir::TaskId u = 1; u < g.size(); ++u) {
    if (tl.tasks[u].end > tl.tasks[t].end) t = u;
  }
  for (;;) {
    const TaskTiming& tt = tl.tasks[t];
    const PathClass c = class_of(g, t);
    p.time[static_cast<size_t>(c)] += tt.end - tt.start;
    p.tasks[static_cast<size_t>(c)] += c == PathClass::idle ? 0 : 1;
    // A collective or transfer that waited started when its last peer arrived: continue there.
    ir::TaskId from = t;
    if (tt.start > tt.ready && c == PathClass::communication) {
      const ir::Task& task = g.task(t);
      const uint64_t key = task.kind == ir::TaskKind::collective
                               ? task.payload
                               : ((uint64_t{1} << 40) | task.payload);
      for (ir::TaskId q : peers[key]) {
        if (tl.tasks[q].ready > tl.tasks[from].ready) from = q;
      }
    }
    ir::TaskId best = UINT32_MAX;
    for (ir::TaskId q : preds[from]) {
      if (best == UINT32_MAX || tl.tasks[q].end > tl.tasks[best].end) best = q;
    }
    const SimTime ready = tl.tasks[from].ready;
    if (best == UINT32_MAX) {
      p.time[static_cast<size_t>(PathClass::idle)] += ready;
      break;
    }
    if (ready > tl.tasks[best].end)
      p.time[static_cast<size_t>(PathClass::idle)] += ready - tl.tasks[best].end;
    t = best;
  }
  return p;
}

}  // namespace cs::sim
