// `clustersim sweep`: one scenario at several GPU counts (or node counts, global batches,
// sequence lengths, NIC bandwidths): speedup, scaling efficiency, where the step time goes and
// peak memory per point, as a table, a CSV and an SVG chart.
//
// Scaling GPUs keeps TP, CP, PP, EP and the global batch (strong scaling) and changes DP; a point
// whose batch or layout does not divide says why instead of running.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "scenarios/scenario.h"

namespace cs::planner {

enum class SweepAxis : uint8_t { gpus, nodes, global_batch, seq_len, nic_bandwidth };
std::string_view to_string(SweepAxis a);

struct SweepRow {
  std::string value;  // as given ("8", "400Gbps")
  int gpus = 0;
  std::string error;  // why this point could not run (empty when it ran)
  SimTime step_time;
  double tokens_per_second = 0;
  double mfu = 0;
  double speedup = 0;      // throughput over the first point's
  double efficiency = -1;  // speedup / GPU ratio (gpus and nodes axes only; -1 otherwise)
  SimTime compute, exposed_communication, idle;  // rank means
  int64_t peak_memory = 0;
  bool fits = false;
};

struct SweepResult {
  SweepAxis axis = SweepAxis::gpus;
  std::string scenario;
  std::vector<SweepRow> rows;
};

// The scenario at one point of the sweep; throws UserError when it cannot be built.
scenario::Scenario sweep_point(const scenario::Scenario& base, SweepAxis axis,
                               const std::string& value);
// Runs every point (in parallel on `threads`, 0 = every core); results in the given order. A
// value that is not one (not a positive integer, past the GPUs of a cluster, not a bandwidth) is
// a UserError before any point runs; a point that cannot run is a row with its error.
SweepResult run_sweep(const scenario::Scenario& base, SweepAxis axis,
                      const std::vector<std::string>& values, unsigned threads = 0);

void write_sweep_csv(std::ostream& out, const SweepResult& r);
// Two panels: speedup against the swept value (with ideal scaling on the gpus / nodes axes), and
// the step time split into compute, exposed communication and idle per point.
void write_sweep_svg(std::ostream& out, const SweepResult& r);

}  // namespace cs::planner
