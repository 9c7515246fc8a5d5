// What a run (simulated or measured) produced: every task's ready, start and end time, and each
// rank's memory over time. `ready` is when the task could have started on its own (its stream and
// dependencies allowed it); for a collective or transfer, start - ready is the wait for peers.
//
// Its own library (cs_timeline, header-only) because both the engine (sim/) and the executor
// write it: the executor links this and the task graph, not the engine, its network model or
// Boost. The types keep the namespace cs::sim they were born in.
#pragma once

#include <array>
#include <vector>

#include "common/units.h"
#include "taskgraph/task_graph.h"

namespace cs::sim {

struct TaskTiming {
  SimTime ready, start, end;
};

struct MemorySample {
  SimTime time;
  ir::RankId rank;
  ir::MemoryCategory category;  // the category that changed
  int64_t bytes;                // total allocated on the rank after the change
  int64_t category_bytes;       // the category's total after the change
};

struct RankMemory {
  int64_t peak = 0;
  SimTime peak_time;
  std::array<int64_t, ir::kMemoryCategoryCount> at_peak{};  // breakdown when the peak was reached
  std::array<int64_t, ir::kMemoryCategoryCount> current{};
};

// What the network carried, per directed topology link (empty when the cost model has no
// topology, and for measured timelines). busy_seconds is the time the link's capacity was in use:
// payload plus protocol flags, at full capacity.
struct LinkUsage {
  std::vector<double> bytes;
  std::vector<double> busy_seconds;
};

struct Timeline {
  std::vector<TaskTiming> tasks;   // indexed by TaskId
  std::vector<RankMemory> memory;  // indexed by rank
  std::vector<MemorySample> memory_samples;
  LinkUsage links;
  SimTime makespan;
};

}  // namespace cs::sim
