// Discrete-event scheduler of a TaskGraph over a CostModel.
//
// Clock: integer picoseconds. Events run in time order and, at equal times, in the order they
// were scheduled, so the same input always gives the same Timeline.
// Semantics: in-order streams; explicit dependencies; a compute task starts no earlier than its
// rank's host has issued it (CostModel::host_time, summed in program order from the step's
// start); a collective starts when every member of its group has arrived (early arrivals wait,
// visible as start - ready); a send/recv pair starts when both sides have arrived; memory tasks
// take no time and move the rank's counters.
// Network fidelity: `analytic` gives each collective and transfer its closed-form time alone on
// the network; `flow` runs their plans' phases as flows that share links max-min fairly
// (flow_network.h), then adds the plan's latency. Both record every link's payload and busy time
// (the simulated ranks' traffic only). With representative ranks at the flow level, `replicas`
// names the symmetry that maps representatives onto the ranks they stand for, and each flow
// carries its unsimulated copies' load on shared links (ReplicaFolding).
// Interference (a profile's cost::Interference): a rank's compute runs slower while it
// communicates and its collectives run slower while it computes; both are re-timed at every
// change, as rates over remaining work.
// The engine is an object: create it, run it, throw it away. No global state.
#pragma once

#include "cost_models/cost_model.h"
#include "sim/flow_network.h"
#include "taskgraph/task_graph.h"
#include "timeline/timeline.h"

namespace cs::sim {

using cost::NetworkFidelity;

class Engine {
 public:
  // `memory_samples`: record every allocation in Timeline::memory_samples (for traces); peaks
  // and breakdowns are kept either way.
  // `replicas`: used only at the flow level with a representative graph (empty: no folding).
  Engine(const ir::TaskGraph& graph, const cost::CostModel& costs,
         NetworkFidelity fidelity = NetworkFidelity::analytic, bool memory_samples = true,
         RankSymmetry replicas = {});
  // Runs to completion. Throws std::logic_error if tasks remain that can never start (a
  // dependency cycle or a collective whose members wait on each other in different orders).
  Timeline run();
  // A slower GPU (a straggler, a throttled or degraded device): graph rank r's compute tasks take
  // 1 / rates[r] of their cost-model time (rates in (0, 1]; empty: every rank at full speed).
  // Per rank because the cost model prices an op once for every rank that runs it.
  Engine& with_compute_rates(std::vector<double> rates);

 private:
  const ir::TaskGraph& graph_;
  const cost::CostModel& costs_;
  NetworkFidelity fidelity_;
  bool memory_samples_;
  RankSymmetry replicas_;
  std::vector<double> compute_rates_;
};

}  // namespace cs::sim
