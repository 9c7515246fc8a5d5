// Flow-level network: flows that share links max-min fairly, started and finished as events.
//
// A flow is one phase of a CommPlan: `work` units to move, loading each of its links with
// rate x weight. Rates are the weighted max-min fair allocation (progressive filling): all
// unfrozen flows grow at the same rate until some link is full; the flows on it freeze; repeat.
// A ring is one flow over all its hops, so its hops advance in lock step at the pace of its most
// contended link, as a ring's steps do. Rates are recomputed whenever a flow starts or finishes.
// Clock: integer picoseconds; a flow's finish time is rounded up to the next picosecond.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "common/units.h"
#include "cost_models/comm_plan.h"

namespace cs::sim {

class FlowNetwork {
 public:
  using FlowId = uint32_t;
  static constexpr SimTime kNever{std::numeric_limits<int64_t>::max()};

  // capacities[link] in bytes/s; links referenced by loads must be in range.
  explicit FlowNetwork(std::vector<double> capacities);

  // `loads` must outlive the flow (they live in the cost model's plan cache).
  FlowId start(SimTime now, double work, const std::vector<cost::LinkLoad>& loads);
  bool idle() const { return active_.empty(); }
  SimTime next_completion() const { return next_; }
  // Moves the clock to `t` (no later than next_completion()) and returns the flows that finish
  // at `t`, in the order they were started.
  std::vector<FlowId> advance(SimTime t);
  double rate(FlowId f) const { return flows_.at(f).rate; }

 private:
  struct Flow {
    double remaining = 0;
    double rate = 0;
    SimTime finish = kNever;
    const std::vector<cost::LinkLoad>* loads = nullptr;
  };
  void progress(SimTime t);
  void reallocate();

  std::vector<double> capacity_;
  std::vector<Flow> flows_;
  std::vector<FlowId> active_;
  SimTime now_;
  SimTime next_ = kNever;
  // Scratch for reallocate(), sized to the link count.
  std::vector<double> residual_, weight_;
  std::vector<char> full_;
};

}  // namespace cs::sim
