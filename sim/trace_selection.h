// What a trace shows, whatever its format (Chrome JSON, Perfetto protobuf): the ranks and time
// window kept, each task's part in a flow arrow, memory by category over time and the links'
// utilisation by kind. The writers only encode.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "sim/chrome_trace.h"

namespace cs::sim {

// A task's part in a flow arrow: an arrow ends in it, starts from it, or passes through (both).
enum FlowRole : uint8_t { kNoFlow = 0, kFlowIn = 1, kFlowOut = 2 };

using CategoryGiB = std::array<double, ir::kMemoryCategoryCount>;

class TraceSelection {
 public:
  TraceSelection(const ir::TaskGraph& g, const Timeline& tl, const TraceOptions& o);

  bool rank_kept(ir::RankId graph_rank) const { return keep_rank_[graph_rank]; }
  // Not a memory task (memory is the counters), on a kept rank, overlapping the window.
  bool task_kept(ir::TaskId t) const {
    const ir::Task& task = g_.task(t);
    return keep_rank_[task.rank] && task.kind != ir::TaskKind::memory &&
           time_kept(tl_.tasks[t].start, tl_.tasks[t].end);
  }
  int64_t pid(ir::RankId graph_rank) const {
    return static_cast<int64_t>(graph_rank) + o_.pid_offset;
  }

  // Each task's FlowRole bits. A transfer's arrow runs from its send to its receive; a
  // collective's through its kept members in the order they start (then task order: the order a
  // viewer reads them in), so that its first slice begins it. Drawn only when both ends are kept.
  std::vector<uint8_t> flow_roles() const;
  // The arrow a task is on: transfer x's is 2x, collective c's 2c + 1 (one id space for both).
  static uint64_t flow_id(const ir::Task& task) {
    return 2 * uint64_t{task.payload} + (task.kind == ir::TaskKind::collective ? 1 : 0);
  }

  // Memory of each kept rank in GiB by category: with a window, the state at its start first;
  // then `f` after each change inside it, with the category that changed.
  void for_each_memory_state(
      const std::function<void(ir::RankId, SimTime, const CategoryGiB&)>& at_window_start,
      const std::function<void(ir::RankId, SimTime, const CategoryGiB&, int category)>& f) const;

  // Link utilisation: the link kinds that carried traffic (in name order), and `f` at each time
  // the levels change (and at the window's start), with each kind's mean utilisation in percent,
  // rounded to 1e-4 (rounding hides the sums' last-bit noise). Each communication's plan loads
  // are spread evenly over its duration. Nothing without a cost model and links.
  std::vector<std::string_view> link_kinds() const;
  void for_each_link_level(const std::function<void(SimTime, const std::vector<double>&)>& f) const;

 private:
  struct LinkDelta {
    SimTime at;
    uint32_t kind;       // index into link_kinds()
    double utilisation;  // of the kind's links, as a fraction: + at a start, - at an end
  };
  std::vector<LinkDelta> link_deltas(const std::vector<std::string_view>& kinds) const;
  bool time_kept(SimTime start, SimTime end) const {
    return !o_.window || (end >= o_.window->first && start <= o_.window->second);
  }

  const ir::TaskGraph& g_;
  const Timeline& tl_;
  const TraceOptions& o_;
  std::vector<char> keep_rank_;
};

}  // namespace cs::sim
