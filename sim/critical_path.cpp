#include "sim/critical_path.h"

#include <vector>

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
  const auto n = static_cast<ir::TaskId>(g.size());
  constexpr ir::TaskId kNone = UINT32_MAX;
  // The walk only ever takes a task's predecessor that ended last (the first such in task order),
  // and a waiting collective's or transfer's member that became ready last (the first such): kept
  // per task and per call, one id each, rather than every list (at 15 million tasks, the lists
  // were 200 MB on top of the graph and its timeline).
  std::vector<ir::TaskId> last_pred(n, kNone);
  for (ir::TaskId t = 0; t < n; ++t) {
    for (const ir::TaskId* s = g.successors_begin(t); s != g.successors_end(t); ++s) {
      ir::TaskId& best = last_pred[*s];
      if (best == kNone || tl.tasks[t].end > tl.tasks[best].end) best = t;
    }
  }
  const size_t collectives = g.collective_count();
  auto peer_key = [&](const ir::Task& task) {
    return task.kind == ir::TaskKind::collective ? size_t{task.payload}
                                                 : collectives + task.payload;
  };
  auto is_comm = [](const ir::Task& task) {
    return task.kind == ir::TaskKind::collective || task.kind == ir::TaskKind::send ||
           task.kind == ir::TaskKind::recv;
  };
  std::vector<ir::TaskId> last_peer(collectives + g.transfer_count(), kNone);
  for (ir::TaskId t = 0; t < n; ++t) {
    const ir::Task& task = g.task(t);
    if (!is_comm(task)) continue;
    ir::TaskId& best = last_peer[peer_key(task)];
    if (best == kNone || tl.tasks[t].ready > tl.tasks[best].ready) best = t;
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
    // A compute task starts once its host has issued it (sim/engine.cpp, issued()).
    if (g.task(t).kind == ir::TaskKind::compute && tt.start > tt.ready)
      p.time[static_cast<size_t>(PathClass::host)] += tt.start - tt.ready;
    // A collective or transfer that waited started when its last peer arrived: continue there.
    ir::TaskId from = t;
    if (tt.start > tt.ready && c == PathClass::communication) {
      const ir::TaskId peer = last_peer[peer_key(g.task(t))];
      if (tl.tasks[peer].ready > tl.tasks[from].ready) from = peer;
    }
    const ir::TaskId best = last_pred[from];
    const SimTime ready = tl.tasks[from].ready;
    if (best == kNone) {
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
