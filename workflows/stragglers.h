// `clustersim simulate --stragglers`: how much one piece of slow hardware costs a layout. The
// scenario is re-simulated with one GPU, then one node, then one NIC degraded (scenario
// `degraded:`), and each step time is set against the healthy one. Synchronous training runs at
// the pace of its slowest member: every collective waits for the last rank to arrive.
//
// `rank_by_straggler_robustness` orders candidate layouts by their worst case, for `plan` to
// break ties by how little a layout suffers.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "driver/simulation.h"

namespace cs::workflows {

// 0.8: a GPU that cannot hold its boost clock and falls to its base clock (H100 SXM: 1,590 of
// 1,980 MHz = 0.80), as a thermally throttled or power-capped GPU does.
inline constexpr double kSlowGpuFactor = 0.8;
// A node whose cooling or power fails throttles all its GPUs alike.
inline constexpr double kSlowNodeFactor = 0.8;
// 0.5: a port trained down one speed grade (a 400 Gb/s NDR InfiniBand link running at HDR's
// 200 Gb/s over a marginal cable or transceiver).
inline constexpr double kDegradedNicFactor = 0.5;

// The cases analysed: GPU 0 slow, node 0 slow (when the cluster has several nodes: with one, it
// is every GPU, not a straggler), GPU 0's NIC degraded (when its node has one). GPU 0 is simulated
// whatever the rank mode (it is the first stage's representative).
std::vector<scenario::Degradation> straggler_cases(const scenario::Scenario& s);

struct StragglerCase {
  scenario::Degradation degradation;
  SimTime step_time;
  double slowdown = 0;  // step time over the healthy one, less 1
};

struct StragglerReport {
  SimTime healthy;
  std::vector<StragglerCase> cases;
  // The largest slowdown (0 without cases).
  double worst_slowdown() const;
};

// Each case simulated alone on top of the scenario's own degradations (`healthy` is the
// scenario's step as given); `options` as for driver::simulate (baseline and suggestions are off
// for the cases).
StragglerReport analyse_stragglers(const scenario::Scenario& s, SimTime healthy,
                                   const driver::SimulateOptions& options = {});

void print_stragglers(std::ostream& out, const StragglerReport& r);
void write_stragglers_json(std::ostream& out, const StragglerReport& r);

struct LayoutRobustness {
  size_t index = 0;  // into the layouts given
  StragglerReport stragglers;
  std::string error;  // why the layout could not be simulated (then ranked last)
};
// The layouts (scenarios differing in layout, each simulated here healthy and with each straggler
// case) ordered by worst slowdown, least first; equal ones keep their given order, and layouts
// that cannot be simulated come last. For `plan`'s
// top rows: a few simulations per layout, run on `threads` (0: every core).
std::vector<LayoutRobustness> rank_by_straggler_robustness(
    const std::vector<scenario::Scenario>& layouts, unsigned threads = 0);

}  // namespace cs::workflows
