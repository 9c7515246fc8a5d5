// `clustersim execute` (start one process per rank and report the measured step) and
// `clustersim execute-rank` (what each started process runs; not for people).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "validate/calibration.h"
#include "validate/measured.h"

namespace cs::cli {

// Runs a calibration suite's graph on the cpu backend: every task's start and end, one step.
validate::TaskDurations run_suite(const std::string& suite, const ir::TaskGraph& graph);

// Runs a scenario on the cpu backend (`execute --backend cpu --timeline`, in memory). Throws
// UserError when the execution fails.
validate::MeasuredRun execute_on_cpu(const std::string& scenario_path, int warmup, int steps);

// `calibrate --backend cuda`: the cuda plan's suites on GPU 0 (compute, interference) and, with two
// GPUs or more, the collectives suite over all of them; fitted on the GPU's device preset.
// Progress to `out`; every measurement to `raw` when named. Throws UserError without a GPU.
cost::Profile calibrate_cuda(const std::string& raw, std::ostream& out);

}  // namespace cs::cli
