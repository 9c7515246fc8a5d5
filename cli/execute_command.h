// `clustersim execute` (start one process per rank and report the measured step) and
// `clustersim execute-rank` (what each started process runs; not for people).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace cs::cli {

int execute_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int execute_rank_command(const std::vector<std::string>& args);

}  // namespace cs::cli

#include "validate/calibration.h"

namespace cs::cli {

// Runs a calibration suite's graph ("compute": 1 rank, "collectives": 2 ranks) on the cpu backend.
validate::TaskDurations run_suite(const std::string& suite, const ir::TaskGraph& graph);

}  // namespace cs::cli
