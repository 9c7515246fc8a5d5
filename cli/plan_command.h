// `clustersim plan` and `clustersim sweep`: argument parsing and printing around planner/.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace cs::cli {

// Both return the process exit status (plan: 1 when no layout fits) and throw UserError on bad
// input.
int plan_command(const std::vector<std::string>& args, std::ostream& out);
int sweep_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace cs::cli
