// Discrete-event scheduler of a TaskGraph over a CostModel.
//
// Clock: integer picoseconds. Events are ordered by (time, sequence number), so equal-time events
// run in the order they were scheduled and the same input always gives the same Timeline.
// Semantics: in-order streams; explicit dependencies; a collective starts when every member of
// its group has arrived (early arrivals wait, visible as start - ready); a send/recv pair starts
// when both sides have arrived; memory tasks take no time and move the rank's counters.
// The engine is an object: create it, run it, throw it away. No global state.
#pragma once

#include "cost_models/cost_model.h"
#include "sim/timeline.h"
#include "taskgraph/task_graph.h"

namespace cs::sim {

class Engine {
 public:
  Engine(const ir::TaskGraph& graph, const cost::CostModel& costs);
  // Runs to completion. Throws std::logic_error if tasks remain that can never start (a
  // dependency cycle or a collective whose members wait on each other in different orders).
  Timeline run();

 private:
  const ir::TaskGraph& graph_;
  const cost::CostModel& costs_;
};

}  // namespace cs::sim
