// The interface the simulator asks for durations. It knows nothing of strategies, YAML or NCCL's
// algorithms and protocols (a collective's cost carries its link plan only, link_plan.h); an
// implementation combines a compute model and a collective model over a topology. This header
// and link_plan.h are all of cost_models/ that sim/ may reach (tests/layers_test.cpp).
#pragma once

#include <string_view>
#include <vector>

#include "common/units.h"
#include "cost_models/link_plan.h"
#include "taskgraph/task_graph.h"

namespace cs::cost {

// What a collective or transfer costs: its duration alone on the network and, when the model
// knows the topology, the plan of link loads behind it (for the flow-level engine and for link
// utilisation). `plan` is owned by the cost model and outlives the simulation.
struct CommCost {
  SimTime time;
  const LinkPlan* plan = nullptr;
};

// How the simulator treats the network (sim/engine.h): each collective alone at its closed-form
// time, or flows sharing links max-min fairly.
enum class NetworkFidelity : uint8_t { analytic, flow };
inline std::string_view to_string(NetworkFidelity f) {
  return f == NetworkFidelity::flow ? "flow" : "analytic";
}

// How one rank's compute and communication slow each other when they overlap: they share the
// device (SMs and memory bandwidth on a GPU, the cores on a CPU). A compute task runs at
// 1 / (1 + compute_slowdown) of its speed while a collective or transfer of its rank is in flight;
// a collective or transfer runs at 1 / (1 + comm_slowdown) of its speed while one of its ranks
// computes. Measured by `clustersim calibrate`; zero (no interference) without a profile. At the
// flow level only compute slows: flows share links max-min and are not re-timed.
struct Interference {
  double compute_slowdown = 0;
  double comm_slowdown = 0;
  bool any() const { return compute_slowdown > 0 || comm_slowdown > 0; }
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual SimTime compute(const ir::ComputeOp& op) const = 0;
  // `ranks` are the members of the collective's group, in ring order.
  virtual CommCost collective(const ir::CollectiveCall& call,
                              const std::vector<ir::RankId>& ranks) const = 0;
  virtual CommCost transfer(const ir::Transfer& t) const = 0;
  virtual Interference interference() const { return {}; }
  // Host (CPU) time to issue a compute op's kernels: a software stack's dispatch overhead. The
  // GPU cannot start a kernel before its host has issued it, so small kernels become host-bound.
  virtual SimTime host_time(const ir::ComputeOp& /*op*/) const { return {}; }
  // The links plans refer to and their usable capacity in bytes/s (none without a topology).
  virtual size_t link_count() const { return 0; }
  virtual double link_capacity(uint32_t /*link*/) const { return 0; }
};

}  // namespace cs::cost
