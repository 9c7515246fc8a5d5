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

// Lists of tasks by key, stored flat (compressed rows): at millions of tasks, one small vector
// per task made building them most of a critical path's time.
struct FlatLists {
  std::vector<uint32_t> begin;  // key k's entries: items[begin[k] .. begin[k + 1])
  std::vector<ir::TaskId> items;
  // `add(emit)` calls emit(key, task) for every entry, in the order the lists keep; it runs twice
  // (count, then fill).
  template <typename Add>
  FlatLists(size_t keys, Add add) : begin(keys + 1, 0) {
    add([&](size_t key, ir::TaskId) { ++begin[key + 1]; });
    for (size_t k = 0; k < keys; ++k) begin[k + 1] += begin[k];
    items.resize(begin[keys]);
    std::vector<uint32_t> next(begin.begin(), begin.end() - 1);
    add([&](size_t key, ir::TaskId t) { items[next[key]++] = t; });
  }
  const ir::TaskId* first(size_t key) const { return items.data() + begin[key]; }
  const ir::TaskId* last(size_t key) const { return items.data() + begin[key + 1]; }
};

CriticalPath critical_path(const ir::TaskGraph& g, const Timeline& tl) {
  CriticalPath p;
  if (g.size() == 0) return p;
  const auto n = static_cast<ir::TaskId>(g.size());
  // Predecessors (stream order and explicit dependencies), from the successor lists, in task order.
  const FlatLists preds(g.size(), [&](auto emit) {
    for (ir::TaskId t = 0; t < n; ++t) {
      for (const ir::TaskId* s = g.successors_begin(t); s != g.successors_end(t); ++s) emit(*s, t);
    }
  });
  // The members of each collective and the two ends of each transfer (keys after the
  // collectives'), to follow a wait to the peer that arrived last.
  const size_t collectives = g.collective_count();
  auto peer_key = [&](const ir::Task& task) {
    return task.kind == ir::TaskKind::collective ? size_t{task.payload}
                                                 : collectives + task.payload;
  };
  const FlatLists peers(collectives + g.transfer_count(), [&](auto emit) {
    for (ir::TaskId t = 0; t < n; ++t) {
      const ir::Task& task = g.task(t);
      if (task.kind == ir::TaskKind::collective || task.kind == ir::TaskKind::send ||
          task.kind == ir::TaskKind::recv)
        emit(peer_key(task), t);
    }
  });
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
      const size_t key = peer_key(g.task(t));
      for (const ir::TaskId* q = peers.first(key); q != peers.last(key); ++q) {
        if (tl.tasks[*q].ready > tl.tasks[from].ready) from = *q;
      }
    }
    ir::TaskId best = UINT32_MAX;
    for (const ir::TaskId* q = preds.first(from); q != preds.last(from); ++q) {
      if (best == UINT32_MAX || tl.tasks[*q].end > tl.tasks[best].end) best = *q;
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
