// A measured run on disk (`execute --timeline FILE`) and its comparison with the simulator's
// prediction for the same graph (`validate --measured FILE SCENARIO`).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "taskgraph/task_graph.h"
#include "timeline/timeline.h"

namespace cs::validate {

struct MeasuredRun {
  std::string device;
  std::vector<double> step_times_s;
  double median_step_s = 0;
  double fastest_step_s = 0;
  sim::Timeline timeline;  // tasks and per-rank peaks of one measured step (the median one, on cpu)
};

void write_measured(std::ostream& out, const MeasuredRun& m);
// Throws UserError when the file is not a measured run.
MeasuredRun read_measured(const std::string& path);

struct Comparison {
  double predicted_step_s = 0, measured_step_s = 0;
  // measured = the median step (the fastest is printed beside it)
  double step_error_percent = 0;  // (predicted - measured) / measured
  struct Row {
    std::string what;
    double predicted_s = 0, measured_s = 0;
  };
  std::vector<Row> by_class;  // summed task time per op class / collective type
  std::vector<Row> by_phase;  // forward, backward, optimizer, other
  std::vector<Row> worst;     // the 10 tasks with the largest absolute error
  // Per GEMM task, |predicted - measured| / measured: the median over them, and how many.
  double gemm_median_error_percent = 0;
  size_t gemm_tasks = 0;
};
Comparison compare(const ir::TaskGraph& g, const sim::Timeline& predicted,
                   const MeasuredRun& measured);

// Predicted and measured as two process groups of one Chrome trace.
void write_side_by_side_trace(std::ostream& out, const ir::TaskGraph& g,
                              const sim::Timeline& predicted, const sim::Timeline& measured);

}  // namespace cs::validate
