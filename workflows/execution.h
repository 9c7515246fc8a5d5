// `clustersim execute` (start one process per rank and report the measured step),
// `clustersim execute-rank` (what each started process runs; not for people), and the executor
// runs that calibration and the validation loop need.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "validate/calibration.h"
#include "validate/measured.h"

namespace cs::workflows {

// What execute and execute-rank were asked (cli/execute_command.cpp reads the flags into it).
struct ExecuteRequest {
  std::string scenario, backend = "cpu", trace, json, calibration, timeline, launcher = "auto",
                        rendezvous;
  int warmup = 1, steps = 3, rank = -1, calibration_ranks = 2;
  int64_t timeout_ms = 30000;
  std::string dir;
  exec::Faults faults;
};

// `execute`: the scenario's step run on the backend, its measured report printed on `out`; the
// exit status (exec::kExitExecutionFailed, the failure on `err`, when execution fails).
int execute(const ExecuteRequest& p, std::ostream& out, std::ostream& err);

// `execute-rank`: one rank of a cpu run (a scenario, or a calibration suite's graph).
int execute_rank(const ExecuteRequest& p);

// Runs a calibration suite's graph on the cpu backend: every task's start and end, one step.
validate::TaskDurations run_suite(const std::string& suite, const ir::TaskGraph& graph);

// Runs a scenario on the cpu backend (`execute --backend cpu --timeline`, in memory). Throws
// UserError when the execution fails.
validate::MeasuredRun execute_on_cpu(const std::string& scenario_path, int warmup, int steps);

// `calibrate --backend cuda`: the cuda plan's suites on GPU 0 (compute, interference) and, with two
// GPUs or more, the collectives suite over all of them; fitted on the GPU's device preset.
// Progress to `out`; every measurement to `raw` when named. Throws UserError without a GPU.
cost::Profile calibrate_cuda(const std::string& raw, std::ostream& out);

}  // namespace cs::workflows
