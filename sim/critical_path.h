// Where a step's time goes along its critical path: walking back from the task that ends last,
// through whichever predecessor ended last (for a collective or transfer that waited, through the
// peer that arrived last), summing durations by kind. The parts add up to the step time.
#pragma once

#include <array>

#include "taskgraph/task_graph.h"
#include "timeline/timeline.h"

namespace cs::sim {

// `host`: a compute task ready on the GPU but waiting for its host to issue its kernels (eager
// PyTorch's dispatch, models/software_stack.h), the time between its ready and its start.
enum class PathClass : uint8_t { gemm, attention, memory_bound, communication, idle, host };
inline constexpr int kPathClassCount = 6;

struct CriticalPath {
  std::array<SimTime, kPathClassCount> time{};   // by PathClass
  std::array<int64_t, kPathClassCount> tasks{};  // tasks of each class on the path
  SimTime total() const {
    SimTime t;
    for (SimTime x : time) t += x;
    return t;
  }
};

CriticalPath critical_path(const ir::TaskGraph& g, const Timeline& tl);

}  // namespace cs::sim
