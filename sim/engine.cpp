#include "sim/engine.h"

#include <queue>
#include <stdexcept>
#include <string>

namespace cs::sim {
namespace {

struct Event {
  SimTime time;
  uint64_t seq;
  ir::TaskId task;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

class Run {
 public:
  Run(const ir::TaskGraph& g, const cost::CostModel& c) : g_(g), costs_(c) {
    const size_t n = g.size();
    pending_.resize(n);
    for (ir::TaskId t = 0; t < n; ++t) pending_[t] = g.predecessor_count(t);
    tl_.tasks.assign(n, TaskTiming{});
    tl_.memory.assign(g.ranks(), RankMemory{});
    arrived_.assign(g.collective_count(), 0);
    waiting_.assign(g.collective_count(), {});
    transfer_waiting_.assign(g.transfer_count(), UINT32_MAX);
  }

  Timeline go() {
    for (ir::TaskId t = 0; t < g_.size(); ++t) {
      if (pending_[t] == 0) make_ready(t, SimTime{});
    }
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      finish(e.task, e.time);
    }
    if (finished_ != g_.size()) {
      for (ir::TaskId t = 0; t < g_.size(); ++t) {
        if (pending_[t] != UINT32_MAX) {
          throw std::logic_error("simulation deadlock: task '" + g_.task_name(t) + "' on rank " +
                                 std::to_string(g_.task(t).rank) + " never started (" +
                                 std::to_string(g_.size() - finished_) + " tasks unfinished)");
        }
      }
      for (ir::TaskId t = 0; t < g_.size(); ++t) {
        if (tl_.tasks[t].end == SimTime{} && g_.task(t).kind != ir::TaskKind::memory) {
          throw std::logic_error("simulation deadlock: '" + g_.task_name(t) + "' on rank " +
                                 std::to_string(g_.task(t).rank) + " waits for peers that never arrive");
        }
      }
    }
    return std::move(tl_);
  }

 private:
  void schedule(ir::TaskId t, SimTime start, SimTime duration) {
    tl_.tasks[t].start = start;
    tl_.tasks[t].end = start + duration;
    events_.push({start + duration, seq_++, t});
  }

  void make_ready(ir::TaskId t, SimTime now) {
    pending_[t] = UINT32_MAX;  // marks "released"
    tl_.tasks[t].ready = now;
    const ir::Task& task = g_.task(t);
    switch (task.kind) {
      case ir::TaskKind::compute: schedule(t, now, costs_.compute(g_.compute(task))); break;
      case ir::TaskKind::delay: schedule(t, now, g_.delay(task)); break;
      case ir::TaskKind::memory: apply_memory(task, now); schedule(t, now, SimTime{}); break;
      case ir::TaskKind::collective: {
        const ir::CollectiveId c = task.payload;
        waiting_[c].push_back(t);
        const auto& call = g_.collective_call(c);
        const auto& members = g_.group_ranks(call.group);
        if (++arrived_[c] == g_.arrivals(c)) {
          const SimTime d = costs_.collective(call, members);
          for (ir::TaskId p : waiting_[c]) schedule(p, now, d);
          waiting_[c].clear();
          waiting_[c].shrink_to_fit();
        }
        break;
      }
      case ir::TaskKind::send:
      case ir::TaskKind::recv: {
        const ir::TransferId x = task.payload;
        if (transfer_waiting_[x] == UINT32_MAX) {
          transfer_waiting_[x] = t;
        } else {
          const SimTime d = costs_.transfer(g_.transfer(task));
          schedule(transfer_waiting_[x], now, d);
          schedule(t, now, d);
        }
        break;
      }
    }
  }

  void finish(ir::TaskId t, SimTime now) {
    ++finished_;
    for (const ir::TaskId* s = g_.successors_begin(t); s != g_.successors_end(t); ++s) {
      if (--pending_[*s] == 0) make_ready(*s, now);
    }
    if (now > tl_.makespan) tl_.makespan = now;
  }

  void apply_memory(const ir::Task& task, SimTime now) {
    const ir::MemoryOp& m = g_.memory(task);
    RankMemory& rm = tl_.memory[task.rank];
    rm.current[static_cast<size_t>(m.category)] += m.delta;
    int64_t total = 0;
    for (int64_t v : rm.current) total += v;
    if (total > rm.peak) {
      rm.peak = total;
      rm.peak_time = now;
      rm.at_peak = rm.current;
    }
    tl_.memory_samples.push_back({now, task.rank, m.category, total, rm.current[static_cast<size_t>(m.category)]});
  }

  const ir::TaskGraph& g_;
  const cost::CostModel& costs_;
  Timeline tl_;
  std::vector<uint32_t> pending_;
  std::vector<uint32_t> arrived_;
  std::vector<std::vector<ir::TaskId>> waiting_;
  std::vector<ir::TaskId> transfer_waiting_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  size_t finished_ = 0;
};

}  // namespace

Engine::Engine(const ir::TaskGraph& graph, const cost::CostModel& costs) : graph_(graph), costs_(costs) {
  if (!graph.finalized()) throw std::logic_error("Engine needs a finalized task graph");
}

Timeline Engine::run() { return Run(graph_, costs_).go(); }

}  // namespace cs::sim
