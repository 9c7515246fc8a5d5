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
