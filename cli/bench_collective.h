// `clustersim bench-collective`: nccl-tests-style tables (size, time, algbw, busbw) of one
// collective over a group of GPUs on a cluster, at both network fidelity levels, so predictions
// can be laid beside real nccl-tests output.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cost_models/analytic_cost_model.h"

namespace cs::cli {

// Parses the command's arguments and prints the table; throws UserError on bad input.
int bench_collective_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace cs::cli
